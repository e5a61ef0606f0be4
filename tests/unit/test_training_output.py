"""What training leaves behind (issue 47, "training output"): a bounded set of checkpoints (the last K, the best and
the final one, written on a schedule in minutes, by steps only when asked), and a progress bar that follows
``train.max_minutes`` when it is set."""

from __future__ import annotations

import json
import sys

import pytest

from tandem.core.errors import ConfigError
from tandem.core.training_output import KEPT_INDEX, CheckpointKeeper, progress_total


def _writer(written: list):
    def write(path):
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text("{}")
        written.append(path.name)
    return write


def _on_disk(root) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


# ------------------------------------------------------------------------------------------- the keeper
def test_the_keeper_keeps_the_last_k_and_the_best(tmp_path):
    root = tmp_path / "checkpoints"
    keeper = CheckpointKeeper(root, keep_last=2, every_steps=1)
    written: list[str] = []
    scores = [5.0, 1.0, 3.0, 4.0, 2.5, 6.0]  # the best is step 2's, long gone from the last two
    for step, score in enumerate(scores, start=1):
        keeper.save(root / f"step_{step}", _writer(written), step=step, now_s=float(step), score=score)
        assert len(_on_disk(root)) <= 3
    assert written == [f"step_{i}" for i in range(1, 7)]
    assert _on_disk(root) == ["step_2", "step_5", "step_6"]
    assert keeper.best.path.name == "step_2" and keeper.best.score == 1.0
    index = json.loads((root / KEPT_INDEX).read_text())
    assert index["best"] == "step_2" and index["last"] == ["step_5", "step_6"] and index["best_score"] == 1.0
    # a new best: the old one goes once it is neither best nor recent
    keeper.save(root / "step_7", _writer(written), step=7, now_s=7.0, score=0.5, final=True)
    assert _on_disk(root) == ["step_6", "step_7"]
    assert json.loads((root / KEPT_INDEX).read_text())["final"] == "step_7"


def test_the_keeper_never_deletes_the_final_one_nor_what_it_did_not_write(tmp_path):
    root = tmp_path / "checkpoints"
    (root / "min_001.0").mkdir(parents=True)  # a snapshot (or a resume source) written by someone else
    keeper = CheckpointKeeper(root, keep_last=1, every_minutes=1.0)
    w: list[str] = []
    keeper.save(root / "step_1", _writer(w), step=1, now_s=60.0, score=1.0)
    keeper.save(root / "step_2", _writer(w), step=2, now_s=120.0, score=None, final=True)  # unscored
    keeper.save(root / "step_3", _writer(w), step=3, now_s=180.0, score=float("nan"))  # NaN: never the best
    assert _on_disk(root) == ["min_001.0", "step_1", "step_2", "step_3"]  # best, final, last
    assert keeper.mark_final().path.name == "step_3"
    keeper.save(root / "step_4", _writer(w), step=4, now_s=240.0, score=2.0)
    assert _on_disk(root) == ["min_001.0", "step_1", "step_3", "step_4"]


def test_the_keeper_is_due_on_its_schedules(tmp_path):
    by_time = CheckpointKeeper(tmp_path, every_minutes=0.5, start_seconds=100.0)  # a resumed run, 100 s in
    assert not by_time.due(129.0, 10) and by_time.due(130.0, 11)
    by_time.save(tmp_path / "a", _writer([]), step=11, now_s=130.0)
    assert not by_time.due(130.0, 11) and not by_time.due(159.0, 12) and by_time.due(160.0, 13)
    by_steps = CheckpointKeeper(tmp_path, every_steps=5)
    assert [s for s in range(12) if by_steps.due(0.0, s)] == [5, 10]
    never = CheckpointKeeper(tmp_path)
    assert not any(never.due(1e6, s) for s in range(100))
    with pytest.raises(ConfigError, match="keep_last"):
        CheckpointKeeper(tmp_path, keep_last=0)
    with pytest.raises(ConfigError, match="every_minutes"):
        CheckpointKeeper(tmp_path, every_minutes=float("nan"))


# ------------------------------------------------------------------------------------------- the progress bar
def test_the_progress_bar_counts_the_time_budget_when_there_is_one():
    timed = progress_total(steps=100_000_000, max_minutes=1.5)
    assert (timed.total, timed.unit, timed.by_time) == (90, "s", True)
    assert timed.position(step=12345, elapsed_s=30.7) == 30
    assert timed.position(step=12346, elapsed_s=95.0) == 90  # never past the end
    assert progress_total(steps=10, max_minutes=0.001).total == 1
    stepped = progress_total(steps=300, max_minutes=None)
    assert (stepped.total, stepped.unit, stepped.by_time) == (300, "step", False)
    assert stepped.position(step=42, elapsed_s=1e6) == 42


