"""The open gripper's clearance (tandem.core.grasp_clearance): walls, obstacles, heights, a grasp outside a box."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tandem.core.grasp_clearance import PANDA_OPEN_GRIPPER, Container, open_gripper_clearance

BIN = Container(inner_lo=(-0.2, -0.3), inner_hi=(0.06, 0.2), rim_z=0.95)
GRASP = np.array([0.0, -0.1, 0.83])


def test_the_hand_across_a_near_wall_overlaps_it_and_clears_it_turned_a_quarter():
    hand_reach = PANDA_OPEN_GRIPPER[1][1]  # 0.105 m along the closing direction
    along_x = open_gripper_clearance(GRASP, 0.0, [], [BIN])
    assert along_x == pytest.approx(0.06 - hand_reach)  # the hand's corner is 4.5 cm into the +x wall
    along_y = open_gripper_clearance(GRASP, math.pi / 2, [], [BIN])
    assert along_y == pytest.approx(0.06 - PANDA_OPEN_GRIPPER[2][2])  # only the wrist's half width towards +x


def test_a_container_counts_only_around_a_grasp_inside_it():
    outside = np.array([0.5, 0.5, 0.83])
    assert open_gripper_clearance(outside, 0.0, [], [BIN]) == math.inf


def test_an_obstacle_inside_a_finger_and_one_below_the_hand():
    tall = (np.array([[0.045, -0.1]]), 0.9)  # a point where the open +x finger is, top above the finger's bottom
    assert open_gripper_clearance(GRASP, 0.0, [tall]) == -0.01
    low = (np.array([[0.08, -0.1]]), GRASP[2] + 0.02)  # under the hand (bottom 2.8 cm up), beyond the finger
    assert open_gripper_clearance(GRASP, 0.0, [low]) == pytest.approx(0.08 - PANDA_OPEN_GRIPPER[0][1])
