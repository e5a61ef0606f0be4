"""Build a complete stack (env, planner, verifier, executor, goal producer, memory) from a config.

This is wiring: it is the one place that maps config names (``planner=oracle``, ``executor=scripted``...)
to component classes, so the demo, the collector, the evaluator and the bridge build stacks the same way.
Heavy components are imported lazily so that, e.g., the scripted demo never imports torch.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tandem.agent import AgentConfig, HierarchicalAgent
from tandem.errors import ConfigError, UnknownNameError
from tandem.protocols import Env, Executor, GoalProducer, Planner, TaskMemory, Verifier

logger = logging.getLogger(__name__)

PLANNERS = ("oracle", "vlm", "instruction")
VERIFIERS = ("oracle", "vlm", "oracle_task")
EXECUTORS = ("scripted", "diffusion", "lerobot")
GOAL_PRODUCERS = ("oracle", "none")
#: Component names of the design (ARCHITECTURE.md) that ``tandem.assembly`` cannot build yet.
NOT_IMPLEMENTED: dict[str, tuple[str, ...]] = {"planner": ("learned",), "verifier": ("learned",)}
#: The planner whose single whole-task subgoal matches executors trained with ``conditioning_source="instruction"``.
FLAT_PLANNER = "instruction"
#: Trained executor checkpoints committed with the project: ``<task>_diffusion`` (subgoal-conditioned) and
#: ``<task>_flat`` (the flat baseline); see checkpoints/README.md for the commands that made them.
SHIPPED_CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


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
        self.agent.close()  # the planning worker thread, with agent.async_planning
        self.env.close()


def build_env(cfg: Any, cameras: tuple[str, ...] | None = None,
              image_size: tuple[int, int] | None = None) -> Env:
    """Robosuite env from ``cfg.task.name``, ``cfg.env`` (cameras, image_size, control_freq) and ``cfg.perturb``.

    Args:
        cfg: the nested config.
        cameras, image_size: replace ``cfg.env``'s (``(H, W)`` px), e.g. with what a trained executor was
            trained on (:func:`executor_observation_spec`).

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
        cameras=tuple(cameras or config_get(env_cfg, "cameras", ("agentview", "wrist"))),
        image_size=tuple(image_size or config_get(env_cfg, "image_size", (128, 128))),
        control_freq=int(config_get(env_cfg, "control_freq", 20)),
        render=bool(config_get(env_cfg, "render", True)),
        perturbation=spec,
    )


def unknown_component(kind: str, name: str, known: tuple[str, ...]) -> UnknownNameError:
    """The error for a component name ``tandem.assembly`` cannot build; names of the design that are not built
    yet (:data:`NOT_IMPLEMENTED`, e.g. ``planner=learned``) say so."""
    err = UnknownNameError(kind, name, known)
    if name in NOT_IMPLEMENTED.get(kind, ()):
        err.args = (f"{kind} {name!r} is not implemented yet (a design placeholder, see docs/evaluation.md); "
                    f"known {kind}s: {', '.join(sorted(known))}",)
    return err


def build_planner(cfg: Any, env: Env) -> Planner:
    """Planner named by ``cfg.planner.name``: ``oracle`` (symbolic over privileged predicates), ``vlm``, or
    ``instruction`` (no decomposition: the whole instruction as one subgoal, for flat policies).

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
    if name == "instruction":
        from planner_vlm.instruction_planner import InstructionPlanner

        return InstructionPlanner()
    raise unknown_component("planner", name, PLANNERS)


def build_verifier(cfg: Any, env: Env) -> Verifier:
    """Verifier named by ``cfg.verifier.name``: ``oracle`` (privileged subgoal predicates), ``vlm``, or
    ``oracle_task`` (privileged whole-task success flag; for the single subgoal of ``planner=instruction``).

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
    if name == "oracle_task":
        from planner_vlm.oracle_task_verifier import OracleTaskSuccessVerifier

        return OracleTaskSuccessVerifier()
    raise unknown_component("verifier", name, VERIFIERS)


