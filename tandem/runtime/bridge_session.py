"""Runs on the ROS 2 bridge: the agent on a robot (``tandem-bridge``) and the simulated robot of a rehearsal
(``tandem-sim-robot``). Both build through :mod:`tandem.runtime.registry`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tandem.runtime.config import BridgeRunConfig, EnvConfig, TaskConfig, load
from tandem.runtime.registry import build_bridge_stack, build_sim_env


def run_bridge(cfg: Any, transport: Any = None) -> dict[str, Any]:
    """Build the robot env and agent, run ``cfg.episodes`` guarded episodes (the robot is stopped after each and on
    any error), write ``<out_dir>/episodeNNN/`` artefacts, ``safety_events.jsonl`` and ``bridge_summary.json``.

    Each episode's task is the user's instruction: the first one's is ``cfg.instruction`` (else
    ``bridge.task.instruction``) unless ``cfg.wait_for_instruction`` is set or it is empty; every other episode waits
    for the next message on ``bridge.topics.instruction`` (``std_msgs/String``, queued in arrival order). A wait that
    outlasts ``cfg.instruction_timeout_s`` ends the run (``summary["ended"]``); so do Ctrl-C during a wait and a latched
    e-stop.

    Args:
        cfg: a :class:`~tandem.runtime.config.BridgeRunConfig` (or a dict / OmegaConf node of one).
        transport: the transport to use (tests); None makes the one ``cfg.bridge`` names. With
            ``bridge.dry_run=true`` it is wrapped so that commands are logged, never sent.

    Returns:
        A JSON-safe summary: per-episode instruction/success/steps/failure/grounding (and the rehearsal judge's
        goals), whether the stack was privileged (``privileged``, ``oracle_components``), commands sent, safety
        events by kind, why the run ended early (``ended``, or None).

    Raises:
        ConfigError / UnknownNameError / CheckpointError: a bad config (validated before the robot is touched).
    """
    from bridge.config import bridge_config_from_dict
    from bridge.errors import MissingTopicError
    from bridge.runner import run_guarded
    from bridge.transport import DryRunTransport, make_transport
    from tandem.runtime.rollout import run_episode

    if not isinstance(cfg, BridgeRunConfig):
        cfg = load(BridgeRunConfig, cfg)
    bcfg = bridge_config_from_dict(cfg.bridge)
    if transport is None:
        transport = make_transport(bcfg.transport, bcfg.domain_id, bcfg.loopback_only, dry_run=bcfg.dry_run)
    elif bcfg.dry_run and not isinstance(transport, DryRunTransport):
        transport = DryRunTransport(transport)
    out_dir = Path(cfg.out_dir)
    stack = build_bridge_stack(cfg, transport)
    env, agent = stack.env, stack.agent
    episodes = []
    ended = None
    first = " ".join((cfg.instruction if cfg.instruction is not None else bcfg.task.instruction).split())
    topic = bcfg.topics.instruction
    try:
        for i in range(cfg.episodes):
            if i == 0 and first and not cfg.wait_for_instruction:
                text = first
            else:
                print(f"tandem-bridge: waiting for an instruction on {topic} (std_msgs/msg/String), episode {i}",
                      file=sys.stderr)
                try:
                    text = env.next_instruction(cfg.instruction_timeout_s)
                except MissingTopicError as e:
                    ended = str(e)
                    break
                except KeyboardInterrupt:  # Ctrl-C while idle ends the run; the summary is still written
                    ended = "interrupted while waiting for an instruction"
                    break
            env.set_instruction(text)
            print(f"tandem-bridge: episode {i}: {text!r}", file=sys.stderr)
            seed = cfg.seed + i
            ep_dir = out_dir / f"episode{i:03d}"
            result = run_guarded(env, lambda seed=seed, ep_dir=ep_dir: run_episode(
                env, agent, seed=seed, out_dir=ep_dir, record_video=False,
                meta={"bridge": {"transport": bcfg.transport, "dry_run": bcfg.dry_run}}))
            s = result.summary
            episodes.append({k: s.get(k) for k in ("seed", "instruction", "success", "failure", "steps",
                                                  "subgoals_done", "attempts", "replans", "wall_time_s", "privileged",
                                                  "planner_source", "grounding", "judge_goals")})
            if env.safety.estopped:
                ended = "e-stop latched"
                break
    finally:
        stack.close()
    events = env.events
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "safety_events.jsonl").open("w") as f:
        for ev in events:
            f.write(json.dumps(ev) + "\n")
    kinds: dict[str, int] = {}
    for ev in events:
        kinds[ev["kind"]] = kinds.get(ev["kind"], 0) + 1
    summary = {"episodes": episodes, "success": bool(episodes) and all(e["success"] for e in episodes),
               "privileged": agent.privileged, "oracle_components": agent.oracle_components,
               "commands_sent": env.sent, "dry_run": bcfg.dry_run,
               "dry_run_logged": len(transport.sent) if isinstance(transport, DryRunTransport) else 0,
               "safety_events": kinds, "instruction_topic": topic, "ended": ended}
    (out_dir / "bridge_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def oracle_waypoints_fn(env: Any):
    """SIM-ONLY: subgoal JSON -> the scripted expert's waypoints and controller scales, for the oracle channel."""
    from sim.experts import ScriptedExecutor, plan_waypoints
    from tandem.core.types import Subgoal

    scales = ScriptedExecutor(env)

    def waypoints(subgoal_json: dict) -> dict:
        wps = plan_waypoints(env, Subgoal.from_json(subgoal_json))
        return {"waypoints": [dataclasses.asdict(w) for w in wps], "pos_scale": scales.pos_scale,
                "rot_scale": scales.rot_scale, "base_rot": scales.base_rot}

    return waypoints


