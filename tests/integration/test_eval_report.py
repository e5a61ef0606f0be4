"""`tandem-eval report` renders the plots, the table and the failure-video folder; `compare` prints the ratio."""

from __future__ import annotations

import json
import sys

import pytest

from tandem.evaluation.rows import row_from_result
from tandem.evaluation.store import VIDEO_FILE, ResultStore
from tandem.evaluation.suite import Suite, Variant, expand_suite

GOALS = ["on(red,green)", "on(blue,red)"]


def _results(root, variant, n_success_by_setting, agent=None):
    """A results folder with synthetic rows: per setting, the first k of 10 seeds succeed."""
    store = ResultStore(root)
    suite = Suite.from_config({"name": "s", "seeds": 10, "tasks": [
        "stack_three", {"name": "stack_three", "perturb": {"name": "knock_top_cube", "after_success": [1, 2]}}]})
    for job in expand_suite(suite, [Variant.from_config(variant, {})], agent=agent):
        k = n_success_by_setting[job.setting]
        ok = job.seed < k
        perts = [{"step": 80 + 40 * job.perturb["after_success"] + job.seed, "name": "knock_top_cube"}] \
            if job.perturb else []
        summary = {"success": ok, "failure": None if ok else "gave up: stack(blue,red) failed 3 times",
                   "steps": 300 + job.seed, "subgoals_done": 4 if ok else 2, "attempts": 5, "replans": 1, "plans": 6,
                   "perturbations": perts, "recovered": ok and bool(perts)}
        store.append(row_from_result(job, summary, GOALS))
    store.finalize()
    return store


def _main(argv, capsys):
    from tandem.cli import eval as cli

    sys.argv = ["tandem-eval", *argv]
    with pytest.raises(SystemExit) as e:
        cli.main()
    return e.value.code, capsys.readouterr()


@pytest.mark.integration
def test_report_renders_plots_table_and_failure_videos(tmp_path, capsys):
    store = _results(tmp_path / "a", "oracle", {"none": 9, "knock_top_cube": 6})
    key = "oracle/stack_three/none/seed0009"
    video = tmp_path / "a" / "videos" / "x" / "episode.mp4"
    video.parent.mkdir(parents=True)
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    store.append({"key": key, "video": str(video), "success": False, "failure": "gave up", "failure_kind": "gave_up",
                  "reproduced": True}, file=VIDEO_FILE)
    code, out = _main(["report", str(tmp_path / "a")], capsys)
    assert code == 0, out.err
    rep = tmp_path / "a" / "report"
    for png in ("success_by_task.png", "progress_by_stage.png", "recovery_vs_perturbation.png"):
        data = (rep / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, png
    table = (rep / "results.md").read_text()
    assert "| oracle | none | stack_three | 9/10 (90.0%) |" in table
    assert "| oracle | knock_top_cube | stack_three | 6/10 (60.0%) |" in table
    assert "6/10 |" in table  # recovered / perturbed: every perturbed episode fired here
    metrics = json.loads((rep / "metrics.json").read_text())
    assert {g["setting"] for g in metrics["groups"]} == {"none", "knock_top_cube"}
    vids = rep / "failure_videos"
    assert (vids / "oracle__stack_three__none__seed0009.mp4").exists()
    index = (vids / "index.md").read_text()
    assert "oracle/stack_three/knock_top_cube@s" in index and "(no video)" in index


@pytest.mark.integration
def test_report_pools_several_result_folders(tmp_path, capsys):
    _results(tmp_path / "a", "oracle", {"none": 9, "knock_top_cube": 6})
    _results(tmp_path / "b", "flat", {"none": 3, "knock_top_cube": 0})
    code, out = _main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "figs")], capsys)
    assert code == 0, out.err
    assert "| flat | none | stack_three | 3/10 (30.0%) |" in (tmp_path / "figs" / "results.md").read_text()
    code, out = _main(["report", str(tmp_path / "a"), str(tmp_path / "a"), "--out", str(tmp_path / "aa")], capsys)
    assert code == 0 and "20 episodes" in (tmp_path / "aa" / "results.md").read_text()  # same episodes count once
    _results(tmp_path / "c", "oracle", {"none": 9, "knock_top_cube": 6}, agent={"max_plans": 3})
    code, out = _main(["report", str(tmp_path / "a"), str(tmp_path / "c")], capsys)
    assert code == 2 and "different configurations" in out.err


@pytest.mark.integration
def test_compare_prints_ratio_with_interval(tmp_path, capsys):
    _results(tmp_path / "a", "hier", {"none": 9, "knock_top_cube": 6})
    _results(tmp_path / "b", "flat", {"none": 3, "knock_top_cube": 0})
    code, out = _main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--setting", "none", "--json"], capsys)
    assert code == 0, out.err
    res = json.loads(out.out)
    assert res["pooled"]["ratio"] == pytest.approx(3.0)
    lo, hi = res["pooled"]["ci95"]
    assert lo < 3.0 < hi
    code, out = _main(["compare", str(tmp_path / "a"), str(tmp_path / "b")], capsys)
    assert code == 0 and "pooled" in out.out and "undefined (B = 0)" in out.out  # 6/10 vs 0/10 under perturbation: never inf or nan
    code, out = _main(["compare", str(tmp_path / "a"), str(tmp_path / "nothing")], capsys)
    assert code == 2 and "no results" in out.err
