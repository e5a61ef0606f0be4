"""The dataset adapter on a synthetic LeRobotDataset, and the trainer's save/resume."""

import json

import numpy as np
import pytest
import torch
from test_executor_policy import small_cfg

from executor_vla.data import ExecutorDataset, check_features
from executor_vla.network import TEXT_EMB_KEY
from executor_vla.policy import DiffusionExecutor
from executor_vla.synthetic import make_synthetic_dataset
from executor_vla.text_encoder import load_text_encoder
from executor_vla.train import TrainConfig, Trainer
from tandem.core import dataset_schema as schema
from tandem.core.errors import CheckpointError, DatasetSchemaError

# Tiny models on a shared 2-core CPU: one intra-op thread avoids OpenMP oversubscription stalls.
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def dataset_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds") / "synthetic"
    make_synthetic_dataset(root, n_episodes=2, subgoals_per_episode=2, frames_per_subgoal=10, image_size=(32, 32))
    return root


def test_samples_have_windows_padding_and_subgoal_text(dataset_root):
    cfg = small_cfg()
    ds = ExecutorDataset(dataset_root, cfg)
    assert len(ds) == 40
    item = ds[19]  # last frame of episode 0
    assert item[schema.image_key("agentview")].shape == (2, 3, 32, 32)
    assert item[schema.STATE_KEY].shape == (2, 8)
    assert item[schema.ACTION_KEY].shape == (16, 7)
    assert item[schema.ACTION_IS_PAD_KEY].tolist() == [False, False] + [True] * 14
    assert item[schema.TRACE_KEY].shape == (16, 2) and item[schema.PROGRESS_KEY].shape == ()
    text = ds.texts[int(item[schema.SUBGOAL_TASK_INDEX_KEY])]
    assert text.startswith("move to the")  # the subgoal text, not the instruction
    enc = load_text_encoder("hash", cfg.text_dim)
    assert torch.allclose(item[TEXT_EMB_KEY], torch.from_numpy(enc.encode([text])[0]))
    assert set(ds.stats) == {"action", "observation.state"}


def test_flat_baseline_uses_instruction_and_episode_progress(dataset_root):
    cfg = small_cfg(conditioning_source="instruction", use_goal_image=False, use_trace=False)
    ds = ExecutorDataset(dataset_root, cfg)
    first, last = ds[0], ds[19]
    assert ds.texts[int(first["task_index"])].startswith("visit")
    assert float(first[schema.PROGRESS_KEY]) == 0.0 and float(last[schema.PROGRESS_KEY]) == 1.0
    assert float(last[schema.SUBGOAL_SUCCESS_KEY]) == 1.0 and float(ds[9][schema.SUBGOAL_SUCCESS_KEY]) == 0.0


def test_schema_mismatch_is_named(dataset_root):
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata

    feats = dict(LeRobotDatasetMetadata("tandem/dataset", root=dataset_root).features)
    feats.pop(schema.TRACE_KEY)
    feats[schema.STATE_KEY] = {**feats[schema.STATE_KEY], "shape": (9,)}
    with pytest.raises(DatasetSchemaError, match=r"observation.state.*\(9,\).*missing 'subgoal.trace'"):
        check_features(feats, small_cfg())


