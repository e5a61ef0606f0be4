"""backend=ray with RAY_ADDRESS set (as on cluster nodes): the default ray.address=local runs on a private local
instance, writes every row and says where it ran (it used to crash: num_cpus passed while joining the cluster)."""

from __future__ import annotations

import json

import pytest

from tandem.evaluation.runner import evaluate
from tandem.evaluation.suite import Suite, Variant

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_ray_address_in_the_environment_does_not_hijack_a_local_run(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # a cluster that does not exist
    suite = Suite.from_config({"name": "t", "seeds": 2, "tasks": ["stack_three"]})
    fake = Variant.from_config("fake", {"builder": "eval_fakes:build_fake_stack", "executor": {"name": "fake"}})
    out = evaluate(suite, [fake], tmp_path, backend="ray", workers=1, progress=False, validate=False,
                   ray_address="local")
    assert len(out.results) == 2 and out.results["success"].all() and set(out.results["backend"]) == {"ray"}
    assert out.ran_on.startswith("a new local Ray instance with 1 CPU(s) (RAY_ADDRESS=127.0.0.1:1 is not used")
    assert json.loads((tmp_path / "suite.json").read_text())["ran_on"] == out.ran_on
