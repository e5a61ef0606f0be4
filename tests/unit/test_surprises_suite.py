"""``suite=surprises`` composes, lists each task's surprises, and draws one per (task, seed) deterministically."""

from __future__ import annotations

import pytest

from tandem.cli.common import compose_config, load_config
from tandem.core.errors import ConfigError, UnknownNameError
from tandem.evaluation.config import EvalConfig
from tandem.evaluation.suite import PerturbSetting, Suite, Variant, expand_suite

SURPRISES = {
    "stack_three": ("vanish", "knock_at_release", "appearance_shift", "move_hidden"),
    "pick_place_bins": ("vanish", "appearance_shift", "move_hidden", "drop_after_grasp"),
    "nut_assembly": ("vanish", "appearance_shift", "drop_after_grasp"),
}


def _suite(overrides: tuple[str, ...] = ()) -> Suite:
    cfg = load_config(EvalConfig, compose_config("eval", ["suite=surprises", *overrides]))
    return Suite.from_config(cfg.suite)


def test_the_surprises_suite_composes_and_lists_each_tasks_surprises():
    suite = _suite(("suite.seeds=1", "suite.seed_start=700"))
    suite.validate()  # every listed surprise is one its task supports
    assert suite.name == "surprises" and suite.seeds == (700,)
    assert {t.name: t.perturb.names for t in suite.tasks} == SURPRISES


def test_each_episode_draws_one_surprise_deterministically_and_rows_group_by_it():
    suite = _suite(("suite.seeds=40", "suite.seed_start=500"))
    jobs = expand_suite(suite, [Variant.from_config("oracle", {})])
    again = expand_suite(suite, [Variant.from_config("oracle", {})])
    assert [(j.key, j.perturb) for j in jobs] == [(j.key, j.perturb) for j in again]
    for task, names in SURPRISES.items():
        drawn = {j.perturb["name"] for j in jobs if j.task == task}
        assert drawn == set(names)  # 40 seeds draw every one of the task's surprises
    for j in jobs:
        assert j.setting == j.perturb["name"] and j.build["perturb"] == j.perturb
        assert j.key.startswith(f"oracle/{j.task}/{j.perturb['name']}@s{j.perturb['after_success']}/")
    assert {j.perturb["after_success"] for j in jobs if j.perturb["name"] == "knock_at_release"} == {1, 2}


def test_one_of_is_checked():
    with pytest.raises(ConfigError, match="non-empty"):
        PerturbSetting.from_config({"one_of": []})
    with pytest.raises(ConfigError, match="by name"):
        PerturbSetting.from_config({"one_of": ["none", "vanish"]})
    suite = Suite.from_config({"name": "x", "seeds": 1, "tasks": [
        {"name": "nut_assembly", "perturb": {"one_of": ["vanish", "knock_at_release"]}}]})
    with pytest.raises(UnknownNameError, match="knock_at_release.*nut_assembly"):
        suite.validate()
