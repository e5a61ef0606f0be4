"""pick_place_bins' expert pick as geometry (sim.tasks.pick_place_bins.pick_geometry): the grasp clears the walls and the other objects,
the wrist stays in range, the waypoints descend, close and lift, the record reads back and bad records are named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.tasks.pick_place_bins.pick_geometry import (
    LIFT,
    PALM_CLEARANCE,
    BinPickGeometry,
    azimuth,
    bin_pick_waypoints,
    grasp_yaw,
    place_xy_in_cell,
    plan_bin_pick,
    wrist_yaw,
    yaw_candidates,
)
from tandem.core.errors import ConfigError
from tandem.core.grasp_clearance import open_gripper_clearance

BOX = [[-0.05, -0.015, -0.075], [0.05, 0.015, 0.075]]  # a cereal box: 10 x 3 x 15 cm
GEOMETRY = {
    "base_pos": [-0.5, -0.1, 0.912],
    "source_bin": {"inner_lo": [-0.085, -0.485], "inner_hi": [0.285, -0.015], "rim_z": 0.9},
    "floor_z": 0.82,
    "objects": {
        "cereal": {"grasp_dz": 0.02, "yaw_sym": math.pi, "yaw_offset": 0.0, "narrow_side": False,
                   "extents": BOX, "place_xy": [0.0025, 0.4025]},
        "can": {"grasp_dz": 0.0, "yaw_sym": None, "yaw_offset": 0.0, "narrow_side": False,
                "extents": [[-0.025, -0.025, -0.04], [0.025, 0.025, 0.04]], "place_xy": [0.177, 0.368]},
        "bread": {"grasp_dz": 0.004, "yaw_sym": math.pi / 2, "yaw_offset": 0.0, "narrow_side": True,
                  "extents": [[-0.024, -0.02, -0.023], [0.024, 0.02, 0.025]], "place_xy": [0.1975, 0.1575]},
    },
}


def test_candidates_follow_the_objects_shape():
    g = BinPickGeometry.from_dict(GEOMETRY)
    # a box grasped only across its narrow side: one yaw, its own (body y), modulo a half turn
    assert yaw_candidates(g.objects["cereal"], 2.0) == [(pytest.approx(2.0 - math.pi), 0.0)]
    # a cylinder: every 15 degrees over a half turn, none preferred
    can = yaw_candidates(g.objects["can"], 0.3)
    assert len(can) == 12 and {p for _, p in can} == {0.0}
    # a near-cube: twelve yaws, its faces preferred, the narrow side most
    bread = dict((round(y, 6), p) for y, p in yaw_candidates(g.objects["bread"], 0.0))
    assert bread[0.0] == 0.0 and bread[round(-math.pi / 2, 6)] == pytest.approx(0.002)
    assert bread[round(math.pi / 4, 6)] == pytest.approx(0.004)  # off a face by the most: 4 mm


def test_the_chosen_yaw_keeps_the_open_gripper_off_the_wall():
    g = BinPickGeometry.from_dict(GEOMETRY)
    # a can 4 cm from the source bin's +x wall: closing along x would put a finger into it
    grasp = np.array([0.245, -0.25, 0.86])
    yaw = grasp_yaw(yaw_candidates(g.objects["can"], 0.0), grasp, [], [g.source_bin])
    assert abs(math.sin(yaw)) > 0.9  # fingers along y, the hand's length along the wall
    assert open_gripper_clearance(grasp, yaw, [], [g.source_bin]) > open_gripper_clearance(grasp, 0.0, [], [g.source_bin])


def test_the_wrist_takes_the_half_turn_that_keeps_joint_7_in_range():
    # the nearer representative would leave joint 7 at 2.8 (past 2.4): the other half turn is taken
    assert wrist_yaw(-0.5, 0.0, 2.3, 0.0, 0.0) == pytest.approx(-0.5 + math.pi)
    assert wrist_yaw(0.2, 0.0, 0.0, 0.0, 0.0) == pytest.approx(0.2)  # in range: the smallest turn
    assert azimuth(np.zeros(2), np.array([0.0, 1.0])) == pytest.approx(math.pi / 2)


def test_the_plan_descends_onto_the_object_closes_and_lifts():
    g = BinPickGeometry.from_dict(GEOMETRY)
    pos, site = np.array([0.1, -0.25, 0.895]), np.array([-0.1, 0.0, 1.0])
    top, centre = pos[2] + 0.075, pos[2]
    plan = plan_bin_pick(pos, top, centre, 0.02, yaw_candidates(g.objects["cereal"], 0.0), [], g,
                         np.array([0.0025, 0.4025]), site, 0.0, 0.0)
    np.testing.assert_allclose(plan.grasp, [0.1, -0.25, max(centre + 0.02, top - PALM_CLEARANCE)])
    assert abs(math.sin(plan.yaw)) < 1e-9  # along the box's body y (its yaw, 0 here): across its 3 cm side
    wps = bin_pick_waypoints(plan, site, 0.0)
    labels = [w.label for w in wps]
    assert labels[-5:] == ["above", "hover", "grasp", "close", "lift"]
    close = wps[labels.index("close")]
    assert close.gripper == 1.0 and np.allclose(close.pos, plan.grasp)
    assert wps[-1].pos[2] == pytest.approx(plan.grasp[2] + LIFT) and wps[labels.index("hover")].pos[2] > plan.grasp[2]
    # joint 7 at -2.0 would pass -2.2 on the swing to the object: the other half turn, made in the air in steps of
    # at most a radian
    far = plan_bin_pick(pos, top, centre, 0.02, [(0.0, 0.0)], [], g, np.array([0.0025, 0.4025]), site, 0.0, -2.0)
    turns = [w for w in bin_pick_waypoints(far, site, 0.0) if w.label == "turn"]
    assert turns and np.all(np.abs(np.diff([0.0] + [w.yaw for w in turns])) <= 1.0 + 1e-9)


def test_the_place_point_is_pulled_towards_the_robot_but_stays_inside_the_cell():
    lo, hi, base = np.array([0.11, 0.29]), np.array([0.285, 0.515]), np.array([-0.5, -0.1])
    xy = place_xy_in_cell(lo, hi, base, GEOMETRY["objects"]["can"]["extents"])
    centre = (lo + hi) / 2  # 0.88 m from the base, past the Panda's comfortable reach
    assert np.linalg.norm(xy - base) < np.linalg.norm(centre - base)
    margin = math.hypot(0.025, 0.025) + 0.012  # the can's bounding circle and the kept gap
    assert np.all(xy >= lo + margin - 1e-9) and np.all(xy <= hi - margin + 1e-9)


def test_the_record_reads_back_and_bad_records_are_named():
    g = BinPickGeometry.from_dict(GEOMETRY)
    assert BinPickGeometry.from_dict(g.to_dict()) == g
    for bad, match in (
        ({**GEOMETRY, "extra": 1}, r"needs exactly"),
        ({**GEOMETRY, "floor_z": "0.8"}, r"floor_z: expected a finite number"),
        ({**GEOMETRY, "base_pos": [0, 0]}, r"base_pos: expected 3 numbers"),
        ({**GEOMETRY, "objects": {}}, r"objects must be a non-empty mapping"),
        ({**GEOMETRY, "source_bin": {**GEOMETRY["source_bin"], "inner_lo": [0.3, 0.0]}}, r"must be below inner_hi"),
        ({**GEOMETRY, "objects": {"can": {**GEOMETRY["objects"]["can"], "yaw_sym": -1.0}}}, r"can.yaw_sym must be a half, third"),
        ({**GEOMETRY, "objects": {"can": {**GEOMETRY["objects"]["can"], "narrow_side": 1}}}, r"can.narrow_side must"),
        ({**GEOMETRY, "objects": {"can": {**GEOMETRY["objects"]["can"], "extents": [[0, 0, 0], [0, 1, 1]]}}},
         r"can.extents: lo .* must be below hi"),
        ({**GEOMETRY, "objects": {"can": {**GEOMETRY["objects"]["can"], "grasp_dz": float("nan")}}},
         r"can.grasp_dz: expected a finite number"),
        ({**GEOMETRY, "objects": {"can": {**GEOMETRY["objects"]["can"], "yaw_sym": 2.0}}}, r"can.yaw_sym must be"),
        ({**GEOMETRY, "objects": {"can": {**GEOMETRY["objects"]["can"], "yaw_sym": 1e-320}}}, r"can.yaw_sym must be"),
        ({**GEOMETRY, "floor_z": 10**400}, r"floor_z: expected a finite number"),  # too large for a float
        ({**GEOMETRY, "base_pos": [0, "0", 0]}, r"base_pos: expected a finite number"),
        ({1: 0, "a": 0}, r"needs exactly"),  # mixed key types are named, not a TypeError from sorting them
        ([1, 2], r"needs exactly"),
    ):
        with pytest.raises(ConfigError, match=match):
            BinPickGeometry.from_dict(bad)
