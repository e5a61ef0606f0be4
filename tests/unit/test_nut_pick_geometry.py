"""The nut_assembly expert's pick as geometry (sim.tasks.nut_assembly.pick_geometry) and the waypoints' 3-D trace
(tandem.core.waypoints): the plan keeps the wrist in range, the record reads back, bad records are named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.tasks.nut_assembly.pick_geometry import (
    LIFT_HEIGHT,
    Q7_LIMIT,
    NutInfoForPick,
    NutPickGeometry,
    arm_azimuth,
    nut_pick_waypoints,
    plan_nut_pick,
)
from tandem.core.errors import ConfigError
from tandem.core.waypoints import Waypoint, waypoint_trace_3d

GEOMETRY = {"base_pos": [-0.56, 0.0, 0.912],
            "nuts": {"square_nut": {"grasp_offset_m": 0.062, "square_to_peg": True, "peg_pos": [0.23, 0.1, 0.85]}}}


def test_the_plan_grasps_across_the_handle_and_turns_it_towards_the_robot_with_the_wrist_in_range():
    info = NutPickGeometry.from_dict(GEOMETRY).nuts["square_nut"]
    eef, base = np.array([-0.1, 0.0, 1.0]), np.array(GEOMETRY["base_pos"])
    for handle_yaw in np.linspace(-math.pi, math.pi, 13):
        for q7 in (-2.0, 0.0, 2.0):
            axis = np.array([math.cos(handle_yaw), math.sin(handle_yaw), 0.0])
            plan = plan_nut_pick(np.array([0.0, -0.1, 0.83]), axis, info, eef, 0.0, q7, base)
            np.testing.assert_allclose(plan.grasp, [0.0, -0.1, 0.83] + 0.062 * axis, atol=1e-12)
            assert abs(math.cos(plan.grasp_yaw - handle_yaw)) < 1e-9  # fingers across the handle
            # joint 7 at the grasp (it moves by -1 per rad of yaw, and with the arm's azimuth) stays in range
            q7_there = q7 + arm_azimuth(plan.grasp, base) - arm_azimuth(eef, base)
            assert abs(q7_there - plan.grasp_yaw) <= Q7_LIMIT + 1e-9
            # squared to the peg: the handle ends pointing at world -x (towards the robot), or as near as the
            # wrist allows (the window is 40 degrees)
            assert math.cos(handle_yaw + plan.turn - math.pi) >= math.cos(math.radians(40.0)) - 1e-9
    wps = nut_pick_waypoints(plan, eef)
    trace = waypoint_trace_3d(eef, 0.0, 0.0, wps)
    assert len(trace) == len(wps) + 1 and np.allclose(trace.points[0], eef) and trace.yaw[0] == 0.0
    close = int(np.flatnonzero(trace.gripper > 0)[0])
    np.testing.assert_allclose(trace.points[close], plan.grasp)
    assert trace.points[-1][2] == pytest.approx(plan.grasp[2] + LIFT_HEIGHT)
    assert np.all(np.abs(np.diff(trace.yaw)) <= 1.0 + 1e-9)  # at most YAW_STEP of turn per waypoint


def test_an_empty_plan_is_the_gripper_now():
    trace = waypoint_trace_3d(np.zeros(3), 0.3, None, [])
    assert len(trace) == 1 and trace.gripper[0] == -1.0
    trace = waypoint_trace_3d(np.zeros(3), 0.0, None, [Waypoint(np.ones(3), yaw=math.pi - 0.1, gripper=1.0)])
    assert trace.yaw[1] == pytest.approx(-0.1)  # the tracker takes the nearer of the two equivalent yaws
    assert list(trace.gripper) == [1.0, 1.0]


def test_the_record_reads_back_and_bad_records_are_named():
    geometry = NutPickGeometry.from_dict(GEOMETRY)
    assert NutPickGeometry.from_dict(geometry.to_dict()) == geometry
    assert geometry.nuts["square_nut"] == NutInfoForPick(0.062, True, (0.23, 0.1, 0.85))
    nut = GEOMETRY["nuts"]["square_nut"]
    for bad, match in (([], "mapping"), ({"base_pos": [0, 0, 0]}, "base_pos and nuts"),
                       ({**GEOMETRY, "base_pos": [0, 0]}, "base_pos"),
                       ({**GEOMETRY, "base_pos": [0, float("nan"), 0]}, "base_pos"),
                       ({**GEOMETRY, "nuts": {}}, "non-empty"),
                       ({**GEOMETRY, "nuts": {"n": {**nut, "grasp_offset_m": -0.01}}}, "nuts.n.grasp_offset_m"),
                       ({**GEOMETRY, "nuts": {"n": {**nut, "grasp_offset_m": "far"}}}, "nuts.n.grasp_offset_m"),
                       # a numeric string or null is not a number in a JSON record (it read as one before)
                       ({**GEOMETRY, "nuts": {"n": {**nut, "grasp_offset_m": "0.06"}}}, "nuts.n.grasp_offset_m"),
                       ({**GEOMETRY, "base_pos": [0, None, 0]}, "base_pos"),
                       ({**GEOMETRY, "base_pos": ["0", 0, 0]}, "base_pos"),
                       ({**GEOMETRY, "nuts": {"n": {**nut, "square_to_peg": "yes"}}}, "square_to_peg"),
                       ({**GEOMETRY, "nuts": {"n": {**nut, "peg_pos": "here"}}}, "nuts.n.peg_pos"),
                       ({**GEOMETRY, "nuts": {"n": {"grasp_offset_m": 0.06}}}, "nuts.n")):
        with pytest.raises(ConfigError, match=match):
            NutPickGeometry.from_dict(bad)
