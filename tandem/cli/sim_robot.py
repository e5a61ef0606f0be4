"""``tandem-sim-robot``: a robosuite task served as a ROS 2 robot on the bridge's transport (rehearsal).

It publishes the env's cameras, gripper joints and end-effector pose as ROS 2-typed messages, executes
received ``TwistStamped``/``GripperCommand`` messages, and serves the SIM-ONLY oracle side channel
(privileged state, success, scripted-expert waypoints). Run it beside ``tandem-bridge`` with the same config::

    tandem-sim-robot --config-name bridge/sim_loopback                      # terminal 1
    tandem-bridge    --config-name bridge/sim_loopback                      # terminal 2
    tandem-sim-robot --config-name bridge/sim_loopback sim_robot.goals_limit=1   # a short task

This is wiring: it may import ``sim`` and ``bridge``.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import Any

import numpy as np

from tandem.cli.common import fail, hydra_main, prepare_runtime, to_container

prepare_runtime()
log = logging.getLogger("tandem.sim_robot")


def oracle_waypoints_fn(env: Any):
    """SIM-ONLY: subgoal JSON -> the scripted expert's waypoints and controller scales for the bridge side."""
    from sim.experts import ScriptedExecutor, plan_waypoints
    from tandem.core.types import Subgoal

    scales = ScriptedExecutor(env)

    def waypoints(subgoal_json: dict) -> dict:
        wps = plan_waypoints(env, Subgoal.from_json(subgoal_json))
        return {"waypoints": [dataclasses.asdict(w) for w in wps], "pos_scale": scales.pos_scale,
                "rot_scale": scales.rot_scale, "base_rot": scales.base_rot}

    return waypoints


def build_node(cfg: Any, transport: Any = None):
    """The robosuite env + :class:`bridge.sim_robot_node.SimRobotNode` from the config (``bridge`` + ``sim_robot``)."""
    from bridge.config import bridge_config_from_dict
    from bridge.sim_robot_node import SimRobotNode
    from bridge.transport import make_transport
    from sim import cameras as camgeo
    from sim.robosuite_env import RobosuiteEnv

    bcfg = bridge_config_from_dict(to_container(cfg.bridge) if not isinstance(cfg.bridge, dict) else cfg.bridge)
    sr = cfg.sim_robot
    env = RobosuiteEnv(sr.task, cameras=tuple(bcfg.topics.cameras), image_size=tuple(bcfg.image_size),
                       control_freq=int(round(bcfg.rate_hz)))
    try:
        transport = transport or make_transport(bcfg.transport, bcfg.domain_id, bcfg.loopback_only,
                                                node_name="tandem_sim_robot")
        intrinsics = {name: np.asarray(camgeo.intrinsics(env.rs_env.sim, env.rs_camera_name(name), tuple(bcfg.image_size)))
                      for name in bcfg.topics.cameras}
        node = SimRobotNode(env, transport, bcfg, command_timeout_s=float(sr.command_timeout_s),
                            camera_intrinsics=intrinsics, oracle=bcfg.oracle_side_channel,
                            waypoints_fn=oracle_waypoints_fn(env), goals_limit=sr.goals_limit)
        node.reset(seed=int(sr.seed))
    except BaseException:
        env.close()
        raise
    return node


def run(cfg: Any) -> dict:
    """Serve the simulated robot until ``sim_robot.duration_s`` / ``publish_for_s`` or Ctrl-C."""
    node = build_node(cfg)
    sr = cfg.sim_robot
    print(f"simulated robot: task {sr.task} seed {sr.seed} on {node.config.transport} domain {node.config.domain_id}"
          f"{' (loopback only)' if node.config.loopback_only else ''}", file=sys.stderr)
    try:
        node.run(duration_s=sr.duration_s, publish_for_s=sr.publish_for_s)
    except KeyboardInterrupt:
        pass
    finally:
        node.env.close()
        node.transport.close()
    return {"steps": node.steps, "commands_received": node.commands_received,
            "success": bool(node.last_info.get("success", False))}


@hydra_main(config_name="bridge/sim_loopback")
def main(cfg) -> None:
    try:
        out = run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)
    print(out)


__all__ = ["main", "run", "build_node", "oracle_waypoints_fn"]


if __name__ == "__main__":
    main()
