"""FrameCache: the in-RAM windows are exactly LeRobot's (values, dtypes, padding), for every frame."""

import pytest
import torch
from test_executor_policy import small_cfg

from executor_vla.data import ExecutorDataset
from executor_vla.synthetic import make_synthetic_dataset

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def dataset_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds") / "synthetic"
    make_synthetic_dataset(root, n_episodes=3, subgoals_per_episode=2, frames_per_subgoal=8, image_size=(32, 32))
    return root


def assert_same_item(a: dict, b: dict, where: str) -> None:
    assert set(a) == set(b), f"{where}: keys differ: {set(a) ^ set(b)}"
    for k, va in a.items():
        vb = b[k]
        if isinstance(va, torch.Tensor):
            assert va.dtype == vb.dtype and va.shape == vb.shape, f"{where} {k}: {va.dtype}{va.shape} vs {vb.dtype}{vb.shape}"
            assert torch.equal(va, vb), f"{where} {k}: values differ"
        else:
            assert va == vb, f"{where} {k}"


@pytest.mark.parametrize("conditioning", ["subgoal", "instruction"])
@pytest.mark.parametrize("episodes", [None, [0, 2]])
def test_cached_items_equal_lerobot_items(dataset_root, conditioning, episodes):
    kw = {"conditioning_source": conditioning}
    if conditioning == "instruction":
        kw.update(use_goal_image=False, use_trace=False)
    cfg = small_cfg(**kw)
    plain = ExecutorDataset(dataset_root, cfg, episodes=episodes)
    cached = ExecutorDataset(dataset_root, cfg, episodes=episodes, cache=True)
    assert len(plain) == len(cached) == (48 if episodes is None else 32)
    for i in range(len(plain)):  # every frame: episode starts/ends exercise both paddings
        assert_same_item(plain[i], cached[i], f"frame {i}")
