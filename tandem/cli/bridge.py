"""``tandem-bridge``: run tandem's agent on a robot through the ROS 2 bridge (Hydra).

Examples::

    tandem-bridge --config-name bridge/sim_loopback                    # rehearsal beside tandem-sim-robot
    tandem-bridge --config-name bridge/sim_loopback bridge.dry_run=true   # log commands, send nothing
    tandem-bridge --config-name bridge/franka_moveit_servo executor.name=diffusion executor.checkpoint=ckpt/

The config's ``bridge`` section (``bridge.config.BridgeConfig``) sets the transport, topics, frames, rate,
action mapping and safety limits; ``planner``, ``verifier`` and ``executor`` pick the agent's parts as in
``tandem-demo``. Writes ``summary.json``, ``episode.jsonl`` and ``safety_events.jsonl`` per episode.

This is wiring: it may import ``sim`` (only for the sim-only ``executor.name=oracle_remote``), ``bridge``
and ``tandem.runtime.agent``.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tandem.cli.common import fail, hydra_main, prepare_runtime, to_container
from tandem.core.errors import ConfigError, TandemError, UnknownNameError
from tandem.core.types import Observation, Subgoal, TaskSpec

prepare_runtime()
log = logging.getLogger("tandem.bridge")

EXECUTORS = ("oracle_remote", "diffusion")


class OracleRemoteExecutor:
    """SIM-ONLY rehearsal executor: the scripted expert, with its privileged waypoints fetched over the
    oracle side channel (:class:`bridge.oracle_channel.OracleChannelClient`) and its actions computed here
    from the proprio received over the robot topics (``sim.experts.WaypointTracker``).

    Never usable on a real robot (there is no simulated robot to answer).
    """

    def __init__(self, client: Any):
        self.client = client
        self.tracker = None

    def reset(self) -> None:
        self.tracker = None

    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec | None = None) -> None:
        """Ask the simulated robot for the waypoints of ``subgoal`` (raises MissingTopicError if it never answers)."""
        from sim.experts import WaypointTracker
        from sim.tasks.base import Waypoint

        ans = self.client.request(subgoal.to_json())
        wps = [Waypoint(**{**w, "pos": np.asarray(w["pos"], np.float64)}) for w in ans["waypoints"]]
        self.tracker = WaypointTracker(wps, np.asarray(ans["pos_scale"]), np.asarray(ans["rot_scale"]),
                                       np.asarray(ans["base_rot"]))

    def select_action(self, observation: Observation) -> np.ndarray:
        """OSC action ``float32 (7,)`` from ``observation.proprio`` (grip-site position m, quaternion wxyz)."""
        import mujoco

        if self.tracker is None:
            raise TandemError("OracleRemoteExecutor.select_action: call set_subgoal() first")
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, observation.proprio[3:7].astype(np.float64))
        return self.tracker.action(observation.proprio[:3].astype(np.float64), mat.reshape(3, 3))

    def subgoal_done(self) -> bool:
        return self.tracker is not None and self.tracker.done


def build_agent(cfg: Any, env: Any, transport: Any):
    """HierarchicalAgent for the robot env: planner/verifier/memory as in ``tandem.runtime.registry``; the executor is
    ``oracle_remote`` (sim-only) or ``diffusion`` (a checkpoint). No goal producer (no simulator to render)."""
    from tandem.runtime.agent import AgentConfig, HierarchicalAgent
    from tandem.runtime.registry import build_memory, build_planner, build_verifier

    ex = cfg.get("executor") or {}
    name = ex.get("name", "oracle_remote")
    if name == "oracle_remote":
        from bridge.oracle_channel import OracleChannelClient

        if not env.config.oracle_side_channel:
            raise TandemError("executor.name=oracle_remote needs bridge.oracle_side_channel=true (simulation only)")
        executor = OracleRemoteExecutor(OracleChannelClient(transport))
    elif name == "diffusion":
        from executor_vla.policy import DiffusionExecutor

        if ex.get("checkpoint") in (None, "", "???"):
            raise ConfigError("executor.name=diffusion needs executor.checkpoint=<checkpoint directory>")

        executor = DiffusionExecutor.from_checkpoint(ex.get("checkpoint"), device=ex.get("device", "cpu"))
    else:
        raise UnknownNameError("bridge executor", name, EXECUTORS)
    a = cfg.get("agent") or {}
    return HierarchicalAgent(
        planner=build_planner(cfg, env), verifier=build_verifier(cfg, env), executor=executor,
        memory=build_memory(cfg), goal_producer=None,
        config=AgentConfig(max_attempts_per_subgoal=int(a.get("max_attempts_per_subgoal", 3)),
                           subgoal_step_budget=int(a.get("subgoal_step_budget", 400)),
                           max_plans=int(a.get("max_plans", 40))))


def run(cfg: Any, transport: Any = None) -> dict:
    """Build the robot env and agent, run ``cfg.episodes`` guarded episodes, write the artefacts.

    Returns a JSON-safe summary: per-episode success/steps/failure, commands sent, safety events by kind.
    """
    from bridge.config import bridge_config_from_dict
    from bridge.robot_env import RobotEnv
    from bridge.runner import run_guarded
    from bridge.transport import DryRunTransport, make_transport
    from tandem.runtime.rollout import run_episode

    cfg = to_container(cfg) if not isinstance(cfg, dict) else cfg
    bcfg = bridge_config_from_dict(cfg["bridge"])
    if transport is None:
        transport = make_transport(bcfg.transport, bcfg.domain_id, bcfg.loopback_only, dry_run=bcfg.dry_run)
    elif bcfg.dry_run and not isinstance(transport, DryRunTransport):
        transport = DryRunTransport(transport)
    out_dir = Path(cfg.get("out_dir") or "outputs/bridge")
    env = RobotEnv(bcfg, transport)
    episodes = []
    try:
        agent = build_agent(cfg, env, transport)
        for i in range(int(cfg.get("episodes", 1))):
            seed = int(cfg.get("seed", 0)) + i
            ep_dir = out_dir / f"episode{i:03d}"
            result = run_guarded(env, lambda seed=seed, ep_dir=ep_dir: run_episode(
                env, agent, seed=seed, out_dir=ep_dir, record_video=False,
                meta={"bridge": {"transport": bcfg.transport, "dry_run": bcfg.dry_run}}))
            s = result.summary
            episodes.append({k: s.get(k) for k in ("seed", "success", "failure", "steps", "subgoals_done", "attempts",
                                                  "replans", "wall_time_s")})
            if env.safety.estopped:
                break
    finally:
        env.close()
    events = env.events
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "safety_events.jsonl").open("w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    kinds: dict[str, int] = {}
    for e in events:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    summary = {"episodes": episodes, "success": bool(episodes) and all(e["success"] for e in episodes),
               "commands_sent": env.sent, "dry_run": bcfg.dry_run,
               "dry_run_logged": len(transport.sent) if isinstance(transport, DryRunTransport) else 0,
               "safety_events": kinds}
    (out_dir / "bridge_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


@hydra_main(config_name="bridge/sim_loopback")
def main(cfg) -> None:
    try:
        summary = run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)
    print(json.dumps(summary, indent=2))
    sys.exit(0 if summary["success"] else 3)


__all__ = ["main", "run", "build_agent", "OracleRemoteExecutor"]


if __name__ == "__main__":
    main()
