"""An evaluation refuses to run an executor checkpoint on the seeds of its own demonstrations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tandem.core.errors import ConfigError
from tandem.evaluation.held_out import _ranges, training_seed_overlap, training_seeds
from tandem.evaluation.runner import evaluate
from tandem.evaluation.suite import Suite, Variant, expand_suite

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "stack_three_diffusion"


def _checkpoint(tmp_path: Path, seeds: dict[str, list[int]] | None) -> Path:
    """A copy of the shipped stack_three track checkpoint whose config records ``seeds`` (None: none recorded)."""
    ck = tmp_path / "ck"
    shutil.copytree(SHIPPED, ck)
    raw = json.loads((ck / "config.json").read_text())
    raw["extra"]["dataset"].pop("seeds", None)
    if seeds is not None:
        raw["extra"]["dataset"]["seeds"] = seeds
    (ck / "config.json").write_text(json.dumps(raw))
    return ck


def _variant(ck: Path) -> Variant:
    return Variant.from_config("learned", {"executor": {"name": "diffusion", "checkpoint": str(ck)}})


def test_ranges_are_compact():
    assert _ranges([3, 4, 5, 9, 11, 12]) == "3-5, 9, 11-12"
    assert _ranges([7]) == "7"


def test_the_shipped_checkpoints_record_their_training_seeds_and_the_test_seeds_are_held_out():
    seeds = training_seeds(SHIPPED)["stack_three"]
    assert len(seeds) == 280 and min(seeds) == 0
    assert not seeds & set(range(1000, 1050))  # the README's held-out seeds


def test_a_suite_on_training_seeds_is_refused_before_any_episode(tmp_path):
    ck = _checkpoint(tmp_path, {"stack_three": [0, 1, 2, 3, 7]})
    suite = Suite.from_config({"name": "t", "seeds": 5, "seed_start": 0, "tasks": ["stack_three"]})
    with pytest.raises(ConfigError, match=r"trained on stack_three seeds 0-3\b.*allow_training_seeds=true"):
        evaluate(suite, [_variant(ck)], tmp_path / "out", backend="inline", progress=False)
    assert not (tmp_path / "out" / "episodes.jsonl").exists()


def test_held_out_seeds_other_tasks_and_unrecorded_checkpoints_pass(tmp_path):
    ck = _checkpoint(tmp_path, {"stack_three": [0, 1, 2], "pick_place_bins": [1000]})
    held_out = Suite.from_config({"name": "t", "seeds": 3, "seed_start": 1000, "tasks": ["stack_three"]})
    assert training_seed_overlap(expand_suite(held_out, [_variant(ck)])) == {}
    bare = _checkpoint(tmp_path / "bare", None)
    on_training = Suite.from_config({"name": "t", "seeds": 3, "seed_start": 0, "tasks": ["stack_three"]})
    assert training_seed_overlap(expand_suite(on_training, [_variant(bare)])) == {}
    assert training_seed_overlap(expand_suite(on_training, [_variant(ck)])) == {(str(ck), "stack_three"): [0, 1, 2]}
    oracle = Variant.from_config("oracle", {})  # the scripted executor has no checkpoint
    assert training_seed_overlap(expand_suite(on_training, [oracle])) == {}