def build_sim_robot(cfg: Any, transport: Any = None):
    """The simulated robot of a rehearsal: the robosuite env of ``cfg.sim_robot.task`` (built by the registry, with
    the bridge's cameras, image size and rate) served by :class:`bridge.sim_robot_node.SimRobotNode`, reset to
    ``cfg.sim_robot.seed``. It judges nothing until the bridge starts an episode: then its env reads the bridge's
    instruction with the task's reference reading and resets (seeds ``sim_robot.seed``, ``+1``, ...).

    Raises:
        ConfigError / UnknownTaskError: a bad config.
    """
    from bridge.config import bridge_config_from_dict
    from bridge.sim_robot_node import SimRobotNode
    from bridge.transport import make_transport
    from sim import cameras as camgeo

    if not isinstance(cfg, BridgeRunConfig):
        cfg = load(BridgeRunConfig, cfg)
    bcfg = bridge_config_from_dict(cfg.bridge)
    sr = cfg.sim_robot
    env_cfg = EnvConfig(cameras=tuple(bcfg.topics.cameras), image_size=tuple(bcfg.image_size),
                        control_freq=int(round(bcfg.rate_hz)))
    env = build_sim_env(TaskConfig(name=sr.task), env_cfg)
    try:
        transport = transport or make_transport(bcfg.transport, bcfg.domain_id, bcfg.loopback_only,
                                                node_name="tandem_sim_robot")
        intrinsics = {name: np.asarray(camgeo.intrinsics(env.rs_env.sim, env.rs_camera_name(name),
                                                         tuple(bcfg.image_size)))
                      for name in bcfg.topics.cameras}
        node = SimRobotNode(env, transport, bcfg, command_timeout_s=float(sr.command_timeout_s),
                            camera_intrinsics=intrinsics, oracle=bcfg.oracle_side_channel,
                            waypoints_fn=oracle_waypoints_fn(env), goals_limit=sr.goals_limit)
        node.reset(seed=int(sr.seed))
    except BaseException:
        env.close()
        raise
    return node


def serve_sim_robot(cfg: Any) -> dict[str, Any]:
    """Serve the simulated robot until ``sim_robot.duration_s`` / ``publish_for_s`` or Ctrl-C; returns its counts."""
    if not isinstance(cfg, BridgeRunConfig):
        cfg = load(BridgeRunConfig, cfg)
    node = build_sim_robot(cfg)
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
    return {"steps": node.steps, "commands_received": node.commands_received, "episodes": node.episodes_started,
            "judge": node.judge, "success": node.judged_success()}


__all__ = ["build_sim_robot", "oracle_waypoints_fn", "run_bridge", "serve_sim_robot"]
