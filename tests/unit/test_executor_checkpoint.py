"""Checkpoints: safetensors + JSON round trip, never unpickling, and clear errors on bad files."""

import json
import pickle

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from test_executor_policy import batch, make, obs, subgoal

from executor_vla.policy import DiffusionExecutor
from tandem.core.errors import CheckpointError

# Tiny models on a shared 2-core CPU: one intra-op thread avoids OpenMP oversubscription stalls.
torch.set_num_threads(1)


@pytest.fixture()
def ckpt(tmp_path):
    ex = make().eval()
    with torch.no_grad():
        ex.net.done_head[-1].bias.fill_(0.3)  # something a fresh model would not have
    return ex, ex.save(tmp_path / "ck", command="tandem-train dataset.root=x")


def test_round_trip_is_exact_and_never_unpickles(ckpt, monkeypatch):
    ex, path = ckpt
    assert sorted(p.name for p in path.iterdir()) == ["command.txt", "config.json", "model.safetensors", "stats.json"]

    def boom(*a, **k):
        raise AssertionError("checkpoint loading must not unpickle")

    monkeypatch.setattr(torch, "load", boom)
    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "loads", boom)
    loaded = DiffusionExecutor.from_checkpoint(path)
    assert loaded.command == "tandem-train dataset.root=x"
    assert loaded.cfg == ex.cfg
    b = batch(ex.cfg, b=2)
    a1 = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(0))
    a2 = loaded.predict_action_chunk(b, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a1, a2)
    loaded.set_subgoal(subgoal())
    assert loaded.select_action(obs()).shape == (7,)


def test_inference_overrides(ckpt):
    _, path = ckpt
    fast = DiffusionExecutor.from_checkpoint(path, overrides={"num_inference_steps": 2})
    assert fast.cfg.num_inference_steps == 2 and len(fast.scheduler.timesteps) == 2
    with pytest.raises(CheckpointError, match="down_dims"):
        DiffusionExecutor.from_checkpoint(path, overrides={"down_dims": [8, 16]})


def test_missing_key_is_named(ckpt):
    _, path = ckpt
    w = load_file(str(path / "model.safetensors"))
    del w["net.done_head.0.weight"]
    save_file(w, str(path / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"missing keys.*net\.done_head\.0\.weight"):
        DiffusionExecutor.from_checkpoint(path)


def test_unexpected_and_misshaped_keys_are_named(ckpt):
    _, path = ckpt
    w = load_file(str(path / "model.safetensors"))
    w["net.extra.weight"] = torch.zeros(3)
    w["net.done_head.2.bias"] = torch.zeros(5)
    save_file(w, str(path / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unexpected keys.*net\.extra\.weight.*shape mismatch.*done_head\.2\.bias"):
        DiffusionExecutor.from_checkpoint(path)


def test_config_that_does_not_match_the_weights(ckpt):
    _, path = ckpt
    c = json.loads((path / "config.json").read_text())
    c["executor"]["down_dims"] = [16, 64]
    (path / "config.json").write_text(json.dumps(c))
    with pytest.raises(CheckpointError, match="shape mismatch"):
        DiffusionExecutor.from_checkpoint(path)


def test_wrong_statistics_are_detected(ckpt):
    _, path = ckpt
    s = json.loads((path / "stats.json").read_text())
    s["action"]["max"][0] = 3.0
    (path / "stats.json").write_text(json.dumps(s))
    with pytest.raises(CheckpointError, match="wrong statistics"):
        DiffusionExecutor.from_checkpoint(path)


@pytest.mark.parametrize("edit, msg", [
    (lambda s: s.pop("observation.state"), "observation.state"),
    (lambda s: s["action"].update(max=[1.0] * 6), r"shape \(6,\)"),
    (lambda s: s["action"].update(min=[float("nan")] * 7), "NaN"),
    (lambda s: s["action"].update(min=[5.0] * 7), "min > max"),
])
def test_malformed_statistics(ckpt, edit, msg):
    _, path = ckpt
    s = json.loads((path / "stats.json").read_text())
    edit(s)
    (path / "stats.json").write_text(json.dumps(s))
    with pytest.raises(CheckpointError, match=msg):
        DiffusionExecutor.from_checkpoint(path)


def test_missing_files_and_bad_format(ckpt, tmp_path):
    _, path = ckpt
    with pytest.raises(CheckpointError, match="does not exist"):
        DiffusionExecutor.from_checkpoint(tmp_path / "nope")
    (path / "stats.json").unlink()
    with pytest.raises(CheckpointError, match="stats.json"):
        DiffusionExecutor.from_checkpoint(path)
    (path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        DiffusionExecutor.from_checkpoint(path)
    c = json.loads((path / "config.json").read_text())
    c["format"] = "something-else"
    (path / "config.json").write_text(json.dumps(c))
    with pytest.raises(CheckpointError, match="format"):
        DiffusionExecutor.from_checkpoint(path)


def test_checkpoint_of_default_size_is_small(tmp_path):
    """The default network must fit the 50 MB budget for a committed checkpoint."""
    from executor_vla.config import ExecutorConfig

    ex = DiffusionExecutor(ExecutorConfig(text_encoder="hash", text_dim=384))
    p = ex.save(tmp_path / "big")
    assert (p / "model.safetensors").stat().st_size < 50e6
    assert np.isfinite(ex.normalizer.action_half_range.numpy()).all()
