"""Evaluation harness maths and bookkeeping: Wilson and ratio intervals, rows, metrics, suite expansion."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tandem.core.errors import ConfigError, UnknownNameError
from tandem.evaluation.rows import classify_failure, failed_row, row_from_result, skill_results
from tandem.evaluation.statistics import compute_metrics, ratio_interval, wilson_interval
from tandem.evaluation.store import rows_to_frame
from tandem.evaluation.suite import PerturbSetting, Suite, Variant, expand_suite


def test_wilson_interval_matches_reference_values():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(10, 10)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(0.7225, abs=1e-4)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_wilson_interval_narrows_with_n():
    w = [wilson_interval(int(0.8 * n), n) for n in (10, 50, 500)]
    widths = [hi - lo for lo, hi in w]
    assert widths[0] > widths[1] > widths[2]
    assert all(lo < 0.8 < hi for lo, hi in w)


def test_ratio_interval_katz():
    r, lo, hi = ratio_interval(40, 50, 10, 50)
    assert r == pytest.approx(4.0)
    # Katz: se = sqrt(1/40 - 1/50 + 1/10 - 1/50) = sqrt(0.085)
    se = math.sqrt(0.085)
    assert lo == pytest.approx(4.0 * math.exp(-1.959964 * se), rel=1e-6)
    assert hi == pytest.approx(4.0 * math.exp(1.959964 * se), rel=1e-6)
    r, lo, hi = ratio_interval(5, 10, 0, 10)  # zero cell: continuity-corrected interval stays finite
    assert r == math.inf and 0.0 < lo < 11.0 < hi < math.inf  # 11 = (5.5/10.5)/(0.5/10.5)
    with pytest.raises(ValueError):
        ratio_interval(1, 0, 1, 1)


@pytest.mark.parametrize("failure,kind", [
    ("SimUnstableError: qpos NaN", "sim_unstable"),
    ("NonFiniteActionError: executor returned nan", "nan_action"),
    ("crash: RuntimeError: boom", "crash"),
    ("gave up: pick(red) failed 3 times", "gave_up"),
    ("env step limit reached", "step_cap"),
    ("rollout step cap 800 reached", "step_cap"),
    ("planner failed: no JSON", "planner_error"),
    ("PlacementError: no pose", "placement"),
    ("CheckpointError: bad file", "tandem_error"),
    ("task not achieved", "task_not_achieved"),
])
def test_classify_failure(failure, kind):
    assert classify_failure(failure, success=False) == kind
    assert classify_failure(failure, success=True) is None


def _job(task="stack_three", seed=0, variant="oracle", perturb=None):
    suite = Suite.from_config({"name": "t", "seeds": [seed], "tasks": [{"name": task, "perturb": perturb}]})
    return expand_suite(suite, [Variant.from_config(variant, {})])[0]


def test_row_progress_is_subgoals_over_two_per_goal_clipped():
    job = _job()
    base = {"success": False, "failure": "gave up: x", "steps": 300, "attempts": 5, "replans": 2, "plans": 3,
            "perturbations": [], "recovered": False}
    row = row_from_result(job, {**base, "subgoals_done": 3}, goals=["on(a,b)", "on(c,a)"])
    assert row["n_subgoals_ref"] == 4 and row["progress"] == 0.75 and row["failure_kind"] == "gave_up"
    row = row_from_result(job, {**base, "subgoals_done": 7}, goals=["on(a,b)", "on(c,a)"])  # re-done after a knock
    assert row["progress"] == 1.0
    ok = row_from_result(job, {**base, "success": True, "failure": None, "subgoals_done": 4,
                               "perturbations": [{"step": 120, "name": "knock_top_cube"}], "recovered": True},
                         goals=["on(a,b)", "on(c,a)"])
    assert ok["failure_kind"] is None and ok["perturbed"] and ok["perturb_step"] == 120 and ok["recovered"]


def test_perturbation_draw_is_deterministic_per_task_and_seed():
    p = PerturbSetting.from_config({"name": "knock_top_cube", "after_success": [1, 2]})
    draws = [p.draw("stack_three", s)["after_success"] for s in range(40)]
    assert draws == [p.draw("stack_three", s)["after_success"] for s in range(40)]
    assert set(draws) == {1, 2}  # both subgoals get drawn over 40 seeds
    assert PerturbSetting.from_config("none").draw("stack_three", 0) is None
    assert PerturbSetting.from_config({"name": "open_gripper", "at_step": 50}).draw("x", 3)["at_step"] == 50
    with pytest.raises(ConfigError):
        PerturbSetting.from_config({"name": "knock_top_cube", "after_success": []})


def test_expand_suite_keys_hashes_and_order():
    suite = Suite.from_config({"name": "s", "seeds": 3, "tasks": ["stack_three", {
        "name": "pick_place_bins", "perturb": {"name": "pull_from_bin", "after_success": [1, 2]}}]})
    variants = [Variant.from_config("oracle", {}), Variant.from_config("other", {"agent": {"max_plans": 5}})]
    jobs = expand_suite(suite, variants, env={"render": False}, agent={"max_plans": 40})
    assert len(jobs) == 2 * 2 * 3
    assert [j.key for j in jobs] == sorted(j.key for j in jobs)
    assert len({j.key for j in jobs}) == len(jobs)
    assert "oracle/stack_three/none/seed0002" in {j.key for j in jobs}
    assert any(j.key.startswith("oracle/pick_place_bins/pull_from_bin@s") for j in jobs)
    again = expand_suite(suite, variants, env={"render": False}, agent={"max_plans": 40})
    assert [j.config_hash for j in jobs] == [j.config_hash for j in again]
    other = {j.key: j for j in jobs if j.variant == "other"}
    assert all(j.build["agent"]["max_plans"] == 5 for j in other.values())  # variant overrides the eval default
    changed = expand_suite(suite, variants, env={"render": False}, agent={"max_plans": 41})
    assert jobs[0].config_hash != changed[0].config_hash
    with pytest.raises(ConfigError):
        expand_suite(suite, [variants[0], variants[0]])


def test_variant_validation_names_unknown_components():
    with pytest.raises(UnknownNameError, match="unknown executor 'flat_diffusion'; known executors: diffusion"):
        Variant.from_config("flat", {"executor": {"name": "flat_diffusion"}}).validate()
    with pytest.raises(UnknownNameError, match="planner 'learnt'"):
        Variant.from_config("l", {"planner": "learnt"}).validate()
    with pytest.raises(ConfigError, match="checkpoint"):
        Variant.from_config("d", {"executor": {"name": "lerobot"}}).validate()
    # a diffusion executor without a checkpoint means the shipped checkpoints/<task>_diffusion
    Variant.from_config("d", {"executor": {"name": "diffusion"}}).validate()
    with pytest.raises(ConfigError, match="unknown keys"):
        Variant.from_config("x", {"planer": {"name": "oracle"}})
    Variant.from_config("ok", {"planner": "oracle", "executor": "scripted"}).validate()


def test_suite_config_errors():
    with pytest.raises(ConfigError):
        Suite.from_config({"name": "empty", "seeds": 2, "tasks": []})
    with pytest.raises(ConfigError):
        Suite.from_config({"name": "bad", "seeds": 0, "tasks": ["stack_three"]})
    s = Suite.from_config({"name": "list", "seeds": [3, 7], "tasks": ["stack_three"]})
    assert s.seeds == (3, 7)


def _frame():
    rows = []
    for seed in range(10):
        job = _job("stack_three", seed, perturb={"name": "knock_top_cube", "after_success": [1, 2]})
        fired = seed < 8
        summary = {"success": seed < 6, "failure": None if seed < 6 else "gave up: stack(a,b) failed 3 times",
                   "steps": 200 + seed, "subgoals_done": 4 if seed < 6 else 2, "attempts": 4, "replans": 1,
                   "plans": 5, "perturbations": [{"step": 100 + seed}] if fired else [], "recovered": seed < 6 and fired,
                   "plan_latency": {"p50_ms": 1.0, "p90_ms": 2.0}, "action_latency": {"p50_ms": 0.1, "p99_ms": 0.3}}
        rows.append(row_from_result(job, summary, goals=["on(a,b)", "on(c,a)"]))
    rows.append(failed_row(_job("nut_assembly", 0), "worker_crash", "worker died"))
    return rows_to_frame(rows)


def test_compute_metrics_groups_rates_recovery_and_causes():
    df = _frame()
    m = compute_metrics(df)
    assert m["n_episodes"] == 11
    (pooled,) = m["variants"]
    assert pooled["success"]["n"] == 11 and pooled["success"]["successes"] == 6
    by = {(g["variant"], g["setting"]): g for g in m["groups"]}
    g = by[("oracle", "knock_top_cube")]
    assert g["success"]["successes"] == 6 and g["success"]["n"] == 10
    assert g["success"]["ci95"] == pytest.approx(list(wilson_interval(6, 10)))
    assert g["recovery"]["n"] == 8 and g["recovery"]["successes"] == 6
    assert g["mean_progress"] == pytest.approx((6 * 1.0 + 4 * 0.5) / 10)
    assert g["failure_causes"] == {"gave_up": 4}
    assert g["latency_ms"]["plan_p50_per_episode"]["p50"] == pytest.approx(1.0)
    crash = by[("oracle", "none")]
    assert crash["success"]["n"] == 1 and crash["failure_causes"] == {"worker_crash": 1} and crash["recovery"] is None


def test_rows_to_frame_round_trips_parquet(tmp_path):
    df = _frame()
    df.to_parquet(tmp_path / "r.parquet", index=False)
    back = pd.read_parquet(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(df, back)


def test_the_comparison_table_says_undefined_for_a_ratio_over_a_zero_rate():
    from tandem.evaluation.report import format_comparison

    def group(ka, na, kb, nb):
        r, lo, hi = ratio_interval(ka, na, kb, nb)
        rate = lambda k, n: {"successes": k, "n": n, "rate": k / n, "ci95": list(wilson_interval(k, n))}  # noqa: E731
        return {"task": "stack_three", "setting": "none", "a": rate(ka, na), "b": rate(kb, nb), "ratio": r,
                "ci95": [lo, hi]}

    res = {"a": "A", "b": "B", "groups": [group(33, 50, 0, 20), group(0, 10, 0, 10), group(10, 20, 5, 20)]}
    res["pooled"] = res["groups"][0]
    text = format_comparison(res)
    assert "undefined (B = 0)" in text and "undefined (0 / 0)" in text and "2.00x" in text
    assert "inf " not in text and "nan" not in text


def test_skill_results_leave_out_attempts_cut_while_uncertain():
    verdicts = [
        {"subgoal": "pick(red)", "success": True, "uncertain": False, "at_episode_end": False},
        {"subgoal": "stack(red,green)", "success": False, "uncertain": False, "at_episode_end": False},
        {"subgoal": "pick(red)", "success": True, "uncertain": False, "at_episode_end": False},
        # the task succeeded while the learned verifier waited for the cube to settle: never judged
        {"subgoal": "stack(red,green)", "success": False, "uncertain": True, "at_episode_end": True},
    ]
    assert skill_results(verdicts) == {"pick": [2, 2], "stack": [0, 1]}
    # a certain verdict at the episode's end (the oracle verifier's) and an uncertain one before it both count
    verdicts[3]["uncertain"] = False
    verdicts[1]["uncertain"] = True
    assert skill_results(verdicts) == {"pick": [2, 2], "stack": [0, 2]}
