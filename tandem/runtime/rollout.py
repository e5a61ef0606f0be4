"""run_episode: drive an Env with a HierarchicalAgent and write the episode's artefacts.

Artefacts written to ``out_dir`` (all optional):

* ``episode.mp4``: agentview with the subgoal text, the keypoint trace and the goal image inset, wrist view beside;
* ``episode.jsonl``: one row per control step plus one event per plan, attempt, verdict, replan,
  perturbation and error (``tandem.core.types.EpisodeLog``);
* ``memory.jsonl``: the task memory, loadable with ``memory.task_memory.TaskMemoryV1.load``;
* ``memory.sqlite``: the memory store (``memory.store``): every record committed as it was made, every control
  step, the goal images; ``tandem-replay <out_dir>`` reads it (written as the episode runs, so it survives a crash);
* ``summary.json``: success, subgoals done, attempts, replans, steps, wall time, failure cause, latencies,
  ``privileged`` (bool: whether any component of the stack read the simulator's truth; ``oracle_components``
  names them), ``planner_source`` (what the planner's plans come from, e.g. ``learned``, ``vlm``, or
  ``vlm+learned_geometry``: a VLM's subgoals traced by the learned models), the ``instruction`` given, the ``judge_goals`` the env judges success by (its task's reference
  reading), and ``grounding``: the planner's own reading of the words (goals, ordered, confidence, refused,
  ``grounded_by``), None for a planner that grounds no goals.

When the episode ends at the env's success report, its step limit, on termination or at the rollout's step cap, the
agent records a ``final_verdict`` on the last observation: the active subgoal was cut short, and is verified there
without counting as a failure. ``agent_claims_success`` is True only when the agent confirmed success on its own
reads; ``agent_outcome`` says how the episode ended from the agent's side
(:class:`tandem.runtime.agent.AgentOutcome`: ``success``, ``not_confirmed``, ``gave_up``, ``refused``,
``planner_failed``, ``error``).

A failed episode (unstable simulation, NaN action, exhausted budgets, a crash) is returned as failed with its
reason, so a batch evaluation continues. An interrupt (Ctrl-C, SIGTERM, also when ctypes hides it in an
``ArgumentError``: :mod:`tandem.core.interrupts`) ends the episode where it is: the video is finished (it plays),
the log, memory and ``summary.json`` (``"interrupted": true``) are written, and :class:`EpisodeInterrupted`, a
KeyboardInterrupt, is raised with the result, so a batch stops.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tandem.core.errors import TandemError
from tandem.core.interrupts import interrupts_held, raised_by_interrupt
from tandem.core.lazy_images import materialize_images
from tandem.core.protocols import Env
from tandem.core.types import EpisodeLog, Observation
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.video import VideoWriter, compose_frame


@dataclass
class StepRecord:
    """One control step, as passed to ``run_episode``'s ``on_step`` callback.

    Attributes:
        step: 1-based index of this step.
        obs: observation the action was chosen from (LeRobot's frame convention: observation t, action t).
        action: ``float32 (A,)`` action sent to the env.
        next_obs: observation after the step.
        info: the env's step info (``success``, ``predicates``, ``perturbation``...).
        subgoal: the subgoal the action served (goal image and trace filled in), or None.
        agent: the agent (read its ``status``; do not mutate).
    """

    step: int
    obs: Observation
    action: np.ndarray
    next_obs: Observation
    info: dict[str, Any]
    subgoal: Any
    agent: HierarchicalAgent


@dataclass
class EpisodeResult:
    """Outcome of one episode.

    Attributes:
        summary: JSON-safe dict (see module docstring); ``summary["success"]`` is the env's ground truth.
        log: the step/event log.
        paths: artefact name -> path written (empty when ``out_dir`` is None).
    """

    summary: dict[str, Any]
    log: EpisodeLog
    paths: dict[str, str] = field(default_factory=dict)


class EpisodeInterrupted(KeyboardInterrupt):  # noqa: N818 - a KeyboardInterrupt, named as the event it is
    """An episode ended by Ctrl-C or SIGTERM, after its artefacts were written.

    Attributes:
        result: the :class:`EpisodeResult` up to the interrupt (``summary["interrupted"]`` is True).
    """

    def __init__(self, result: EpisodeResult):
        super().__init__(f"episode interrupted at step {result.summary.get('steps')}")
        self.result = result


def _percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    a = np.asarray(xs) * 1e3
    return {"p50_ms": float(np.percentile(a, 50)), "p90_ms": float(np.percentile(a, 90)),
            "p99_ms": float(np.percentile(a, 99)), "max_ms": float(a.max()), "n": len(xs)}


def run_episode(
    env: Env,
    agent: HierarchicalAgent,
    seed: int,
    out_dir: str | Path | None = None,
    record_video: bool = True,
    max_steps: int | None = None,
    meta: dict[str, Any] | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
    stop_on_success: bool = True,
    memory_db: str | Path | None = None,
) -> EpisodeResult:
    """Run one episode to its end and (optionally) write its artefacts.

    Args:
        env: a reset-able Env (simulation or robot).
        agent: the closed-loop agent; ``agent.reset`` is called here.
        seed: episode seed passed to ``env.reset``.
        out_dir: folder for the artefacts; None writes nothing.
        record_video: write ``episode.mp4`` (needs camera images in the observations).
        max_steps: a fixed control-step cap; None: ``env.spec.max_steps`` at reset, grown by the ``added_steps`` that
            a perturbation undoing finished work reports (and the agent is told:
            :meth:`HierarchicalAgent.extend_episode`).
        meta: extra metadata stored in the log and summary (config, variant names).
        on_step: callback after every env step with a :class:`StepRecord` (progress display, dataset writing).
        stop_on_success: end as soon as the env reports task success (robosuite/LIBERO convention).
        memory_db: SQLite memory store the agent's memory writes this episode to (a file, or a run directory
            holding ``memory.sqlite``); default ``<out_dir>/memory.sqlite`` when ``out_dir`` is given, else the
            memory's current store (if any).

    Raises:
        MemoryStoreError / MemorySchemaError: ``memory_db`` is not a usable memory store (before the episode
            starts; the file is left untouched).
        EpisodeInterrupted: Ctrl-C or SIGTERM during the episode, also one that a library raised as another
            exception, once the artefacts so far are written (see the module docstring).

    Returns:
        EpisodeResult. Never raises for episode-level failures: they are recorded as failed episodes
        with ``summary["failure"]`` set.
    """
    t_start = time.perf_counter()
    out = Path(out_dir) if out_dir is not None else None
    log = EpisodeLog(meta={"seed": int(seed), "privileged": agent.privileged,
                           "oracle_components": agent.oracle_components, **(meta or {})})
    summary: dict[str, Any] = {"seed": int(seed), "success": False, "failure": None, "steps": 0,
                               "privileged": agent.privileged, "oracle_components": agent.oracle_components,
                               "planner_source": agent.planner.source}
    writer: VideoWriter | None = None
    step = 0
    success = False
    interrupted = False
    failure: str | None = None
    perturbations: list[dict[str, Any]] = []
    if memory_db is None and out is not None:
        memory_db = out / "memory.sqlite"
    if memory_db is not None:
        agent.memory.open_store(memory_db)
    try:
        obs, _info = env.reset(seed=seed)
        spec = env.spec
        log.meta.update(task=spec.name, instruction=spec.instruction, judge_goals=list(spec.goals))
        summary.update(task=spec.name, instruction=spec.instruction, judge_goals=list(spec.goals))
        limit = max_steps if max_steps is not None else spec.max_steps
        fixed_cap = max_steps is not None
        agent.reset(spec, obs, meta=log.meta)
        if out is not None and record_video and obs.images:
            writer = VideoWriter(out / "episode.mp4", fps=1.0 / spec.control_dt)
        while step < limit:
            action = agent.act(obs)
            if action is None:
                break
            sg = agent.subgoal
            prev_obs = obs
            if on_step is not None:  # it reads the observation the action was chosen from after the step
                materialize_images(prev_obs)
            obs, _r, terminated, truncated, info = env.step(action)
            step += 1
            log.add_step(step=step, t=obs.t, subgoal_id=sg.id if sg else None, action=action, proprio=obs.proprio)
            agent.memory.record_step(step, obs.t, sg.id if sg else None, action, obs.proprio)
            if info.get("perturbation"):
                event = {k: v for k, v in info["perturbation"].items() if k != "step"}
                perturbations.append({"step": step, **event})
                agent.record_event("perturbation", step, **event)
                added = int(event.get("added_steps") or 0)
                if added and not fixed_cap:
                    limit += added
                    agent.extend_episode(added)
            if writer is not None:
                writer.add(compose_frame(obs, sg, header=f"{spec.name}  seed {seed}  step {step}  "
                                         f"attempts {agent.status.attempts}  replans {agent.status.replans}"))
            if on_step is not None:
                on_step(StepRecord(step, prev_obs, action, obs, info, sg, agent))
            success = bool(info.get("success", False))
            if success and stop_on_success:
                agent.stop("env reports task success", step, observation=obs)
                break
            if terminated or truncated:  # the active subgoal is verified on the last observation first
                agent.stop("env terminated" if terminated else "env step limit reached", step, observation=obs)
                break
        else:
            agent.stop(f"rollout step cap {limit} reached", step, observation=obs)
    except KeyboardInterrupt:
        interrupted = True
    except Exception as e:  # noqa: BLE001 - a crashed episode is a failed row, never a crashed batch
        # Ctrl-C or SIGTERM stops the batch, also hidden in another exception (e.g. ctypes.ArgumentError carrying the
        # KeyboardInterrupt of a signal during rendering); it is not a failed episode
        interrupted = raised_by_interrupt(e)
        if not interrupted and isinstance(e, TandemError):
            failure = f"{type(e).__name__}: {e}"
        elif not interrupted:
            failure = f"crash: {type(e).__name__}: {e}"
            log.add_event("traceback", step, text=traceback.format_exc(limit=8))
        if failure is not None and agent.task is not None:
            agent.stop(failure, step, error=True)
    finally:
        if writer is not None:
            writer.close()
    if interrupted:
        failure = "interrupted (Ctrl-C or SIGTERM)"
    if failure is not None and agent.task is not None:
        agent.stop(failure, step)
    with interrupts_held():  # a second Ctrl-C waits until the artefacts are whole
        result = _finish_episode(agent, log, summary, step, success, failure, interrupted, perturbations, t_start,
                                 out, memory_db, writer)
    if interrupted:
        raise EpisodeInterrupted(result)
    return result


def _finish_episode(agent: HierarchicalAgent, log: EpisodeLog, summary: dict[str, Any], step: int, success: bool,
                    failure: str | None, interrupted: bool, perturbations: list[dict[str, Any]], t_start: float,
                    out: Path | None, memory_db: str | Path | None, writer: VideoWriter | None) -> EpisodeResult:
    """Complete the summary and log of an ended episode, close its memory episode (left open after an interrupt,
    so that the store marks it ``interrupted``) and write the artefacts to ``out`` (None: none)."""
    status = agent.status
    if failure is None and not success:
        failure = status.end_reason or "task not achieved"
    summary.update(
        success=bool(success),
        failure=None if success else failure,
        steps=step,
        subgoals_done=status.subgoals_done,
        attempts=status.attempts,
        replans=status.replans,
        plans=status.plans,
        agent_claims_success=status.claims_success,
        agent_outcome=status.outcome,
        agent_end_reason=status.end_reason,
        perturbations=perturbations,
        recovered=bool(success and perturbations),
        wall_time_s=round(time.perf_counter() - t_start, 3),
        plan_latency=_percentiles(status.plan_latency_s),
        action_latency=_percentiles(status.action_latency_s),
        verdicts=status.verdicts,
        hold_steps=status.hold_steps,
        grounding=status.grounding,
        interrupted=interrupted,
    )
    if not interrupted:
        agent.memory.finish_episode(bool(success), {k: summary[k] for k in (
            "seed", "success", "failure", "steps", "subgoals_done", "attempts", "replans", "plans", "wall_time_s")})
    for ev in agent.memory.events():
        log.events.append(dict(ev))
    log.add_event("episode_end", step, success=bool(success), failure=summary["failure"])

    paths: dict[str, str] = {}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        paths["episode"] = str(log.save_jsonl(out / "episode.jsonl"))
        paths["memory"] = str(agent.memory.save(out / "memory.jsonl"))
        if memory_db is not None:
            paths["memory_db"] = str(memory_db)
        if writer is not None:
            paths["video"] = str(writer.path)
        summary["paths"] = paths
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        paths["summary"] = str(out / "summary.json")
    return EpisodeResult(summary=summary, log=log, paths=paths)
