"""The smoke suite on the local process pool and on a local Ray instance gives identical rows; crashes are rows.

The Ray instance is started by the module fixture (2 CPUs, no dashboard) and shared by the tests here.
"""

from __future__ import annotations

import os
import sys

import pandas as pd
import pytest

from tandem.core.errors import BuildError
from tandem.evaluation.runner import evaluate
from tandem.evaluation.statistics import deterministic_view
from tandem.evaluation.suite import Suite, Variant
from tandem.runtime.config import to_dict
from tandem.runtime.environment import runtime_env

FAKE = {"builder": "eval_fakes:build_fake_stack",
        "executor": {"name": "fake", "fail_seeds": [1], "unstable_seeds": [2], "exit_seeds": [3]}}
BROKEN = {"builder": "eval_fakes:build_broken_stack"}


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray")
    env_vars = {**runtime_env(), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env_vars})
    yield ray
    ray.shutdown()


def _smoke_config():
    from tandem.cli.common import compose_config

    return to_dict(compose_config("eval", ["suite=smoke"]))


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.integration
def test_smoke_suite_local_and_ray_rows_are_identical(tmp_path, ray_instance):
    c = _smoke_config()
    suite = Suite.from_config(c["suite"])
    variants = [Variant.from_config(n, c["variants"][n]) for n in c["run_variants"]]
    kw = {"env": c["env"], "agent": c["agent"], "workers": 2, "progress": False}
    local = evaluate(suite, variants, tmp_path / "local", backend="local", **kw)
    on_ray = evaluate(suite, variants, tmp_path / "ray", backend="ray", **kw)
    assert len(local.results) == 6 and set(local.results["task"]) == {"stack_three", "pick_place_bins",
                                                                         "nut_assembly"}
    assert set(local.results["backend"]) == {"local"} and set(on_ray.results["backend"]) == {"ray"}
    pd.testing.assert_frame_equal(deterministic_view(local.results), deterministic_view(on_ray.results))
    # the oracle stack solves stack_three (the privileged expert is 200/200 on Stack in FIELD-NOTES)
    assert local.results[local.results["task"] == "stack_three"]["success"].all()
    assert (tmp_path / "local" / "results.parquet").exists() and (tmp_path / "ray" / "metrics.json").exists()


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["local", "ray"])
def test_crashing_episodes_are_recorded_and_a_broken_variant_stops_the_run(tmp_path, backend, request):
    if backend == "ray":
        request.getfixturevalue("ray_instance")
    suite = Suite.from_config({"name": "fake", "seeds": 5, "tasks": ["toy"]})
    variants = [Variant.from_config("fake", FAKE)]
    out = evaluate(suite, variants, tmp_path, backend=backend, workers=2, validate=False, progress=False)
    df = out.results.set_index("key")
    assert len(df) == 5
    kind = df["failure_kind"].to_dict()
    assert kind["fake/toy/none/seed0000"] is None and kind["fake/toy/none/seed0004"] is None
    assert kind["fake/toy/none/seed0001"] == "gave_up"
    assert kind["fake/toy/none/seed0002"] == "sim_unstable"
    assert kind["fake/toy/none/seed0003"] == "worker_crash"  # os._exit in the worker
    assert "died" in df.loc["fake/toy/none/seed0003", "failure"]
    # a variant that cannot be built stops the run with a BuildError and records nothing
    with pytest.raises(BuildError, match="checkpoint is corrupt"):
        evaluate(suite, [Variant.from_config("broken", BROKEN)], tmp_path / "broken", backend=backend, workers=2,
                 validate=False, progress=False)
    part = tmp_path / "broken" / "episodes.jsonl"
    assert not part.exists() or not part.read_text()
