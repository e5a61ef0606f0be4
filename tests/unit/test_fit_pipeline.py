"""tandem-fit's stage runner: order by needs, parallel workers, resume, failures block dependents, summaries feed
later stages, bad recipes refused in one line before anything is written."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tandem.core.errors import ConfigError
from tandem.evaluation.fit.recipe import Recipe
from tandem.evaluation.fit.report import write_report
from tandem.evaluation.fit.runner import FitRunner

PY = "python -c"
DEBUG = Path(__file__).resolve().parents[2] / "configs" / "fit" / "debug.yaml"


def _write(out: str, name: str, payload: str) -> str:
    """A stage command that appends its name to ``<out>/order.txt`` and writes ``<out>/<name>.json``."""
    code = (f"import json,pathlib; o=pathlib.Path({out!r}); o.mkdir(parents=True, exist_ok=True); "
            f"(o/'order.txt').open('a').write({name!r}+'\\n'); (o/{name + '.json'!r}).write_text(json.dumps({payload}))")
    return f"{PY} \"{code}\""


def recipe(out: Path, extra: dict | None = None) -> Recipe:
    o = str(out)
    stages = {
        "collect": {"run": _write(o, "collect", "dict(episodes=3)"), "summary": "collect.json", "figures": ["episodes"]},
        "train": {"run": _write(o, "train", "dict(best_checkpoint='ckpt/7', val=dict(loss=0.25))"),
                  "needs": ["collect"], "summary": "train.json", "figures": ["val.loss"]},
        "evaluate": {"run": f"{PY} \"import sys,pathlib; pathlib.Path({o!r}, 'eval_arg.txt').write_text(sys.argv[1])\" "
                            "{train.best_checkpoint}", "needs": ["train"]},
    }
    stages.update(extra or {})
    return Recipe.from_dict({"task": "stack_three", "stages": stages}, "test recipe")


def test_stages_run_after_their_needs_and_read_earlier_summaries(tmp_path):
    log = io.StringIO()
    results = FitRunner(recipe(tmp_path), "stack_three", tmp_path, workers=2, log=log).run()
    assert [r.status for r in results] == ["done", "done", "done"]
    assert (tmp_path / "order.txt").read_text().split() == ["collect", "train"]
    assert (tmp_path / "eval_arg.txt").read_text() == "ckpt/7"
    assert all(r.cpu_s >= 0 and r.wall_s > 0 for r in results)
    report = write_report(recipe(tmp_path), "stack_three", tmp_path, results, 1.0)
    by = {r["stage"]: r for r in report["stages"]}
    assert by["train"]["figures"] == {"val.loss": 0.25} and report["ok"]
    assert "| train | done |" in (tmp_path / "fit" / "report.md").read_text()


def test_a_rerun_resumes_and_a_changed_command_reruns(tmp_path):
    FitRunner(recipe(tmp_path), "stack_three", tmp_path, log=io.StringIO()).run()
    again = FitRunner(recipe(tmp_path), "stack_three", tmp_path, log=io.StringIO()).run()
    assert [r.status for r in again] == ["resumed"] * 3
    assert (tmp_path / "order.txt").read_text().split() == ["collect", "train"]
    changed = recipe(tmp_path, {"collect": {"run": _write(str(tmp_path), "collect", "dict(episodes=4)"),
                                            "summary": "collect.json"}})
    third = FitRunner(changed, "stack_three", tmp_path, log=io.StringIO()).run()
    assert third[0].status == "done" and third[1].status == "resumed"


def test_a_failed_stage_blocks_what_needs_it_and_nothing_else(tmp_path):
    extra = {"broken": {"run": f"{PY} \"import sys; print('boom'); sys.exit(3)\""},
             "after_broken": {"run": f"{PY} \"pass\"", "needs": ["broken"]}}
    log = io.StringIO()
    results = {r.name: r for r in FitRunner(recipe(tmp_path, extra), "stack_three", tmp_path, log=log).run()}
    assert results["broken"].status == "failed" and results["broken"].rc == 3
    assert results["after_broken"].status == "blocked"
    assert results["evaluate"].status == "done"
    assert "boom" in log.getvalue() and "broken.log" in log.getvalue()
    assert not (tmp_path / "fit" / "stages" / "broken.json").exists()


def test_an_accepted_exit_status_finishes_the_stage_and_feeds_the_next(tmp_path):
    """A collection short of its target (exit 3) that the recipe accepts: the next stage runs on what it has."""
    extra = {"short": {"run": f"{PY} \"import sys; sys.exit(3)\"", "accept_exit": [3]},
             "after_short": {"run": f"{PY} \"pass\"", "needs": ["short"]}}
    log = io.StringIO()
    results = {r.name: r for r in FitRunner(recipe(tmp_path, extra), "stack_three", tmp_path, log=log).run()}
    assert results["short"].status == "done" and results["short"].rc == 3
    assert results["after_short"].status == "done"
    assert "exit 3, accepted" in log.getvalue()
    again = {r.name: r for r in FitRunner(recipe(tmp_path, extra), "stack_three", tmp_path, log=io.StringIO()).run()}
    assert again["short"].status == "resumed"


def test_two_workers_overlap_independent_stages(tmp_path):
    """Each stage marks its start and waits for the other's: they both finish only if they ran side by side."""

    def meet(me: str, other: str) -> str:
        code = (f"import pathlib,sys,time; d=pathlib.Path({str(tmp_path)!r}); (d/{me!r}).touch(); t=time.monotonic(); "
                f"ok=[time.sleep(0.05) for _ in iter(lambda: (d/{other!r}).exists() or time.monotonic()-t>60, True)]; "
                f"sys.exit(0 if (d/{other!r}).exists() else 1)")
        return f"{PY} \"{code}\""

    r = Recipe.from_dict({"task": "t", "stages": {"a": {"run": meet("a", "b")}, "b": {"run": meet("b", "a")}}}, "test")
    results = FitRunner(r, "t", tmp_path, workers=2, log=io.StringIO()).run()
    assert [x.status for x in results] == ["done", "done"]


