"""tandem.core.wrist: which of a parallel gripper's two equivalent grasp yaws keeps the Panda's wrist in its limit."""

from __future__ import annotations

import math

import pytest

from tandem.core.wrist import PANDA_WRIST_LIMIT_RAD, WRIST_MARGIN_RAD, nearest_symmetric_yaw, resolve_yaw


def test_the_nearest_equivalent_yaw_is_at_most_a_quarter_turn_away():
    assert nearest_symmetric_yaw(3.0, 0.0) == pytest.approx(3.0 - math.pi)
    assert nearest_symmetric_yaw(-3.0, 0.0) == pytest.approx(math.pi - 3.0)
    assert nearest_symmetric_yaw(0.2, 7.0) == pytest.approx(7.0 + (0.2 - 7.0 + 2 * math.pi))  # not wrapped: 7 + turn
    for target in (-5.0, -1.0, 0.3, 2.0, 9.0):
        turn = nearest_symmetric_yaw(target, 1.0) - 1.0
        assert abs(turn) <= math.pi / 2 + 1e-12
        assert math.remainder(target - (1.0 + turn), math.pi) == pytest.approx(0.0, abs=1e-9)


def test_the_nearer_turn_is_kept_while_the_wrist_has_room_for_it():
    # seed 504 of stack_three's validation: asked -90 deg with the wrist near its + limit
    assert resolve_yaw(-1.4, 0.0, 0.0) == pytest.approx(-1.4)
    assert resolve_yaw(-1.4, 0.0, 1.5) == pytest.approx(math.pi - 1.4)  # 1.5 + 1.4 = 2.9 rad: past the limit
    assert resolve_yaw(1.4, 0.0, -1.5) == pytest.approx(1.4 - math.pi)  # and mirrored (d q7 / d yaw = -1)
    # just inside the margin stays; just outside turns the other way
    room = PANDA_WRIST_LIMIT_RAD - WRIST_MARGIN_RAD
    assert resolve_yaw(-1.0, 0.0, room - 1.0 - 1e-3) == pytest.approx(-1.0)
    assert resolve_yaw(-1.0, 0.0, room - 1.0 + 1e-3) == pytest.approx(math.pi - 1.0)


def test_without_a_wrist_angle_the_nearest_turn_and_where_none_fits_the_most_room():
    assert resolve_yaw(-1.4, 0.0, None) == pytest.approx(-1.4)
    assert resolve_yaw(-1.4, 0.0, float("nan")) == pytest.approx(-1.4)  # a robot that does not report it
    # a wrist already past the margin either way round: the candidate that leaves it the most room
    y = resolve_yaw(0.0, 0.0, 2.8, limit=2.8973, margin=2.8)
    assert abs(2.8 - y) == min(abs(2.8 - c) for c in (-math.pi, 0.0, math.pi))


def test_bad_yaws_and_limits_are_refused_by_name():
    with pytest.raises(ValueError, match="finite yaws"):
        resolve_yaw(float("nan"), 0.0, 0.0)
    with pytest.raises(ValueError, match="finite yaws"):
        resolve_yaw(0.0, float("inf"), 0.0)
    with pytest.raises(ValueError, match="wrist limit"):
        resolve_yaw(0.0, 0.0, 0.0, limit=0.0)
