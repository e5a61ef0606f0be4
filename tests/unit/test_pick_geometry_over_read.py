"""pick_place_bins' pick geometry over a reading (BinPickGeometry.pick_over_read, the learned planner's geometric
picks): obstacles as they stand, lying targets left to the trace model with the reason, bad calls named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner_vlm.learned.scene_state import SceneState
from sim.tasks.registry import read_pick_geometry
from tandem.core.dataset_schema import object_keypoints
from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.grasp_clearance import open_gripper_clearance

FLOOR = 0.82
GEOMETRY = {
    "base_pos": [-0.5, -0.1, 0.912], "floor_z": FLOOR,
    "source_bin": {"inner_lo": [-0.085, -0.485], "inner_hi": [0.285, -0.015], "rim_z": 0.9},
    "objects": {
        "milk": {"grasp_dz": 0.015, "yaw_sym": math.pi / 2, "yaw_offset": 0.0, "narrow_side": False,
                 "extents": [[-0.0199, -0.0199, -0.061], [0.0199, 0.0199, 0.083]], "place_xy": [0.0025, 0.1575]},
        "can": {"grasp_dz": 0.0, "yaw_sym": None, "yaw_offset": 0.0, "narrow_side": False,
                "extents": [[-0.025, -0.0251, -0.0403], [0.025, 0.0249, 0.0397]], "place_xy": [0.177, 0.3676]},
    },
}
QUARTER_ABOUT_X = np.array([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])  # wxyz
QUARTER_ABOUT_Y = np.array([math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0])
UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])


def _state(poses: dict[str, tuple[list[float], np.ndarray]]) -> SceneState:
    names = tuple(poses)
    kp = np.stack([object_keypoints(np.asarray(p, float), q) for p, q in poses.values()])
    return SceneState(names, (), np.zeros(0), np.zeros((len(names), 2, 2)), kp, np.ones(len(names)), 1.0,
                      np.zeros((len(names), 2)))


def _plan(state: SceneState, target: str):
    return read_pick_geometry(GEOMETRY).pick_over_read(target, state.objects, state.keypoints_3d,
                                                      np.ones(len(state.objects), bool), np.array([-0.1, 0.0, 1.0]),
                                                      0.0, 0.0)


def test_a_milk_lying_beside_the_can_is_cleared_as_it_lies():
    # the milk lies 6 cm from the can, its 14 cm long side across the table: drawn upright (a 4 cm square) the chosen
    # yaw put a finger into it (clearance -1 cm against its true box); drawn as it lies, the open gripper clears it
    can = [0.1, -0.25, FLOOR + 0.0403]
    milk_pos = np.array([0.16, -0.20, FLOOR + 0.0199])
    state = _state({"can": (can, UPRIGHT), "milk": (milk_pos.tolist(), QUARTER_ABOUT_X)})
    _, fields = _plan(state, "can")
    rot = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]], float)  # a quarter about x: body z along world -y
    lo, hi = np.array(GEOMETRY["objects"]["milk"]["extents"][0]), np.array(GEOMETRY["objects"]["milk"]["extents"][1])
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]) @ rot.T
    t = np.linspace(0, 1, 7)[:, None]
    box = corners[[0, 1, 3, 2, 0], :2] + milk_pos[:2]
    true_outline = np.concatenate([box[i] + t * (box[i + 1] - box[i]) for i in range(4)])
    top = float(milk_pos[2] + corners[:, 2].max())
    clearance = open_gripper_clearance(np.asarray(fields["grasp"]), fields["grasp_yaw"], [(true_outline, top)], [])
    assert clearance > 0.0


def test_a_target_read_lying_is_left_to_the_trace_model_with_the_reason():
    state = _state({"milk": ([0.1, -0.25, FLOOR + 0.0199], QUARTER_ABOUT_X), "can": ([0.0, -0.3, FLOOR + 0.04], UPRIGHT)})
    assert _plan(state, "milk") == "the object reads as lying on its side (4.1 cm below its upright rest height)"
    state = _state({"milk": ([0.1, -0.25, FLOOR + 0.0199], QUARTER_ABOUT_Y), "can": ([0.0, -0.3, FLOOR + 0.04], UPRIGHT)})
    assert _plan(state, "milk") == "the object reads as lying on its side (its x axis points up or down)"
    state.keypoints_3d[0, 0, 0] = np.nan
    assert _plan(state, "milk") == "a non-finite read or proprio"


def test_bad_calls_are_named():
    state = _state({"milk": ([0.1, -0.25, FLOOR + 0.061], UPRIGHT), "can": ([0.0, -0.3, FLOOR + 0.04], UPRIGHT)})
    geometry = read_pick_geometry(GEOMETRY)
    with pytest.raises(ConfigError, match="found must hold one flag per object"):
        geometry.pick_over_read("milk", state.objects, state.keypoints_3d, np.ones(3, bool), np.zeros(3), 0.0, 0.0)
    with pytest.raises(UnknownNameError):
        geometry.pick_over_read("bread", state.objects, state.keypoints_3d, np.ones(2, bool), np.zeros(3), 0.0, 0.0)
    with pytest.raises(ConfigError, match="both nuts"):
        read_pick_geometry({**GEOMETRY, "nuts": {}})
