"""``tandem-train-state state_train=debug`` and ``tandem-train-trace trace_train=debug``: each learns its tiny
synthetic problem on one thread and writes a loadable checkpoint with the command that made it."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)


def test_state_model_debug_config_learns_the_synthetic_scene(tmp_path):
    out = tmp_path / "state"
    proc = _run("tandem.cli.train_state", "state_train=debug", f"output_dir={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    held = summary["held_out"]
    assert summary["steps"] == 120 and summary["last_loss"] < 0.5 * summary["first_loss"]
    assert held["px_median"] < 3.0 and held["m3d_median"] < 0.05  # 48 px images; chance is > 8 px
    assert summary["train_minutes"] < 3.0
    assert summary["seeds"] == {"train": [0, 1, 2, 3], "val": [4]}  # the collector journal's seeds
    ckpt = Path(summary["checkpoint"])
    assert (ckpt / "command.txt").read_text().startswith("tandem-train-state state_train=debug")
    from planner_vlm.learned.state_model import StateModel

    model = StateModel.from_checkpoint(ckpt)
    assert model.cfg.objects == ("red", "blue") and model.cfg.symmetries == {"red": 4, "blue": 4}


def test_trace_model_debug_config_learns_the_synthetic_traces(tmp_path):
    out = tmp_path / "trace"
    proc = _run("tandem.cli.train_trace", "trace_train=debug", "model.grasp_prior=true", f"output_dir={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 800
    assert summary["seeds"] == {"train": list(range(64)), "val": list(range(64, 80))}
    assert summary["held_out"]["point_error_cm"]["median"] < 2.0  # a trace staying at the gripper: ~16 cm
    from planner_vlm.learned.trace_model import TraceModel

    model = TraceModel.from_checkpoint(summary["checkpoint"])
    assert model.cfg.skills == ("pick", "stack")
    # the synthetic expert grasps each cube at its centre along its yaw: the training episodes' picks agree
    prior = model.cfg.grasp_prior["objects"]
    assert sorted(prior) == ["blue", "red"] and prior["red"]["offset_m"] == [0.0, 0.0, 0.0]
    assert prior["red"]["samples"] >= 10 and prior["red"]["period_rad"] == pytest.approx(math.pi / 2)


@pytest.mark.parametrize("module", ["tandem.cli.train_state", "tandem.cli.train_trace"])
def test_a_missing_dataset_is_one_clear_line(module, tmp_path):
    proc = _run(module, f"output_dir={tmp_path / 'x'}", timeout=300)
    assert proc.returncode == 2
    assert "dataset.root is not set" in proc.stderr


def test_state_model_root_and_roots_together_are_refused(tmp_path):
    proc = _run("tandem.cli.train_state", "dataset.root=a", "dataset.roots=[b,c]", f"output_dir={tmp_path / 'x'}",
                timeout=300)
    assert proc.returncode == 2
    assert "dataset.roots" in proc.stderr and "give one of root, roots, synthetic" in proc.stderr


@pytest.mark.sim
def test_presence_scripts_render_scenes_train_and_write_a_loadable_checkpoint(tmp_path):
    """``scripts/render_presence_scenes.py`` then ``scripts/train_presence.py`` on a few pick_place_bins scenes (the
    learning itself is checked on a tiny problem in tests/unit/test_presence_model.py)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def script(name: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], capture_output=True, text=True,
                              timeout=600, env=env, cwd=ROOT)

    train, val, out = tmp_path / "train.npz", tmp_path / "val.npz", tmp_path / "presence"
    for path, start, n in ((train, 2000, 2), (val, 700, 1)):
        proc = script("render_presence_scenes.py", "--seed-start", str(start), "--seeds", str(n), "--out", str(path))
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = script("train_presence.py", "--train", str(train), "--val", str(val), "--max-steps", "5", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    from planner_vlm.learned.presence_model import PresenceModel

    model = PresenceModel.from_checkpoint(out)
    assert model.cfg.cameras == ("workcell", "wrist") and set(model.absent_below) == set(model.objects)
    assert model.metrics["validation"]["seeds"] == [700, 700] and model.command.startswith("python scripts/train_presence.py")
    # the training and validation scenes may not share seeds: named, exit status 2
    proc = script("train_presence.py", "--train", str(train), "--val", str(train), "--max-steps", "5", "--out",
                  str(tmp_path / "other"))
    assert proc.returncode == 2 and "share seeds" in proc.stderr
    # an existing checkpoint is not replaced without --overwrite
    proc = script("train_presence.py", "--train", str(train), "--val", str(val), "--max-steps", "5", "--out", str(out))
    assert proc.returncode == 2 and "--overwrite" in proc.stderr
