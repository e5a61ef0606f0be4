"""Checkpoints: safetensors + JSON round trip, never unpickling, and clear errors on bad files."""

import json
import pickle

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from test_executor_policy import batch, make, obs, subgoal

from executor_vla.checkpoint import OverrideError
from executor_vla.policy import DiffusionExecutor
from tandem.core.errors import CheckpointError, ConfigError

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
    assert fast.cfg.num_inference_steps == 2 and fast.sampler.timesteps().tolist() == [99, 49]
    with pytest.raises(CheckpointError, match="down_dims"):
        DiffusionExecutor.from_checkpoint(path, overrides={"down_dims": [8, 16]})


def test_every_allowed_override_is_applied(ckpt):
    """Issue 13: scheduler, steps and executed actions asked for at load time are what runs."""
    _, path = ckpt
    ex = DiffusionExecutor.from_checkpoint(path, overrides={
        "inference_scheduler": "DDPM", "num_inference_steps": 3, "n_action_steps": 4, "done_source": "success",
        "done_threshold": 0.5, "horizon": 16, "image_size": [32, 32], "clip_sample": None})
    assert (ex.cfg.inference_scheduler, ex.cfg.num_inference_steps, ex.cfg.n_action_steps) == ("DDPM", 3, 4)
    assert (ex.cfg.done_source, ex.cfg.done_threshold) == ("success", 0.5)
    assert type(ex.sampler.scheduler).__name__ == "DDPMScheduler" and ex.sampler.timesteps().tolist() == [99, 66, 32]
    ex.set_subgoal(subgoal())
    ex.select_action(obs())
    assert len(ex._queue) == 3  # 4 actions queued per chunk, one served


@pytest.mark.parametrize("overrides, names", [
    ({"num_inference_steps": 0}, ["num_inference_steps"]),
    ({"num_inference_steps": 101}, ["num_inference_steps"]),
    ({"n_action_steps": 16}, ["n_action_steps", "must be <= horizon (16)"]),  # To - 1 + Ta = 17 > Tp
    ({"n_action_steps": 0}, ["n_action_steps"]),
    ({"inference_scheduler": "Euler"}, ["inference_scheduler"]),
    ({"horizon": 32}, ["horizon=32", "the checkpoint has 16"]),
    ({"image_size": [84, 84]}, ["image_size=[84, 84]", "[32, 32]"]),
    ({"prediction_type": "epsilon"}, ["prediction_type"]),
    ({"num_inference_step": 3}, ["num_inference_step", "unknown"]),
])
def test_refused_overrides_name_the_key(ckpt, overrides, names):
    _, path = ckpt
    with pytest.raises(OverrideError) as e:
        DiffusionExecutor.from_checkpoint(path, overrides=overrides)
    assert isinstance(e.value, ConfigError) and isinstance(e.value, CheckpointError)
    for n in names:
        assert n in str(e.value)
    assert DiffusionExecutor.from_checkpoint(path, overrides={"n_action_steps": 15}).cfg.n_action_steps == 15


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


def test_checkpoint_module_does_not_import_the_policy():
    """Part 1: checkpoint.py and policy.py imported each other; the loader now reads files, the policy builds."""
    import ast
    from pathlib import Path

    import executor_vla.checkpoint as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "executor_vla.policy" not in imported