def resolve_checkpoint(cfg: Any) -> Path:
    """The diffusion executor's checkpoint directory for ``cfg``.

    ``cfg.executor.checkpoint`` when set (a relative path that does not exist from the working directory is
    also tried from the project root); otherwise the shipped one for ``cfg.task.name``:
    ``checkpoints/<task>_flat`` under ``planner=instruction``, else ``checkpoints/<task>_diffusion``.

    Raises:
        ConfigError: no checkpoint given and none shipped for the task (lists the shipped ones).
    """
    given = config_get(config_get(cfg, "executor"), "checkpoint")
    if given:
        path = Path(str(given))
        if not path.is_absolute() and not path.exists() and (SHIPPED_CHECKPOINTS.parent / path).exists():
            path = SHIPPED_CHECKPOINTS.parent / path
        return path
    task = config_get(config_get(cfg, "task"), "name")
    kind = "flat" if config_get(config_get(cfg, "planner"), "name", "oracle") == FLAT_PLANNER else "diffusion"
    path = SHIPPED_CHECKPOINTS / f"{task}_{kind}"
    if not (path / "config.json").is_file():
        shipped = sorted(p.name for p in SHIPPED_CHECKPOINTS.glob("*") if (p / "config.json").is_file())
        raise ConfigError(f"no shipped {kind} executor checkpoint for task {task!r} (shipped: "
                          f"{', '.join(shipped) or 'none'}); pass executor.checkpoint=<dir written by tandem-train>")
    return path


