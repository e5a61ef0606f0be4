"""Action normalisation: min-max and mu-law companding, the same on numpy and torch, and invertible."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from executor_vla.action_scaling import compand, expand, normalise_actions, unnormalise_actions
from executor_vla.track_config import TrackExecutorConfig
from tandem.core.errors import ConfigError

# a set-point executor's range: position offsets up to 0.26 m, rotation deltas, gripper
LOW = np.array([-0.26, -0.25, -0.14, -0.6, -0.2, -1.0, -1.0], np.float32)
HIGH = np.array([0.21, 0.24, 0.16, 0.17, 0.4, 1.0, 1.0], np.float32)


@pytest.mark.parametrize("compand_m", [None, 0.005])
def test_normalise_maps_the_range_into_the_unit_box_and_back_on_numpy_and_torch(compand_m):
    a = np.random.default_rng(0).uniform(LOW, HIGH, (3, 16, 7)).astype(np.float32)
    y = normalise_actions(a, LOW, HIGH, compand_m)
    assert np.abs(y).max() <= 1.0 + 1e-6
    np.testing.assert_allclose(unnormalise_actions(y.copy(), LOW, HIGH, compand_m), a, atol=1e-6)
    yt = normalise_actions(torch.from_numpy(a), torch.from_numpy(LOW), torch.from_numpy(HIGH), compand_m)
    np.testing.assert_allclose(yt.numpy(), y, atol=1e-6)
    back = unnormalise_actions(yt, torch.from_numpy(LOW), torch.from_numpy(HIGH), compand_m)
    np.testing.assert_allclose(back.numpy(), a, atol=1e-6)


def test_companding_gives_millimetre_offsets_more_of_the_unit_range_and_leaves_the_rest_min_max():
    mm = np.zeros((2, 7), np.float32)
    mm[1, :3] = 0.001  # 1 mm along x, y, z
    lin = np.diff(normalise_actions(mm, LOW, HIGH, None), axis=0)[0, :3]
    com = np.diff(normalise_actions(mm, LOW, HIGH, 0.005), axis=0)[0, :3]
    assert np.all(com > 4.0 * lin)  # a unit-range error of the network costs 4-6 times fewer millimetres
    a = np.random.default_rng(1).uniform(LOW, HIGH, (5, 7)).astype(np.float32)
    np.testing.assert_allclose(normalise_actions(a, LOW, HIGH, 0.005)[:, 3:],
                               normalise_actions(a, LOW, HIGH, None)[:, 3:])


def test_compand_is_odd_monotone_and_expand_inverts_it():
    x = np.linspace(-0.3, 0.3, 601)
    y = compand(x, 0.005, 0.3)
    assert y[0] == pytest.approx(-1.0) and y[-1] == pytest.approx(1.0) and np.all(np.diff(y) > 0)
    np.testing.assert_allclose(y, -compand(-x, 0.005, 0.3))
    np.testing.assert_allclose(expand(y, 0.005, 0.3), x, atol=1e-12)


def test_companding_needs_setpoint_actions_and_a_positive_scale():
    TrackExecutorConfig(action_space="setpoint", action_compand_m=0.005)
    with pytest.raises(ConfigError, match="action_compand_m"):
        TrackExecutorConfig(action_space="delta", action_compand_m=0.005)
    with pytest.raises(ConfigError, match="action_compand_m"):
        TrackExecutorConfig(action_space="setpoint", action_compand_m=0.0)