def test_trainer_resume_continues_exactly(dataset_root, tmp_path):
    cfg = small_cfg()
    ds = ExecutorDataset(dataset_root, cfg)
    tcfg = TrainConfig(steps=3, batch_size=4, num_workers=0, log_every=1, save_every=100, warmup_steps=1,
                       device="cpu", ema_max_decay=0.99)

    def fresh():
        ex = DiffusionExecutor(cfg)
        ex.set_stats(ds.stats)
        return ex

    t1 = Trainer(fresh(), ds, tcfg, tmp_path / "run", command="test")
    hist = t1.train(steps=2, progress=False)
    assert [r["step"] for r in hist] == [1, 2] and all(np.isfinite(r["loss"]) for r in hist)
    ck = t1.save()
    assert (ck / "training_state" / "optimizer.safetensors").is_file()
    assert json.loads((ck / "config.json").read_text())["extra"]["step"] == 2
    # the checkpoint carries the EMA weights, not the raw ones
    ema = DiffusionExecutor.from_checkpoint(ck)
    raw = t1.unwrapped
    assert not torch.equal(ema.net.unet.final[1].weight, raw.net.unet.final[1].weight)

    t2 = Trainer(fresh(), ds, tcfg, tmp_path / "run2", command="test")
    t2.resume(ck)
    assert t2.step == 2
    assert t2.lr_scheduler.get_last_lr() == t1.lr_scheduler.get_last_lr()
    for p1, p2 in zip(t1.unwrapped.parameters(), t2.unwrapped.parameters()):
        assert torch.equal(p1, p2)
    s1, s2 = t1.optimizer.state_dict()["state"], t2.optimizer.state_dict()["state"]
    assert all(torch.equal(s1[i]["exp_avg"], s2[i]["exp_avg"]) for i in s1)
    t2.train(progress=False)
    assert t2.step == 3

    with pytest.raises(CheckpointError, match="training_state"):
        t2.resume(ema.save(tmp_path / "no_state"))


def test_eval_hook_runs_on_the_ema_executor(dataset_root, tmp_path):
    cfg = small_cfg()
    ds = ExecutorDataset(dataset_root, cfg)
    seen = []

    def eval_fn(executor):
        seen.append(executor)
        assert not executor.training
        return {"success_rate": 0.5}

    ex = DiffusionExecutor(cfg)
    ex.set_stats(ds.stats)
    tcfg = TrainConfig(steps=2, batch_size=4, num_workers=0, log_every=1, save_every=100, eval_every=1,
                       warmup_steps=1, device="cpu")
    hist = Trainer(ex, ds, tcfg, tmp_path / "run", eval_fn=eval_fn).train(progress=False)
    assert len(seen) == 2 and seen[0] is not ex
    assert any(r.get("eval/success_rate") == 0.5 for r in hist)
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert any("eval" in r for r in log)


def test_ema_averages_parameters_and_copies_buffers_exactly():
    from executor_vla.train import EMA

    m = torch.nn.Linear(3, 3)
    m.register_buffer("stat", torch.tensor([0.12778398394584656, 0.9999960660934448]))
    ema = EMA(m, max_decay=0.9999)
    with torch.no_grad():
        m.weight.add_(1.0)
    for step in range(5000):  # float32 averaging of a constant drifts it; a copy never does
        ema.update(m, step)
    assert torch.equal(ema.shadow["stat"], m.stat)
    assert not torch.equal(ema.shadow["weight"], m.weight)  # parameters are averaged (still lagging)


def test_the_time_budget_runs_on_the_chosen_clock(dataset_root, tmp_path):
    """``train.clock=cpu``: the budget and snapshots count this process's CPU time (one core's time with one torch
    thread, whatever else shares the machine), so time spent waiting for the CPU is not charged."""
    import time

    from tandem.core.errors import ConfigError

    cfg = small_cfg()
    ds = ExecutorDataset(dataset_root, cfg)
    ex = DiffusionExecutor(cfg)
    ex.set_stats(ds.stats)
    tcfg = TrainConfig(steps=1, batch_size=2, num_workers=0, device="cpu", max_minutes=1.0, clock="cpu")
    trainer = Trainer(ex, ds, tcfg, tmp_path / "run")
    assert trainer._clock is time.process_time
    trainer._t0 = trainer._clock()
    time.sleep(0.3)  # waiting costs no CPU time
    assert trainer._elapsed_s() < 0.2
    assert Trainer(ex, ds, TrainConfig(steps=1, batch_size=2, num_workers=0, device="cpu"),
                   tmp_path / "run2")._clock is time.perf_counter
    with pytest.raises(ConfigError, match="clock must be wall or cpu"):
        TrainConfig(clock="sundial")