@pytest.mark.parametrize("stages, match", [
    ({"a": {"run": "python -c pass", "needs": ["nope"]}}, "needs unknown stage 'nope'"),
    ({"a": {"run": "python -c pass", "needs": ["b"]}, "b": {"run": "python -c pass", "needs": ["a"]}}, "cycle"),
    ({"a": {"run": "python -c pass", "colour": 1}}, "unknown key 'colour'"),
    ({"a": {"run": ""}}, "run must be a command line"),
    ({"a": {"run": "python -c pass"}, "b": {"run": "echo {a.checkpoint}"}}, "does not need it"),
    ({"a": {"run": "python -c pass", "accept_exit": [0]}}, "accept_exit must be a list of exit statuses 1-255"),
    ({"a": {"run": "python -c pass", "accept_exit": "3"}}, "accept_exit must be a list"),
])
def test_bad_recipes_are_one_line_errors(stages, match):
    with pytest.raises(ConfigError, match=match) as e:
        Recipe.from_dict({"task": "t", "stages": stages}, "test recipe")
    assert "\n" not in str(e.value)


def test_an_unknown_command_is_refused_before_anything_runs(tmp_path):
    r = Recipe.from_dict({"task": "t", "stages": {"a": {"run": "tandem-no-such-command x=1"}}}, "test")
    with pytest.raises(ConfigError, match="tandem-no-such-command"):
        FitRunner(r, "t", tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    from tandem.cli import fit

    out = tmp_path / "fit_out"
    for argv, match in ((["task=stack_three"], "missing key 'out'"),
                        ([f"out={out}", "task=stak_three"], "unknown task"),
                        ([f"out={out}", "task=stack_three", f"recipe={DEBUG}", "workers=two"], "workers"),
                        ([f"out={out}", "task=stack_three", f"recipe={DEBUG}", "stages=nope"], "unknown stage 'nope'"),
                        ([f"out={out}", "task=stack_three", f"recipe={tmp_path / 'none.yaml'}"], "cannot be read")):
        with pytest.raises(SystemExit) as e:
            fit.main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and match in err[0], err
    assert not out.exists()


def test_every_shipped_recipe_is_valid():
    root = Path(__file__).resolve().parents[2] / "configs" / "fit"
    recipes = sorted(root.glob("*.yaml"))
    assert recipes
    for p in recipes:
        r = Recipe.load(p)
        assert r.stages
    assert sys.executable
    json.dumps([p.name for p in recipes])


def test_sigterm_stops_the_stages_and_a_rerun_resumes(tmp_path):
    import signal
    import subprocess
    import time

    recipe_file = tmp_path / "recipe.yaml"
    recipe_file.write_text("task: stack_three\nstages:\n  quick:\n    run: python -c pass\n"
                           "  slow:\n    run: python -c \"import time; time.sleep(60)\"\n    needs: [quick]\n")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "tandem.cli.fit", "task=stack_three", f"out={out}", f"recipe={recipe_file}"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "fit" / "logs" / "slow.log").exists():
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)  # to the fit alone: it stops its stage
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "slow: interrupted" in err and "rerun" in err
    assert (out / "fit" / "stages" / "quick.json").exists() and not (out / "fit" / "stages" / "slow.json").exists()
