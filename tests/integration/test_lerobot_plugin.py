"""The LeRobot plugin: ``lerobot-train --policy.type=tandem_diffusion`` / ``tandem_track`` trains tandem's executors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from executor_vla.synthetic import make_synthetic_dataset

pytestmark = pytest.mark.integration

TRACK_SMALL = ["--policy.text_encoder=hash", "--policy.text_dim=16", "--policy.cond_dim=32", "--policy.hidden_dim=32",
               "--policy.n_layers=1", "--policy.num_inference_steps=2"]
SMALL = ["--policy.vision_channels=[8,8,16]", "--policy.down_dims=[16,32]", "--policy.spatial_softmax_keypoints=8",
         "--policy.cond_dim=16", "--policy.diffusion_step_embed_dim=16", "--policy.text_encoder=hash",
         "--policy.text_dim=32", "--policy.num_inference_steps=2"]


@pytest.fixture(scope="module")
def dataset_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lr") / "ds"
    make_synthetic_dataset(root, n_episodes=2, image_size=(32, 32))
    return root


def test_registered_as_a_lerobot_policy_type():
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class

    import executor_vla.lerobot_plugin  # noqa: F401  (registers the type)

    assert {"tandem_diffusion", "tandem_track"} <= set(PreTrainedConfig.get_known_choices())
    assert get_policy_class("tandem_diffusion").__name__ == "TandemDiffusionPolicy"
    assert get_policy_class("tandem_track").__name__ == "TandemTrackPolicy"


def lerobot_train(policy_type: str, dataset_root: Path, out: Path, extra: list[str]) -> subprocess.CompletedProcess:
    """Run ``lerobot-train`` for 2 steps at batch 2 on CPU, saving at step 2; returns the finished process."""
    cmd = [str(Path(sys.executable).parent / "lerobot-train"), f"--policy.type={policy_type}",
           "--policy.discover_packages_path=executor_vla.lerobot_plugin", "--dataset.repo_id=tandem/synthetic",
           f"--dataset.root={dataset_root}", "--dataset.video_backend=pyav", "--policy.push_to_hub=false",
           "--policy.device=cpu", f"--output_dir={out}", "--steps=2", "--batch_size=2", "--num_workers=0",
           "--save_freq=2", "--log_freq=1", "--wandb.enable=false", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})


def test_lerobot_train_trains_the_executor(dataset_root, tmp_path):
    out = tmp_path / "out"
    proc = lerobot_train("tandem_diffusion", dataset_root, out, SMALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "diffusion_loss" in proc.stdout + proc.stderr
    model_dir = out / "checkpoints" / "000002" / "pretrained_model"
    assert json.loads((model_dir / "config.json").read_text())["type"] == "tandem_diffusion"

    # The saved LeRobot policy loads back and predicts a chunk from a LeRobot batch.
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from executor_vla.lerobot_plugin.modeling_tandem_diffusion import TandemDiffusionPolicy

    pol = TandemDiffusionPolicy.from_pretrained(model_dir)
    ds = LeRobotDataset("tandem/synthetic", root=dataset_root, video_backend="pyav",
                        delta_timestamps={"observation.images.agentview": [-0.05, 0], "observation.images.wrist": [-0.05, 0],
                                          "observation.state": [-0.05, 0]})
    item = ds[5]
    batch = {k: v[None] for k, v in item.items() if isinstance(v, torch.Tensor)}
    batch["subgoal.text"] = [ds.meta.tasks.index[int(item["subgoal.task_index"])]]
    chunk = pol.predict_action_chunk(batch)
    assert chunk.shape == (1, 16, 7) and torch.isfinite(chunk).all()


def test_lerobot_train_trains_the_track_executor(dataset_root, tmp_path):
    """``--policy.type=tandem_track``: 2 steps, then the saved pretrained_model runs in tandem's loop."""
    out = tmp_path / "out"
    proc = lerobot_train("tandem_track", dataset_root, out, TRACK_SMALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "action_loss" in proc.stdout + proc.stderr
    model_dir = out / "checkpoints" / "000002" / "pretrained_model"
    saved = json.loads((model_dir / "config.json").read_text())
    assert saved["type"] == "tandem_track" and saved["hidden_dim"] == 32

    import numpy as np

    from executor_vla.lerobot_executor import LeRobotPolicyExecutor
    from executor_vla.track_policy import TrackExecutor
    from tandem.core.types import Observation, Subgoal, Trace3D

    ex = LeRobotPolicyExecutor.from_pretrained(model_dir)
    assert isinstance(ex.tandem, TrackExecutor)
    assert ex.tandem.feature_std.ne(1.0).any()  # the dataset's statistics came with the weights
    ex.set_subgoal(Subgoal("sg", "move", ("obj0",), "move to the obj0", trace_3d=Trace3D(
        points=np.array([[0.3, 0.4, 0.0], [0.7, 0.6, 0.0]]), yaw=np.zeros(2), gripper=-np.ones(2))))
    proprio = np.array([0.5, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.04], np.float32)
    action = ex.select_action(Observation(images={}, proprio=proprio))
    assert action.shape == (7,) and np.all(np.isfinite(action))
