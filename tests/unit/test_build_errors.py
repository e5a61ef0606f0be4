"""A stack that cannot be built is bad input (issue 47): a BuildError that stops a run, never a policy's 0% nor a
cached result; a checkpoint of another task is refused before anything is built."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tandem.core.errors import BuildError, CheckpointError
from tandem.evaluation.rows import failed_row
from tandem.evaluation.runner import evaluate
from tandem.evaluation.store import PART_FILE, ResultStore
from tandem.evaluation.suite import Suite, Variant, expand_suite

REPO = Path(__file__).resolve().parents[2]
FAKE = {"builder": "eval_fakes:build_fake_stack", "executor": {"name": "fake"}}
BROKEN = {"builder": "eval_fakes:build_broken_stack"}


def _suite(n: int = 1) -> Suite:
    return Suite.from_config({"name": "fake", "seeds": n, "tasks": ["toy"]})


def test_a_broken_variant_stops_the_evaluation_and_records_nothing(tmp_path):
    with pytest.raises(BuildError, match="variant 'broken' cannot be built: RuntimeError: .*corrupt"):
        evaluate(_suite(), [Variant.from_config("broken", BROKEN)], tmp_path, backend="inline", validate=False,
                 progress=False)
    assert not ResultStore(tmp_path).load_rows()


def test_a_repaired_variant_is_run_not_read_from_an_old_build_error_row(tmp_path):
    """Stores of older releases hold build_error rows: they are no result, and a rerun runs those episodes."""
    jobs = expand_suite(_suite(), [Variant.from_config("fake", FAKE)])
    ResultStore(tmp_path).append(failed_row(jobs[0], "build_error", "build failed: corrupt"))
    out = evaluate(_suite(), [Variant.from_config("fake", FAKE)], tmp_path, backend="inline", validate=False,
                   progress=False)
    assert (out.n_run, out.n_skipped) == (1, 0)
    assert out.results["failure_kind"].tolist() == [None]
    assert (tmp_path / PART_FILE).exists()


def _checkpoint_copy(tmp_path: Path, name: str) -> Path:
    ckpt = tmp_path / name
    shutil.copytree(REPO / "checkpoints" / name, ckpt)
    return ckpt


def _stack_cfg(task: str, checkpoint: Path) -> dict:
    return {"task": {"name": task}, "planner": {"name": "oracle"}, "verifier": {"name": "oracle"},
            "executor": {"name": "diffusion", "checkpoint": str(checkpoint)}, "goals": {"name": "oracle"},
            "env": {"render": True}}


def test_a_truncated_weights_file_is_a_checkpoint_error(tmp_path):
    from tandem.runtime.registry import EXECUTORS, BuildContext

    ckpt = _checkpoint_copy(tmp_path, "stack_three_diffusion")
    weights = ckpt / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    ctx = BuildContext(env=None, simulated=True, task="stack_three", planner="oracle")
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        EXECUTORS.build({"name": "diffusion", "checkpoint": str(ckpt)}, ctx)


def test_a_checkpoint_of_another_task_is_refused_before_it_loads(tmp_path):
    from tandem.runtime.registry import EXECUTORS, BuildContext, check_executor_task

    ckpt = _checkpoint_copy(tmp_path, "nut_assembly_diffusion")
    with pytest.raises(CheckpointError, match=r"trained on task\(s\) \['nut_assembly'\], not 'stack_three'"):
        check_executor_task(ckpt, "stack_three")
    check_executor_task(ckpt, "nut_assembly")
    ctx = BuildContext(env=None, simulated=True, task="stack_three", planner="oracle")
    (ckpt / "model.safetensors").unlink()  # refused before the weights are read
    with pytest.raises(CheckpointError, match="not 'stack_three'"):
        EXECUTORS.build({"name": "diffusion", "checkpoint": str(ckpt)}, ctx)


def test_any_other_error_of_a_builder_is_a_build_error_naming_the_component(monkeypatch):
    from tandem.runtime import registry

    def broken(spec, ctx):
        raise ValueError("bad bytes")

    monkeypatch.setitem(registry.EXECUTORS._builders, "scripted", broken)
    with pytest.raises(BuildError, match="executor=scripted cannot be built: ValueError: bad bytes"):
        registry.EXECUTORS.build({"name": "scripted"}, registry.BuildContext(None, True, "stack_three", "oracle"))
