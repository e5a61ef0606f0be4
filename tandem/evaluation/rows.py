"""The results row of one episode: identification, outcome and timing columns, and the failure kind.

Rows are deterministic given (task, seed, perturbation, variant) except for :data:`TIMING_COLUMNS`. The boolean
``privileged`` column says whether the stack that ran read the simulator's truth (any oracle component); it is
null for a row whose stack was never built (``build_error``, ``worker_crash``). Each row records the ``instruction``
given, the ``judge_goals`` the env judged success by, the planner's ``grounding`` of the words (who grounded which
goals, or its refusal), ``agent_outcome`` (how the agent says the episode ended: ``success`` only when it confirmed
every goal, ``not_confirmed``, ``gave_up``, ``refused``, ``planner_failed``, ``error``; :class:`tandem.runtime.agent.AgentOutcome`)
and ``false_success_claim``: the agent claimed success and the simulator says the task failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tandem.evaluation.suite import EpisodeJob, perturb_label

#: Columns that depend on the machine and the schedule, not on (task, seed, perturbation, variant).
TIMING_COLUMNS: tuple[str, ...] = (
    "wall_time_s", "build_time_s", "plan_latency_p50_ms", "plan_latency_p90_ms", "plan_latency_max_ms",
    "action_latency_p50_ms", "action_latency_p90_ms", "action_latency_p99_ms", "worker", "backend", "finished_at",
    "failure_detail",
)
#: Failure kinds a row can carry (``failure_kind``); None on success.
FAILURE_KINDS: tuple[str, ...] = (
    "task_not_achieved", "gave_up", "step_cap", "planner_error", "instruction_refused", "sim_unstable", "nan_action",
    "placement", "tandem_error", "crash", "build_error", "worker_crash",
)
#: Failure kinds that ``resume.retry_errors=true`` runs again (infrastructure, not the policy).
RETRYABLE_KINDS: tuple[str, ...] = ("build_error", "worker_crash")
#: Failure kinds that are no result: rows of an older tandem that recorded a stack it could not build (now a build
#: error that stops the run, :mod:`tandem.evaluation.episode`). A resumed run always runs their episodes again.
NOT_RESULT_KINDS: tuple[str, ...] = ("build_error",)
#: ``failure`` of a ``worker_crash`` row (the same on every backend; ``failure_detail`` says more).
WORKER_CRASH_REASON = "worker process died while running this episode (segfault, os._exit or killed)"


def classify_failure(failure: str | None, success: bool) -> str | None:
    """Map a ``run_episode`` failure string to one of :data:`FAILURE_KINDS` (None on success)."""
    if success:
        return None
    f = failure or ""
    for prefix, kind in (("SimUnstableError", "sim_unstable"), ("NonFiniteActionError", "nan_action"),
                         ("PlacementError", "placement"), ("crash:", "crash"), ("gave up", "gave_up"),
                         ("planner failed", "planner_error"), ("instruction refused", "instruction_refused"),
                         ("rollout step cap", "step_cap"),
                         ("env step limit", "step_cap")):
        if f.startswith(prefix):
            return kind
    if ":" in f.split(" ")[0] and f.split(":")[0].endswith("Error"):
        return "tandem_error"
    return "task_not_achieved"


def n_reference_subgoals(goals: Sequence[str]) -> int:
    """Subgoals of the reference plan: 2 per goal (pick + stack/place/insert)."""
    return 2 * len(goals)


def _base_row(job: EpisodeJob) -> dict[str, Any]:
    p = job.perturb or {}
    return {
        "key": job.key, "variant": job.variant, "task": job.task, "seed": job.seed, "setting": job.setting,
        "perturb": perturb_label(job.perturb), "perturb_name": p.get("name", "none"),
        "perturb_after_success": p.get("after_success") if p and p.get("at_step") is None else None,
        "perturb_at_step": p.get("at_step"), **job.labels, "config_hash": job.config_hash,
    }


def failed_row(job: EpisodeJob, kind: str, reason: str, **extra: Any) -> dict[str, Any]:
    """A row for an episode that produced no ``run_episode`` summary (build error, dead worker)."""
    row = {**_base_row(job), "success": False, "privileged": None, "failure_kind": kind, "failure": reason,
           "steps": 0, "subgoals_done": 0, "n_subgoals_ref": None, "progress": 0.0, "attempts": 0, "replans": 0, "plans": 0,
           "skill_results": {}, "perturbed": False, "perturb_step": None, "recovered": False,
           "agent_claims_success": False, "agent_outcome": None, "false_success_claim": False,
           "instruction": None, "judge_goals": None, "grounding": None}
    row.update({c: None for c in TIMING_COLUMNS})
    row.update(extra)
    return row


def skill_results(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Per skill ``[successful verdicts, verdicts]`` of an episode, from its verdicts' ``subgoal`` signatures
    (``"pick(red)"`` counts for ``pick``): the subgoal success rate of each skill, over judged attempts.

    An attempt cut short by the episode's end (``cut_short``: the task succeeded, or a step limit) was never judged,
    and does not count: a learned verifier that waits for a released cube to settle would otherwise count the last
    subgoal of every successful episode as failed. (Rows written before ``cut_short``: an ``at_episode_end`` verdict
    that was still uncertain is left out.)"""
    out: dict[str, list[int]] = {}
    for v in verdicts:
        if v.get("cut_short") or (v.get("at_episode_end") and v.get("uncertain")):
            continue
        skill = str(v.get("subgoal", "?")).split("(")[0]
        acc = out.setdefault(skill, [0, 0])
        acc[0] += int(bool(v.get("success")))
        acc[1] += 1
    return out


