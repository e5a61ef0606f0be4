"""The learned planner's grasp check (planner_vlm.learned.grasp_check): footprints from keypoints, a grasp turned
off a wall, one left alone, the object's width limiting the turn, the trace's turn rescaled, bad workcells."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner_vlm.learned.grasp_check import (
    Workcell,
    checked_grasp_yaw,
    footprint,
    turn_trace_to,
    width_across,
)
from planner_vlm.learned.trace_model import axial
from tandem.core.errors import ConfigError
from tandem.core.grasp_clearance import Container

CELL = Workcell(containers=(Container((-0.2, -0.3), (0.06, 0.2), 0.95),),
                extents={"can": ((-0.025, -0.025, -0.04), (0.025, 0.025, 0.04)),
                         "cereal": ((-0.05, -0.015, -0.075), (0.05, 0.015, 0.075)),
                         "milk": ((-0.02, -0.02, -0.06), (0.02, 0.02, 0.08))})
SYM = {"can": 8, "cereal": 2, "milk": 4}


def _kp(x: float, y: float, z: float = 0.83, yaw: float = 0.0) -> np.ndarray:
    p = np.array([x, y, z])
    return np.stack([p, p + 0.03 * np.array([math.cos(yaw), math.sin(yaw), 0.0])])


def test_footprints_disc_square_and_box():
    lo, hi = (np.asarray(v) for v in CELL.extents["can"])
    disc = footprint(_kp(0.0, 0.0), lo, hi, 8)
    np.testing.assert_allclose(np.linalg.norm(disc, axis=1), 0.025)
    lo, hi = (np.asarray(v) for v in CELL.extents["cereal"])
    box = footprint(_kp(0.0, 0.0, yaw=math.pi / 2), lo, hi, 2)  # long axis along world y
    assert width_across(box, 0.0) == pytest.approx(0.03) and width_across(box, math.pi / 2) == pytest.approx(0.1)


def test_a_grasp_whose_hand_meets_the_wall_is_turned_off_it():
    grasp = np.array([0.0, -0.1, 0.83])
    yaw, clear, before = checked_grasp_yaw(grasp, 0.0, "can", {"can": _kp(0.0, -0.1)}, SYM, CELL)
    assert before == pytest.approx(0.06 - 0.105)  # closing along x: the hand 4.5 cm into the +x wall
    assert abs(axial(yaw)) == pytest.approx(math.pi / 2) and clear > 0  # along y it clears


def test_a_grasp_that_clears_is_left_as_predicted():
    grasp = np.array([-0.08, 0.05, 0.83])
    yaw, clear, before = checked_grasp_yaw(grasp, 0.3, "can", {"can": _kp(-0.08, 0.05)}, SYM, CELL)
    assert yaw == 0.3 and clear == before > 0


def test_an_object_too_wide_across_the_fingers_keeps_its_grasp_direction():
    # cereal's 10 cm side along x, 5 cm from the -y wall: closing along y (across its 3 cm) puts the hand into that
    # wall, and closing along x would clear it but cannot close on 10 cm: the turn stays within the yaws whose
    # width across the fingers is at most max_grasp_width_m (15 deg either way here)
    grasp = np.array([-0.1, -0.25, 0.83])
    yaw, clear, before = checked_grasp_yaw(grasp, math.pi / 2, "cereal", {"cereal": _kp(-0.1, -0.25)}, SYM, CELL)
    assert before < 0
    lo, hi = (np.asarray(v) for v in CELL.extents["cereal"])
    assert width_across(footprint(_kp(-0.1, -0.25), lo, hi, 2), yaw) <= CELL.max_grasp_width_m
    assert abs(axial(yaw - math.pi / 2)) <= math.radians(15) + 1e-9


def test_other_objects_are_obstacles_at_their_height():
    grasp = np.array([-0.1, 0.0, 0.83])
    found = {"can": _kp(-0.1, 0.0), "milk": _kp(-0.1, 0.07)}  # milk 7 cm along +y: in the way of a y-closing finger
    yaw, clear, before = checked_grasp_yaw(grasp, math.pi / 2, "can", found, SYM, CELL)
    assert before < 0 and clear > before and abs(axial(yaw - math.pi / 2)) > 0.2


def test_turn_trace_to_rescales_the_turn_and_moves_the_close_and_after():
    yaws = np.array([0.0, 0.5, 1.0, 1.0, 1.0])  # row 0 now, a turn point, hover, close (row 3), lift
    out = turn_trace_to(yaws, 3, 1.4)
    np.testing.assert_allclose(out, [0.0, 0.7, 1.4, 1.4, 1.4])
    np.testing.assert_allclose(turn_trace_to(np.zeros(3), 2, -1.0), [0.0, -1.0, -1.0])  # no turn: all but row 0


def test_workcell_round_trip_and_bad_input():
    assert Workcell.from_dict(CELL.to_dict()) == CELL
    bad = {  # each names what is wrong
        r"containers\[0\]: needs inner_lo, inner_hi and rim_z": {"containers": [{"inner_lo": [0, 0]}]},
        r"containers\[0\].inner_lo: expected 2 finite numbers": {"containers": [{"inner_lo": [0], "inner_hi": [1, 1],
                                                                                  "rim_z": 1}]},
        r"containers\[0\].rim_z: expected a finite number, got nan": {
            "containers": [{"inner_lo": [0, 0], "inner_hi": [1, 1], "rim_z": float("nan")}]},
        "inner_lo .* must be below inner_hi": {"containers": [{"inner_lo": [1, 1], "inner_hi": [0, 0], "rim_z": 1}]},
        r"extents\['can'\] lo: expected 3": {"extents": {"can": [[0, 0], [1, 1]]}},
        r"extents\['can'\]: lo .* must be below hi": {"extents": {"can": [[1, 1, 1], [0, 0, 0]]}},
        r"unknown key\(s\) \['contaners'\]": {"contaners": []},
        "containers must be a list": {"containers": {"a": 1}},
        "max_grasp_width_m must be in": {"max_grasp_width_m": -1},
    }
    for message, d in bad.items():
        with pytest.raises(ConfigError, match=message):
            Workcell.from_dict(d)
    with pytest.raises(ConfigError, match="no extents for 'bread'"):
        checked_grasp_yaw(np.zeros(3), 0.0, "bread", {}, SYM, CELL)
