"""The rclpy transport: a real ROS 2 node. Skipped (visibly) where ROS 2's rclpy is not installed."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from bridge.errors import TransportError


def test_rclpy_missing_is_a_clear_error():
    try:
        import rclpy  # noqa: F401
    except ImportError:
        from bridge.rclpy_transport import RclpyTransport

        with pytest.raises(TransportError, match="source /opt/ros"):
            RclpyTransport()
    else:
        pytest.skip("rclpy is installed; the missing-rclpy error path cannot be exercised")


def test_rclpy_node_round_trip():
    pytest.importorskip("rclpy", reason="rclpy comes with a ROS 2 install (not on PyPI); source /opt/ros/<distro>/setup.bash")
    from bridge import conversions as cv
    from bridge.rclpy_transport import RclpyTransport

    dom = random.randint(1, 200)
    a, b = RclpyTransport("tandem_test_a", domain_id=dom), RclpyTransport("tandem_test_b", domain_id=dom)
    try:
        got = []
        b.create_subscription("/tandem_test/twist", "geometry_msgs/msg/TwistStamped", got.append)
        pub = a.create_publisher("/tandem_test/twist", "geometry_msgs/msg/TwistStamped")
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            pub(cv.twist_to_msg(a.msg_type, [0.1, 0, 0], [0, 0, 0.2], a.now(), "base"))
            time.sleep(0.05)
        lin, ang = cv.msg_to_twist(got[0])
        np.testing.assert_allclose(lin, [0.1, 0, 0])
        np.testing.assert_allclose(ang, [0, 0, 0.2])
    finally:
        a.close()
        b.close()
