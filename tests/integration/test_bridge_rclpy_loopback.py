"""The loopback rehearsal over real ROS 2 nodes (rclpy, ``transport: rclpy``), as over Cyclone DDS
(test_bridge_dds_loopback.py). Discovery stays on this machine (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``).

* fast: the kinematic stand-in robot, the bridge and an operator are three rclpy nodes; a fixed command sequence
  (``geometry_msgs/msg/TwistStamped``) moves the robot measurably, an e-stop (``std_msgs/msg/Bool``) latches a stop,
  and when the robot stops publishing the watchdog stops the bridge;
* sim: ``tandem-sim-robot`` (robosuite stack_three) in a subprocess and ``tandem-bridge``'s ``run`` in this process, both
  over rclpy, with the cheapest stack (the oracle rehearsal stack); the bridge waits for its instruction, which an
  operator node sends as ``std_msgs/msg/String`` on ``/tandem/instruction``; the simulated robot's judge reads it over
  the oracle channel, and one short episode (40 control steps) runs.

No gripper over rclpy here: ``control_msgs`` (GripperCommand) is not on PyPI, so these run with ``gripper_mode: none``
(the gripper topic is tested over DDS, and over rclpy where a ROS 2 install provides control_msgs).
"""

from __future__ import annotations

import ast
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from bridge_kinematic import KinematicEnv, fast_config
from rclpy_support import require_rclpy

from bridge.config import bridge_config_from_dict

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
INSTRUCTION = "put the red cube on the blue cube"


def test_kinematic_robot_over_rclpy_moves_then_estop_then_watchdog():
    require_rclpy()
    from bridge.rclpy_transport import RclpyTransport
    from bridge.robot_env import RobotEnv
    from bridge.sim_robot_node import SimRobotNode

    domain = random.randint(1, 200)
    cfg = bridge_config_from_dict({**fast_config(domain, transport="rclpy"), "gripper_mode": "none"})
    node = SimRobotNode(KinematicEnv(), RclpyTransport("tandem_test_robot", domain), cfg, oracle=False)
    node.reset()
    stop = threading.Event()
    th = threading.Thread(target=node.run, kwargs={"stop_event": stop}, daemon=True)
    th.start()
    env = RobotEnv(cfg, RclpyTransport("tandem_test_bridge", domain))
    operator = RclpyTransport("tandem_test_operator", domain)
    try:
        obs0, _ = env.reset()
        x0 = float(obs0.proprio[0])
        for _ in range(20):  # +x at 0.5 (= 0.5 m/s over TwistStamped)
            obs, _, _, _, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, 0.0]))
        assert node.commands_received >= 10
        assert obs.proprio[0] - x0 > 0.1, "the simulated robot did not move measurably along +x"
        assert obs.images["front"].max() == 255
        assert obs.joints is not None and obs.joints.shape == (3,) and obs.joints[2] == pytest.approx(0.5)
        assert obs.joints[0] - obs0.joints[0] > 0.1

        estop = operator.create_publisher("/tandem/estop", "std_msgs/msg/Bool")
        deadline = time.monotonic() + 10
        while not env.safety.estopped and time.monotonic() < deadline:
            estop(operator.msg_type("std_msgs/msg/Bool")(data=True))
            time.sleep(0.05)
        assert env.safety.estopped
        x1 = float(env.step(np.array([0.5, 0, 0, 0, 0, 0, 0.0]))[0].proprio[0])
        _, _, _, trunc, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, 0.0]))
        assert info["stopped"] and trunc
        time.sleep(0.2)
        assert abs(node.last_obs.proprio[0] - x1) < 0.03, "the robot kept moving under e-stop"
        env.safety.reset_estop(time.time())

        stop.set()
        th.join(timeout=2)
        time.sleep(0.5)
        _, _, _, _, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, 0.0]))
        assert info["stopped"]
        assert any(e["kind"] == "stale" for e in info["safety_events"])
    finally:
        stop.set()
        env.close()
        operator.close()
        node.transport.close()