# ------------------------------------------------------------------------------------------- a tiny training run
@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    from executor_vla.synthetic import make_synthetic_dataset

    root = tmp_path_factory.mktemp("train_out") / "ds"
    make_synthetic_dataset(root, n_episodes=4, subgoals_per_episode=2, frames_per_subgoal=8, image_size=(16, 16))
    return root


def test_a_run_that_would_save_every_step_leaves_k_plus_best_plus_final(synthetic_root, tmp_path):
    import torch

    from executor_vla.track_config import TrackExecutorConfig
    from executor_vla.track_data import TrackDataset
    from executor_vla.track_policy import TrackExecutor
    from executor_vla.train import TrainConfig, Trainer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = TrackExecutorConfig(head="mse", text_encoder="hash", text_dim=16, hidden_dim=32, cond_dim=32, n_layers=1)
    ds = TrackDataset(synthetic_root, cfg, val_episodes=1)
    ex = TrackExecutor(cfg, stats=ds.stats())
    ds.attach_text_embeddings(ex.text_encoder.encode(ds.texts))
    tcfg = TrainConfig(steps=30, batch_size=16, lr=1e-3, num_workers=0, log_every=5, val_every=10, warmup_steps=2,
                       device="cpu", save_every=1, save_every_minutes=1e-4, keep_checkpoints=2)
    trainer = Trainer(ex, ds, tcfg, tmp_path / "run", command="test")
    trainer.train(progress=False)
    ck = tmp_path / "run" / "checkpoints"
    kept = sorted(p.name for p in ck.iterdir() if p.is_dir())
    assert len(kept) <= 3, kept  # 30 checkpoints written, at most K + best (the final one is the newest)
    assert trainer.last_checkpoint == ck / "step_0000030" and "step_0000030" in kept
    index = json.loads((ck / KEPT_INDEX).read_text())
    assert index["score"] == "val/loss" and index["final"] == "step_0000030"
    assert index["best"] in kept and set(index["last"]) <= set(kept)
    val = {r["step"]: r["val/loss"] for r in trainer.history if "val/loss" in r}
    assert index["best_score"] == pytest.approx(min(val[int(k["path"][5:])] for k in index["kept"]))
    assert len(val) == 30  # every checkpoint was scored at its own step
    assert index["best_score"] == pytest.approx(min(val.values()))  # the best of all 30, kept
    loaded = TrackExecutor.from_checkpoint(trainer.last_checkpoint)  # the final layout loads, as tandem-eval does
    assert json.loads((trainer.last_checkpoint / "config.json").read_text())["extra"]["step"] == 30
    assert loaded.cfg.hidden_dim == 32


def test_tandem_train_summary_names_the_final_and_best_checkpoints(tmp_path, monkeypatch):
    """``tandem-train executor=track train=debug_track`` shortened, with a step schedule that would write a checkpoint
    every 2 steps: the summary's ``checkpoint`` is the final ``checkpoints/step_N``, and only the kept ones remain."""
    from tandem.cli import train as cli

    out = tmp_path / "run"
    monkeypatch.setattr(cli, "_run", lambda cfg: cli.run(cfg))
    monkeypatch.setattr(sys, "argv", ["tandem-train", "executor=track", "train=debug_track", "train.steps=20",
                                      "train.save_every=2", "train.keep_checkpoints=1", "train.val_every=4",
                                      "train.log_every=4", "debug_roundtrip=false",
                                      "dataset.synthetic.episodes=3", f"output_dir={out}"])
    cli.main()
    summary = json.loads((out / "summary.json").read_text())
    kept = sorted(p.name for p in (out / "checkpoints").iterdir() if p.is_dir())
    assert summary["checkpoint"] == str(out / "checkpoints" / "step_0000020")
    assert len(kept) <= 2 and "step_0000020" in kept and summary["best_checkpoint"].rsplit("/", 1)[1] in kept
    assert set(summary["best_score"]) == {"val/loss"}


@pytest.mark.parametrize("arg", ["train.keep_checkpoints=0", "train.save_every_minutes=0",
                                 "train.save_every_minutes=nan", "train.save_every=0"])
def test_the_checkpoint_keys_have_declared_ranges(arg, tmp_path, monkeypatch, capsys):
    from test_cli_bad_config_input import refused

    line = refused("train", ["train=debug", f"output_dir={tmp_path}/out", arg], tmp_path, monkeypatch, capsys)
    assert arg.split("=")[0] in line
