"""Build a complete stack (env, planner, verifier, executor, goal producer, memory) from a config.

This is wiring: it is the one place that maps config names (``planner=oracle``, ``executor=scripted``...)
to component classes, so the demo, the collector, the evaluator and the bridge build stacks the same way.
Heavy components are imported lazily so that, e.g., the scripted demo never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tandem.agent import AgentConfig, HierarchicalAgent
from tandem.errors import ConfigError, UnknownNameError
from tandem.protocols import Env, Executor, GoalProducer, Planner, TaskMemory, Verifier

PLANNERS = ("oracle", "vlm")
VERIFIERS = ("oracle", "vlm")
EXECUTORS = ("scripted", "diffusion")
GOAL_PRODUCERS = ("oracle", "none")


def config_get(cfg: Any, key: str, default: Any = None) -> Any:
    """``cfg[key]`` for a Mapping/OmegaConf node or ``cfg.key`` for an object; ``default`` if absent or cfg is None."""
    if cfg is None:
        return default
    if isinstance(cfg, Mapping):
        return cfg.get(key, default)
    return getattr(cfg, key, default)


@dataclass
class Stack:
    """A ready-to-run stack: the env and the agent that drives it."""

    env: Env
    agent: HierarchicalAgent

    def close(self) -> None:
        self.env.close()


def build_env(cfg: Any) -> Env:
    """Robosuite env from ``cfg.task.name``, ``cfg.env`` (cameras, image_size, control_freq) and ``cfg.perturb``.

    Raises:
        UnknownTaskError / UnknownNameError: for an unknown task or perturbation.
    """
    from sim.perturbations import PerturbationSpec
    from sim.robosuite_env import RobosuiteEnv

    env_cfg = config_get(cfg, "env", {}) or {}
    perturb = config_get(cfg, "perturb", None)
    spec = None
    pname = config_get(perturb, "name", "none")
    if pname and pname != "none":
        spec = PerturbationSpec(name=pname, at_step=config_get(perturb, "at_step"),
                                after_success=int(config_get(perturb, "after_success", 1) or 1))
    return RobosuiteEnv(
        config_get(config_get(cfg, "task"), "name"),
        cameras=tuple(config_get(env_cfg, "cameras", ("agentview", "wrist"))),
        image_size=tuple(config_get(env_cfg, "image_size", (128, 128))),
        control_freq=int(config_get(env_cfg, "control_freq", 20)),
        render=bool(config_get(env_cfg, "render", True)),
        perturbation=spec,
    )


def build_planner(cfg: Any, env: Env) -> Planner:
    """Planner named by ``cfg.planner.name``: ``oracle`` (symbolic over privileged predicates) or ``vlm``.

    Raises:
        UnknownNameError: for any other name. ConfigError (from the VLM factory) for a bad VLM config.
    """
    name = config_get(config_get(cfg, "planner"), "name", "oracle")
    if name == "oracle":
        from planner_vlm.oracle_planner import OraclePlanner

        return OraclePlanner()
    if name == "vlm":
        from planner_vlm.factory import make_vlm_planner

        return make_vlm_planner(config_get(cfg, "planner"))
    raise UnknownNameError("planner", name, PLANNERS)


def build_verifier(cfg: Any, env: Env) -> Verifier:
    """Verifier named by ``cfg.verifier.name``: ``oracle`` (privileged predicates) or ``vlm``.

    Raises:
        UnknownNameError: for any other name.
    """
    name = config_get(config_get(cfg, "verifier"), "name", "oracle")
    if name == "oracle":
        from planner_vlm.oracle_verifier import OracleVerifier

        return OracleVerifier()
    if name == "vlm":
        from planner_vlm.factory import make_vlm_verifier

        return make_vlm_verifier(config_get(cfg, "verifier"))
    raise UnknownNameError("verifier", name, VERIFIERS)


def build_executor(cfg: Any, env: Env) -> Executor:
    """Executor named by ``cfg.executor.name``: ``scripted`` (privileged waypoint experts driving ``env``) or
    ``diffusion`` (loaded from ``cfg.executor.checkpoint`` onto ``cfg.executor.device``).

    Raises:
        UnknownNameError: for any other name. ConfigError: ``diffusion`` without a checkpoint.
        CheckpointError: a missing, corrupt or mismatched checkpoint.
    """
    ex_cfg = config_get(cfg, "executor")
    name = config_get(ex_cfg, "name", "scripted")
    if name == "scripted":
        from sim.experts import ScriptedExecutor

        return ScriptedExecutor(env)
    if name == "diffusion":
        from executor_vla.policy import DiffusionExecutor

        checkpoint = config_get(ex_cfg, "checkpoint")
        if not checkpoint:
            raise ConfigError("executor=diffusion needs executor.checkpoint=<dir written by tandem-train>; "
                              "no trained default checkpoint ships yet (see executor_vla/README.md)")
        return DiffusionExecutor.from_checkpoint(checkpoint, device=config_get(ex_cfg, "device", "cpu"))
    raise UnknownNameError("executor", name, EXECUTORS)


def build_goal_producer(cfg: Any, env: Env) -> GoalProducer | None:
    """Goal producer named by ``cfg.goals.name``: ``oracle`` (teleport-render-restore goal images and projected
    expert traces in ``cfg.goals.camera`` pixels; needs a rendering env) or ``none`` (returns None).

    Raises:
        UnknownNameError: for any other name.
    """
    g = config_get(cfg, "goals")
    name = config_get(g, "name", "oracle")
    if name == "none":
        return None
    if name == "oracle":
        from sim.goal_render import OracleGoalProducer

        return OracleGoalProducer(env, camera=config_get(g, "camera", "agentview"))
    raise UnknownNameError("goal producer", name, GOAL_PRODUCERS)


def build_memory(cfg: Any) -> TaskMemory:
    """A fresh :class:`memory.task_memory.TaskMemoryV1` (the only memory so far; ``cfg`` is reserved)."""
    from memory.task_memory import TaskMemoryV1

    return TaskMemoryV1()


def build_stack(cfg: Any) -> Stack:
    """Env + HierarchicalAgent from a Hydra/OmegaConf config (or a plain nested dict).

    Raises:
        UnknownNameError: for an unknown task, planner, verifier, executor, goal producer or perturbation.
    """
    env = build_env(cfg)
    try:
        a = config_get(cfg, "agent", {}) or {}
        agent = HierarchicalAgent(
            planner=build_planner(cfg, env),
            verifier=build_verifier(cfg, env),
            executor=build_executor(cfg, env),
            memory=build_memory(cfg),
            goal_producer=build_goal_producer(cfg, env),
            config=AgentConfig(
                max_attempts_per_subgoal=int(config_get(a, "max_attempts_per_subgoal", 3)),
                subgoal_step_budget=int(config_get(a, "subgoal_step_budget", 400)),
                max_plans=int(config_get(a, "max_plans", 40)),
            ),
        )
    except BaseException:
        env.close()
        raise
    return Stack(env=env, agent=agent)