@pytest.mark.sim
@pytest.mark.slow
def test_sim_robot_and_bridge_over_rclpy_run_an_episode_of_an_instruction_sent_over_ros2(tmp_path):
    require_rclpy()
    pytest.importorskip("robosuite")
    from bridge.rclpy_transport import RclpyTransport
    from tandem.cli.bridge import run as bridge_run
    from tandem.cli.common import compose_config

    domain = random.randint(1, 200)
    overrides = [f"bridge.domain_id={domain}", "bridge.transport=rclpy", "bridge.gripper_mode=none",
                 "sim_robot.duration_s=240", "bridge.abort_after_stale_s=30"]
    env_vars = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    log_file = (tmp_path / "sim_robot.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tandem.cli.sim_robot", "--config-name", "bridge/sim_loopback",
                             *overrides, f"out_dir={tmp_path / 'sim'}"], cwd=REPO, env=env_vars,
                            stdout=subprocess.PIPE, stderr=log_file, text=True)
    operator = RclpyTransport("tandem_test_operator", domain)
    done = threading.Event()

    def send_instruction():  # what `ros2 topic pub /tandem/instruction std_msgs/msg/String` does, until heard
        pub = operator.create_publisher("/tandem/instruction", "std_msgs/msg/String")
        while not done.wait(0.5):
            pub(operator.msg_type("std_msgs/msg/String")(data=INSTRUCTION))

    sender = threading.Thread(target=send_instruction, daemon=True)
    sender.start()
    try:
        cfg = compose_config("bridge/sim_loopback", [
            *overrides, "wait_for_instruction=true", "instruction_timeout_s=120", "bridge.task.max_steps=40",
            f"out_dir={tmp_path / 'bridge'}"])
        summary = bridge_run(cfg)
        done.set()
        log = (tmp_path / "sim_robot.log").read_text()[-3000:]
        assert summary["episodes"], f"{summary}\n{log}"
        ep = summary["episodes"][0]
        assert ep["instruction"] == INSTRUCTION, "the episode did not run the instruction sent over ROS 2"
        assert ep["judge_goals"], f"the simulated robot's judge read no goals over the oracle channel: {ep}\n{log}"
        assert ep["steps"] == 40, f"{ep}\n{log}"
        assert summary["commands_sent"] >= ep["steps"]
        assert summary["ended"] is None

        proc.send_signal(signal.SIGINT)  # the simulated robot returns its counts on Ctrl-C
        out, _ = proc.communicate(timeout=60)
        counts = ast.literal_eval(out.strip().splitlines()[-1])
        assert counts["episodes"] == 1 and counts["judge"]["instruction"] == INSTRUCTION
        assert counts["commands_received"] >= 20, f"few TwistStamped commands crossed rclpy: {counts}"
        # steps count from the episode's reset; a loaded machine steps the simulator slower than the bridge's 20 Hz
        assert counts["steps"] >= 10, f"the simulated robot was not stepped by the bridge's commands: {counts}"
        # the end effector, as the bridge read it from geometry_msgs/msg/PoseStamped over rclpy, moved toward the cube
        lines = (tmp_path / "bridge" / "episode000" / "episode.jsonl").read_text().splitlines()
        eef = np.array([r["proprio"][:3] for r in map(json.loads, lines) if r.get("type") == "step"])
        assert len(eef) == 40 and np.linalg.norm(eef[-1] - eef[0]) > 0.05, f"the end effector did not move: {eef}"
    finally:
        done.set()
        operator.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log_file.close()


def test_tandem_bridge_over_rclpy_without_control_msgs_refuses_the_gripper_topic_in_one_line(tmp_path):
    """The rehearsal config's gripper topic over rclpy, where control_msgs is not installed: exit 2, one line that
    names gripper_mode and the missing package, before anything is sent."""
    require_rclpy()
    from rclpy_support import have

    if have("control_msgs"):
        pytest.skip("control_msgs is installed here (a ROS 2 install): the gripper topic works over rclpy")
    env_vars = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, "-m", "tandem.cli.bridge", "--config-name", "bridge/sim_loopback",
                        "bridge.transport=rclpy", f"bridge.domain_id={random.randint(1, 200)}",
                        f"out_dir={tmp_path / 'bridge'}"], cwd=REPO, env=env_vars, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.stderr[-2000:]
    assert "gripper_mode=topic" in errors[0] and "control_msgs" in errors[0] and "not on PyPI" in errors[0]
