"""End to end over Cyclone DDS on loopback: a simulated robot and the bridge in separate participants.

* fast: a kinematic stand-in robot (no robosuite) is moved measurably by a fixed command sequence, the
  e-stop topic latches a stop, and when the robot stops publishing the watchdog stops the bridge;
* sim: ``tandem-sim-robot`` (robosuite stack_three, first goal only) in a subprocess and ``tandem-bridge``'s
  ``run`` in this process reach task success with the oracle rehearsal stack; then the simulated robot is
  killed and the staleness watchdog trips.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cyclonedds", reason="the DDS transport needs the cyclonedds package (tandem[ros])")

from bridge_kinematic import KinematicEnv, fast_config  # noqa: E402

from bridge.config import bridge_config_from_dict  # noqa: E402
from bridge.dds_transport import DdsTransport  # noqa: E402
from bridge.robot_env import RobotEnv  # noqa: E402
from bridge.sim_robot_node import SimRobotNode  # noqa: E402

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_kinematic_robot_moves_then_estop_then_watchdog():
    domain = random.randint(1, 200)
    cfg = bridge_config_from_dict(fast_config(domain))
    robot_env = KinematicEnv()
    node = SimRobotNode(robot_env, DdsTransport(domain), cfg, oracle=False)
    node.reset()
    stop = threading.Event()
    th = threading.Thread(target=node.run, kwargs={"stop_event": stop}, daemon=True)
    th.start()
    env = RobotEnv(cfg, DdsTransport(domain))
    operator = DdsTransport(domain)
    try:
        obs0, _ = env.reset()
        x0 = float(obs0.proprio[0])
        for _ in range(20):  # a fixed command sequence: +x at 0.5 (= 0.5 m/s), gripper closing
            obs, _, _, _, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, 1.0]))
        assert node.commands_received >= 10
        assert obs.proprio[0] - x0 > 0.1, "the simulated robot did not move measurably along +x"
        assert obs.proprio[7] < 0.02, "the gripper did not close"
        assert obs.images["front"].max() == 255
        # the arm's joints cross on /joint_states with the fingers', by name (Observation.joints, rad)
        assert obs.joints is not None and obs.joints.shape == (3,) and obs.joints[2] == pytest.approx(0.5)
        assert obs.joints[0] - obs0.joints[0] > 0.1

        # e-stop from another participant latches a stop
        estop = operator.create_publisher("/tandem/estop", "std_msgs/msg/Bool")
        deadline = time.monotonic() + 5
        while not env.safety.estopped and time.monotonic() < deadline:
            estop(operator.msg_type("std_msgs/msg/Bool")(data=True))
            time.sleep(0.05)
        assert env.safety.estopped
        x1 = float(env.step(np.array([0.5, 0, 0, 0, 0, 0, 1.0]))[0].proprio[0])
        _, _, _, trunc, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, 1.0]))
        assert info["stopped"] and trunc
        time.sleep(0.2)
        assert abs(node.last_obs.proprio[0] - x1) < 0.03, "the robot kept moving under e-stop"
        env.safety.reset_estop(time.time())

        # the simulated robot stops publishing: the staleness watchdog commands a stop
        stop.set()
        th.join(timeout=2)
        time.sleep(0.5)
        _, _, _, _, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, 1.0]))
        assert info["stopped"]
        assert any(e["kind"] == "stale" for e in info["safety_events"])
    finally:
        stop.set()
        env.close()
        operator.close()
        node.transport.close()


@pytest.mark.sim
@pytest.mark.slow
def test_sim_robot_and_bridge_reach_success_then_watchdog_trips(tmp_path):
    pytest.importorskip("robosuite")
    from tandem.cli.bridge import run as bridge_run
    from tandem.cli.common import compose_config

    domain = random.randint(1, 200)
    # abort_after_stale_s=30: a sim-robot hiccup on a loaded 2-core CI machine makes the bridge command stops
    # (still checked below) instead of ending the rehearsal; seen once in a fresh clone with the default 3 s.
    overrides = [f"bridge.domain_id={domain}", "sim_robot.goals_limit=1", "sim_robot.duration_s=150",
                 "bridge.abort_after_stale_s=30"]
    env_vars = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    log_file = (tmp_path / "sim_robot.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tandem.cli.sim_robot", "--config-name", "bridge/sim_loopback",
                             *overrides, f"out_dir={tmp_path / 'sim'}"], cwd=REPO, env=env_vars,
                            stdout=subprocess.DEVNULL, stderr=log_file)
    try:
        cfg = compose_config("bridge/sim_loopback", [*overrides, f"out_dir={tmp_path / 'bridge'}"])
        summary = bridge_run(cfg)
        assert summary["success"], f"{summary}\n{(tmp_path / 'sim_robot.log').read_text()[-3000:]}"
        ep = summary["episodes"][0]
        assert ep["steps"] > 20 and ep["subgoals_done"] >= 1
        assert summary["commands_sent"] >= ep["steps"]
        assert (tmp_path / "bridge" / "safety_events.jsonl").exists()

        # watchdog: a fresh bridge env sees the robot, then the robot process dies
        from omegaconf import OmegaConf

        bcfg = bridge_config_from_dict(OmegaConf.to_container(cfg.bridge, resolve=True))
        env = RobotEnv(bcfg, DdsTransport(domain))
        try:
            env.reset()
            proc.terminate()
            proc.wait(timeout=20)
            time.sleep(bcfg.safety.max_message_age_s + 0.2)
            _, _, _, _, info = env.step(np.array([0.5, 0, 0, 0, 0, 0, -1.0]))
            assert info["stopped"] and any(e["kind"] == "stale" for e in info["safety_events"])
        finally:
            env.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log_file.close()
