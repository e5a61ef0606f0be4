"""Resume bookkeeping of the evaluation harness, with fake stacks run in this process (inline backend)."""

from __future__ import annotations

import json

import pytest

from tandem.core.errors import ConfigError
from tandem.evaluation.runner import evaluate
from tandem.evaluation.store import PART_FILE, ResultStore
from tandem.evaluation.suite import Suite, Variant, expand_suite

FAKE = {"builder": "eval_fakes:build_fake_stack", "executor": {"name": "fake", "fail_seeds": [1],
                                                                "unstable_seeds": [2]}}


def _suite(n=4):
    return Suite.from_config({"name": "fake", "seeds": n, "tasks": ["toy"]})


def test_inline_run_records_every_outcome(tmp_path):
    out = evaluate(_suite(), [Variant.from_config("fake", FAKE)], tmp_path, backend="inline", validate=False,
                   progress=False)
    df = out.results.set_index("key")
    assert out.n_run == 4 and out.n_skipped == 0
    assert df.loc["fake/toy/none/seed0000", "success"]
    assert df.loc["fake/toy/none/seed0001", "failure_kind"] == "gave_up"
    assert df.loc["fake/toy/none/seed0001", "progress"] == 0.75
    assert df.loc["fake/toy/none/seed0002", "failure_kind"] == "sim_unstable"
    assert (tmp_path / "results.parquet").exists() and (tmp_path / "metrics.json").exists()
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["groups"][0]["success"]["successes"] == 2  # seeds 0 and 3


def test_rerun_skips_recorded_rows_and_tolerates_a_torn_line(tmp_path):
    v = [Variant.from_config("fake", FAKE)]
    first = evaluate(_suite(2), v, tmp_path, backend="inline", validate=False, progress=False)
    assert first.n_run == 2
    with (tmp_path / PART_FILE).open("a") as f:  # a run killed in the middle of writing a row
        f.write('{"key": "fake/toy/none/seed0002", "succ')
    second = evaluate(_suite(4), v, tmp_path, backend="inline", validate=False, progress=False)
    assert second.n_skipped == 2 and second.n_run == 2
    assert len(second.results) == 4 and second.results["key"].is_unique
    lines = (tmp_path / PART_FILE).read_text().splitlines()
    assert len(lines) == 5 and sum(1 for ln in lines if ln.endswith("}")) == 4
    third = evaluate(_suite(4), v, tmp_path, backend="inline", validate=False, progress=False)
    assert third.n_run == 0 and third.n_skipped == 4


def test_resume_refuses_rows_from_another_configuration(tmp_path):
    evaluate(_suite(2), [Variant.from_config("fake", FAKE)], tmp_path, backend="inline", validate=False,
             progress=False)
    changed = Variant.from_config("fake", {**FAKE, "agent": {"max_plans": 7}})
    with pytest.raises(ConfigError, match="different configuration"):
        evaluate(_suite(2), [changed], tmp_path, backend="inline", validate=False, progress=False)
    fresh = evaluate(_suite(2), [changed], tmp_path, backend="inline", validate=False, progress=False, resume=False)
    assert fresh.n_run == 2 and list(tmp_path.glob(f"{PART_FILE}.*.old"))


def test_retry_errors_reruns_only_infrastructure_failures(tmp_path):
    suite = _suite(2)
    jobs = expand_suite(suite, [Variant.from_config("fake", FAKE)])
    store = ResultStore(tmp_path)
    from tandem.evaluation.rows import failed_row

    store.append(failed_row(jobs[0], "worker_crash", "died"))
    store.append(failed_row(jobs[1], "gave_up", "gave up: x"))
    todo, done = store.plan_resume(jobs, retry_errors=False)
    assert todo == [] and done == 2
    todo, done = store.plan_resume(jobs, retry_errors=True)
    assert [j.key for j in todo] == [jobs[0].key] and done == 1


def test_unknown_backend_is_a_clear_error(tmp_path):
    from tandem.core.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown backend 'slurm'"):
        evaluate(_suite(1), [Variant.from_config("fake", FAKE)], tmp_path, backend="slurm", validate=False)


def test_ray_runs_where_the_config_says_whatever_ray_address_is(monkeypatch):
    """On cluster nodes RAY_ADDRESS is set: ray.address=local still starts a private instance (num_cpus is only
    given then), and connecting to a cluster never passes num_cpus (the crash of issue 13, item 8)."""
    from tandem.evaluation.backends import ray_init_kwargs

    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    kw, where = ray_init_kwargs("local", 2)
    assert kw["address"] == "local" and kw["num_cpus"] == 2
    assert where == ("a new local Ray instance with 2 CPU(s) (RAY_ADDRESS=10.0.0.5:6379 is not used: "
                     "ray.address=local; ray.address=auto would join it)")
    assert ray_init_kwargs(None, 1)[0]["address"] == "local"
    kw, where = ray_init_kwargs("auto", 2)
    assert kw["address"] == "auto" and "num_cpus" not in kw
    assert where == "the Ray cluster at auto (RAY_ADDRESS=10.0.0.5:6379)"
    kw, where = ray_init_kwargs("ray://head:10001", 4)
    assert kw["address"] == "ray://head:10001" and "num_cpus" not in kw and where == "the Ray cluster at ray://head:10001"
    env_vars = kw["runtime_env"]["env_vars"]
    assert env_vars["MUJOCO_GL"] and env_vars["HF_HUB_OFFLINE"] == "1" and "PYTHONPATH" in env_vars


def test_a_variant_with_a_bad_override_is_refused_before_any_episode(tmp_path):
    """A variant's env/agent overrides are checked with its stack before the run, not found as build_error rows."""
    suite = Suite.from_config({"name": "t", "seeds": 1, "tasks": ["stack_three"]})
    bad = Variant.from_config("bad", {"agent": {"subgoal_step_budget": 0}})
    with pytest.raises(ConfigError, match="variants.bad.agent.subgoal_step_budget must be >= 1 or null"):
        evaluate(suite, [bad], tmp_path, backend="inline", progress=False)
    assert not (tmp_path / "episodes.jsonl").exists()
