"""executor=lerobot end to end: ``lerobot-train`` trains LeRobot's own ``diffusion`` policy for 2 tiny steps on a
synthetic tandem dataset, and tandem.runtime.registry builds a LeRobotPolicyExecutor from the saved pretrained_model."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from executor_vla.synthetic import make_synthetic_dataset
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, Subgoal, TaskSpec
from tandem.runtime import registry

pytestmark = [pytest.mark.integration, pytest.mark.slow]
torch.set_num_threads(1)
S = 32
# lerobot-train makes every image feature of the dataset an input, subgoal.goal_image included: list the inputs.
INPUTS = {"observation.images.agentview": {"type": "VISUAL", "shape": [3, S, S]},
          "observation.images.wrist": {"type": "VISUAL", "shape": [3, S, S]},
          "observation.state": {"type": "STATE", "shape": [8]}}
TINY = ["--policy.pretrained_backbone_weights=null", "--policy.use_group_norm=true", "--policy.down_dims=[16,32]",
        "--policy.horizon=8", "--policy.n_action_steps=4", "--policy.drop_n_last_frames=3",
        "--policy.diffusion_step_embed_dim=16", "--policy.spatial_softmax_num_keypoints=8",
        "--policy.num_inference_steps=2", "--policy.crop_shape=null"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("lerobot_exec")
    ds = make_synthetic_dataset(root / "ds", n_episodes=2, image_size=(S, S))
    stats = {k: np.asarray(v) for k, v in ds.meta.stats["action"].items()}
    out = root / "out"
    cmd = [str(Path(sys.executable).parent / "lerobot-train"), "--policy.type=diffusion",
           "--dataset.repo_id=tandem/synthetic", f"--dataset.root={root / 'ds'}", "--dataset.video_backend=pyav",
           "--policy.push_to_hub=false", "--policy.device=cpu", f"--output_dir={out}", "--steps=2", "--batch_size=2",
           "--num_workers=0", "--save_freq=2", "--log_freq=1", "--wandb.enable=false",
           f"--policy.input_features={json.dumps(INPUTS)}", *TINY]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / "checkpoints" / "last" / "pretrained_model", stats


class Limits:
    """The part of an Env that build_executor reads."""

    action_low = np.full(7, -0.9, np.float32)
    action_high = np.full(7, 0.9, np.float32)


def obs(seed: int, cams=("agentview", "wrist")) -> Observation:
    rng = np.random.default_rng(seed)
    return Observation(images={c: rng.integers(0, 255, (S, S, 3), dtype=np.uint8) for c in cams},
                       proprio=rng.uniform(-0.5, 0.5, 8).astype(np.float32), step=seed)


def test_assembly_builds_a_lerobot_policy_and_drives_it(trained):
    model_dir, stats = trained
    ctx = registry.BuildContext(env=Limits(), simulated=True, task="synthetic", planner="instruction")
    ex = registry.EXECUTORS.build({"name": "lerobot", "checkpoint": str(model_dir)}, ctx)
    assert type(ex.policy).__name__ == "DiffusionPolicy" and ex.action_dim == 7
    task = TaskSpec(name="synthetic", instruction="visit obj0 then obj1", objects=("obj0", "obj1"), max_steps=20)
    chunks = []
    orig = ex.policy.predict_action_chunk
    ex.policy.predict_action_chunk = lambda *a, **k: (chunks.append(1), orig(*a, **k))[1]

    ex.set_subgoal(Subgoal("sg1", "move", ("obj0",), "move to the obj0"), task)
    actions = [ex.select_action(obs(i)) for i in range(3)]  # one chunk of n_action_steps=4 serves these
    ex.set_subgoal(Subgoal("sg2", "move", ("obj1",), "move to the obj1"), task)  # drops the queue
    actions.append(ex.select_action(obs(3)))
    assert len(chunks) == 2
    a = np.stack(actions)
    assert a.shape == (4, 7) and a.dtype == np.float32 and np.all(np.isfinite(a))
    assert np.all(a >= -0.9) and np.all(a <= 0.9)  # clipped to the env's limits
    # the post-processor unnormalised with the dataset's statistics: constant action dims come out constant
    const = np.flatnonzero(stats["min"] == stats["max"])
    assert const.size and np.allclose(a[:, const], np.clip(stats["min"][const], -0.9, 0.9), atol=1e-5)
    assert not ex.subgoal_done()

    with pytest.raises(ConfigError, match="camera 'wrist'"):
        ex.select_action(obs(4, cams=("agentview",)))