def row_from_result(job: EpisodeJob, summary: Mapping[str, Any], goals: Sequence[str]) -> dict[str, Any]:
    """The results row of one finished episode (see module docstring for the columns)."""
    n_ref = n_reference_subgoals(goals)
    done = int(summary.get("subgoals_done", 0))
    perts = summary.get("perturbations") or []
    pl, al = summary.get("plan_latency") or {}, summary.get("action_latency") or {}
    success = bool(summary.get("success"))
    row = {
        **_base_row(job),
        "success": success,
        "privileged": None if summary.get("privileged") is None else bool(summary["privileged"]),
        "failure_kind": classify_failure(summary.get("failure"), success),
        "failure": None if success else str(summary.get("failure")),
        "steps": int(summary.get("steps", 0)),
        "subgoals_done": done,
        "n_subgoals_ref": n_ref,
        "progress": 1.0 if success else (min(done / n_ref, 1.0) if n_ref else 0.0),
        "attempts": int(summary.get("attempts", 0)),
        "replans": int(summary.get("replans", 0)),
        "plans": int(summary.get("plans", 0)),
        "skill_results": skill_results(summary.get("verdicts") or []),
        "perturbed": bool(perts),
        "perturb_step": int(perts[0]["step"]) if perts else None,
        "recovered": bool(summary.get("recovered", False)),
        "agent_claims_success": bool(summary.get("agent_claims_success", False)),
        "agent_outcome": summary.get("agent_outcome"),
        "instruction": summary.get("instruction"),
        "judge_goals": list(goals),
        "grounding": summary.get("grounding"),
        "false_success_claim": bool(summary.get("agent_claims_success", False)) and not success,
        "wall_time_s": summary.get("wall_time_s"),
        "build_time_s": None,
        "plan_latency_p50_ms": pl.get("p50_ms"), "plan_latency_p90_ms": pl.get("p90_ms"),
        "plan_latency_max_ms": pl.get("max_ms"),
        "action_latency_p50_ms": al.get("p50_ms"), "action_latency_p90_ms": al.get("p90_ms"),
        "action_latency_p99_ms": al.get("p99_ms"),
        "worker": None, "backend": None, "finished_at": None,
    }
    return row