def _checkpoint_executor_dict(checkpoint: str | Path) -> dict[str, Any] | None:
    try:
        raw = json.loads((Path(checkpoint) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    ex = raw.get("executor") if isinstance(raw, dict) else None
    return ex if isinstance(ex, dict) else None


def checkpoint_conditioning(checkpoint: str | Path) -> str | None:
    """``conditioning_source`` (``"subgoal"`` or ``"instruction"``) recorded in a tandem executor checkpoint's
    ``config.json``; None when the file cannot be read (loading the checkpoint then raises the real error)."""
    ex = _checkpoint_executor_dict(checkpoint)
    src = ex.get("conditioning_source", "subgoal") if ex is not None else None
    return src if isinstance(src, str) else None


def executor_observation_spec(cfg: Any) -> tuple[tuple[str, ...], tuple[int, int]] | None:
    """``(cameras, (H, W) px)`` that ``cfg``'s trained diffusion executor was trained on, read from its checkpoint's
    ``config.json`` without loading it; None for other executors or an unreadable checkpoint (loading it later
    raises the real error). The env is built to match, so a checkpoint trained at 84 x 84 px runs as is.

    Raises:
        ConfigError: from :func:`resolve_checkpoint`.
    """
    if config_get(config_get(cfg, "executor"), "name", "scripted") != "diffusion":
        return None
    ex = _checkpoint_executor_dict(resolve_checkpoint(cfg))
    if ex is None or "cameras" not in ex or "image_size" not in ex:
        return None
    return tuple(ex["cameras"]), tuple(int(v) for v in ex["image_size"])


def check_executor_conditioning(planner: str, checkpoint: str | Path | None,
                                conditioning: str | None = None) -> None:
    """Refuse a diffusion checkpoint whose conditioning does not match the planner's subgoals.

    A flat checkpoint (``conditioning_source="instruction"``, trained on whole episodes, done head on episode
    progress) belongs under ``planner=instruction``; a subgoal-conditioned one under a decomposing planner.
    Mixed, the executor would be conditioned silently on text it was not trained on.

    Args:
        planner: the planner name (``cfg.planner.name``).
        checkpoint: the checkpoint directory (read with :func:`checkpoint_conditioning` unless ``conditioning``).
        conditioning: the checkpoint's ``conditioning_source`` if already known.

    Raises:
        ConfigError: naming the checkpoint, its conditioning and what to use instead.
    """
    src = conditioning if conditioning is not None else (
        checkpoint_conditioning(checkpoint) if checkpoint else None)
    if src is None:
        return
    if planner == FLAT_PLANNER and src != "instruction":
        raise ConfigError(
            f"planner=instruction runs the whole task as one subgoal, but executor checkpoint {checkpoint} is "
            f"subgoal-conditioned (conditioning_source={src!r}): it would be conditioned on the full instruction, "
            "which it never saw in training. Use a flat checkpoint (tandem-train executor=flat) or a planner that "
            f"decomposes the task ({', '.join(p for p in PLANNERS if p != FLAT_PLANNER)})")
    if planner != FLAT_PLANNER and src == "instruction":
        raise ConfigError(
            f"executor checkpoint {checkpoint} is the flat baseline (conditioning_source='instruction', trained on "
            f"whole episodes): under planner={planner} every subgoal would be conditioned on the whole instruction. "
            "Run it with planner=instruction verifier=oracle_task agent.subgoal_step_budget=null (the 'flat' "
            "variant of configs/eval.yaml)")


def set_torch_threads(n: int | None) -> None:
    """``torch.set_num_threads(n)`` for CPU inference when ``n`` is set (1 avoids OpenMP oversubscription when
    several workers share a small CPU); None keeps torch's default."""
    if n:
        import torch

        torch.set_num_threads(int(n))


def build_executor(cfg: Any, env: Env) -> Executor:
    """Executor named by ``cfg.executor.name``:

    * ``scripted``: privileged waypoint experts driving ``env``;
    * ``diffusion``: tandem's DiffusionExecutor loaded from ``cfg.executor.checkpoint`` onto ``cfg.executor.device``;
      a flat checkpoint (``conditioning_source="instruction"``) needs ``planner=instruction`` and a subgoal one
      any other planner (:func:`check_executor_conditioning`);
    * ``lerobot``: any LeRobot policy from a ``pretrained_model`` directory (``cfg.executor.checkpoint``) behind
      the Executor protocol (:class:`executor_vla.lerobot_executor.LeRobotPolicyExecutor`), options ``device``,
      ``task_text`` (``subgoal`` or ``instruction``) and ``camera_map``; actions clipped to ``env.action_low/high``.

    Raises:
        UnknownNameError: for any other name. ConfigError: ``diffusion``/``lerobot`` without a checkpoint, or a
        checkpoint whose conditioning does not match the planner. CheckpointError: a missing, corrupt or
        mismatched checkpoint.
    """
    ex_cfg = config_get(cfg, "executor")
    name = config_get(ex_cfg, "name", "scripted")
    if name == "scripted":
        from sim.experts import ScriptedExecutor

        return ScriptedExecutor(env)
    if name == "diffusion":
        checkpoint = resolve_checkpoint(cfg)
        planner = config_get(config_get(cfg, "planner"), "name", "oracle")
        from executor_vla.policy import DiffusionExecutor

        set_torch_threads(config_get(ex_cfg, "torch_threads"))
        executor = DiffusionExecutor.from_checkpoint(checkpoint, device=config_get(ex_cfg, "device", "cpu"))
        check_executor_conditioning(planner, checkpoint, conditioning=executor.cfg.conditioning_source)  # loaded cfg
        return executor
    if name == "lerobot":
        checkpoint = config_get(ex_cfg, "checkpoint")
        if not checkpoint:
            raise ConfigError("executor=lerobot needs executor.checkpoint=<a LeRobot pretrained_model directory, "
                              "e.g. outputs/train/<run>/checkpoints/last/pretrained_model>")
        from executor_vla.lerobot_executor import LeRobotPolicyExecutor

        return LeRobotPolicyExecutor.from_pretrained(
            checkpoint, device=config_get(ex_cfg, "device", "cpu"),
            task_text=config_get(ex_cfg, "task_text", "subgoal"), camera_map=config_get(ex_cfg, "camera_map"),
            action_low=getattr(env, "action_low", None), action_high=getattr(env, "action_high", None))
    raise unknown_component("executor", name, EXECUTORS)


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
    raise unknown_component("goal producer", name, GOAL_PRODUCERS)


def build_memory(cfg: Any) -> TaskMemory:
    """A fresh :class:`memory.task_memory.TaskMemoryV1` configured by ``cfg.memory``:

    * ``lessons``: ``null`` (default: no lessons across episodes), ``"store"`` (learn from the earlier episodes
      of the store the episode is written to) or the path of another memory store to learn from (read only);
    * ``slip_escalation`` (null: off), ``slow_scale``, ``min_slip_episodes``, ``min_slow_attempts``: the retry
      rules (:class:`memory.lessons.RetryRules`). All absent: no retry policy, no lessons (the behaviour before).

    Raises:
        ConfigError: bad rule values. MemoryStoreError: a lessons store that cannot be read.
    """
    from memory.lessons import RetryRules
    from memory.task_memory import TaskMemoryV1

    m = config_get(cfg, "memory", {}) or {}
    defaults = RetryRules()
    try:
        esc = config_get(m, "slip_escalation", defaults.slip_escalation)
        rules = RetryRules(slip_escalation=None if esc is None else int(esc),
                           slow_scale=float(config_get(m, "slow_scale", defaults.slow_scale)),
                           min_slip_episodes=int(config_get(m, "min_slip_episodes", defaults.min_slip_episodes)),
                           min_slow_attempts=int(config_get(m, "min_slow_attempts", defaults.min_slow_attempts)))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"memory: {e}") from e
    return TaskMemoryV1(lessons=config_get(m, "lessons"), rules=rules)


def build_agent_config(cfg: Any) -> AgentConfig:
    """AgentConfig from ``cfg.agent`` (``max_attempts_per_subgoal`` 3, ``subgoal_step_budget`` 400, ``max_plans`` 40
    when absent); ``subgoal_step_budget: null`` means the task's whole ``max_steps`` (flat policies).

    Raises:
        ConfigError: a budget < 1.
    """
    a = config_get(cfg, "agent", {}) or {}
    budget = config_get(a, "subgoal_step_budget", 400)
    return AgentConfig(
        max_attempts_per_subgoal=int(config_get(a, "max_attempts_per_subgoal", 3)),
        subgoal_step_budget=None if budget is None else int(budget),
        max_plans=int(config_get(a, "max_plans", 40)),
        async_planning=bool(config_get(a, "async_planning", False)),
        plan_switch_steps=int(config_get(a, "plan_switch_steps", 1)),
    )


def build_stack(cfg: Any) -> Stack:
    """Env + HierarchicalAgent from a Hydra/OmegaConf config (or a plain nested dict).

    Raises:
        UnknownNameError: for an unknown task, planner, verifier, executor, goal producer or perturbation.
    """
    spec = executor_observation_spec(cfg)
    if spec is not None:
        want = (tuple(config_get(config_get(cfg, "env"), "cameras", ()) or ()),
                tuple(config_get(config_get(cfg, "env"), "image_size", ()) or ()))
        if want != spec:
            logger.info("env cameras/image size %s -> %s, as the executor checkpoint was trained", want, spec)
    env = build_env(cfg, *spec) if spec is not None else build_env(cfg)
    try:
        agent = HierarchicalAgent(
            planner=build_planner(cfg, env),
            verifier=build_verifier(cfg, env),
            executor=build_executor(cfg, env),
            memory=build_memory(cfg),
            goal_producer=build_goal_producer(cfg, env),
            config=build_agent_config(cfg),
            hold_action=np.zeros(env.action_dim, dtype=np.float32),  # OSC delta: no motion, gripper kept
        )
    except BaseException:
        env.close()
        raise
    return Stack(env=env, agent=agent)
