"""HierarchicalAgent: the closed loop of planner, executor, verifier and task memory.

This is the only module that knows all four parts. Each subgoal goes through:

1. plan (at the start) or replan (after every verdict: a receding-horizon planner in the style of
   LoHo-Manip, so a failed subgoal stays in ``remaining`` and a regressed one reappears there);
2. a GoalProducer fills in the subgoal's goal image and keypoint trace (VISTA / LoHo-Manip);
3. the executor is conditioned on the subgoal (its queued actions are dropped) and stepped until it
   reports the subgoal done or the per-subgoal step budget runs out;
4. the verifier judges the subgoal from the observations before and after it (Goal2Skill). A verdict the
   verifier marks ``uncertain`` (a calibrated verifier below its confidence threshold) is not final: it is recorded
   in memory as a ``verdict_uncertain`` event, the executor keeps running the same subgoal for
   ``AgentConfig.recheck_steps`` more control steps, and the subgoal is verified again, up to
   ``AgentConfig.verify_rechecks`` times; a verdict still uncertain after that counts as a failure, never as a
   success (the receding-horizon planner then re-perceives the scene and decides what remains);
5. memory records the verdict; the agent advances, retries or gives up after too many attempts.

**Success is claimed only on evidence.** A plan with nothing remaining (``Plan.claims_complete``) does not end the
episode: the agent holds still and reads the goals ``AgentConfig.confirm_reads`` times,
``AgentConfig.confirm_gap_steps`` control steps apart (``Planner.read_goals``: a fresh read of every goal of the
planner's grounding of the instruction and of the presence of every object they name; the agent never reads
``TaskSpec.goals``). It claims success only when every read confirms every goal true and confident and every goal
object present (:func:`tandem.core.evidence.confirmation_gaps`); each read is a ``goal_read`` memory event. A read
that does not confirm is a ``claim_not_confirmed`` event: the agent replans after the gap and keeps working, and after
``max_attempts_per_subgoal`` unconfirmed claims it ends the episode as ``not_confirmed``. How the episode ended, from
the agent's side, is :attr:`AgentStatus.outcome` (:class:`AgentOutcome`); ``claims_success`` is True only for a
confirmed ``success``.

**The end of the episode.** When the episode is ended from outside (:meth:`HierarchicalAgent.stop`: the env reports
success, its step limit, the rollout's cap) while a subgoal runs, that attempt was cut short, not finished: it is
verified once more on the final state and recorded as a ``final_verdict`` memory event (``on_final_state: true``,
``cut_short: true``), never as a failure, so neither the episode's failures nor the lessons of later episodes count it.

The agent is a step-level state machine (``act(obs) -> action``) so the same code drives a simulator
rollout (``tandem.runtime.rollout``) and a real robot loop (the ROS 2 bridge). It never reads
``Observation.privileged`` itself, and it hands each component whose ``is_oracle`` is False observations with the
privileged state withheld (:mod:`tandem.core.privileged`): reading it raises ``PrivilegedAccessError`` naming the
component. :attr:`HierarchicalAgent.privileged` says whether the stack reads simulator truth anywhere.

Each attempt runs under the memory's retry policy (``TaskMemory.retry_policy``: e.g. half speed after repeated
slips, or from the first attempt where lessons of earlier episodes say so). With
``AgentConfig.async_planning`` the planner runs in a worker thread (:mod:`tandem.runtime.planning_worker`) and
``act`` never calls it: it returns the hold action until the first plan, goes on with the current plan's next
subgoal after a success while the new plan is made, holds after a failure until it arrives, and switches to a plan
that wants another subgoal at the next chunk boundary (``AgentConfig.plan_switch_steps``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from tandem.core.errors import ConfigError, NonFiniteActionError, TandemError
from tandem.core.evidence import GoalReading, confirmation_gaps, predicate_args
from tandem.core.grounding import Grounding
from tandem.core.interrupts import reraise_interrupt
from tandem.core.lazy_images import materialize_images
from tandem.core.privileged import observation_for, task_for, withhold_goals
from tandem.core.protocols import Executor, GoalProducer, Planner, TaskMemory, Verifier, require_protocol
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.config import AgentConfig
from tandem.runtime.planning_worker import PlanningWorker


class AgentOutcome(StrEnum):
    """How an episode ended, as the agent tells it (``AgentStatus.outcome``, ``agent_outcome`` in summaries and rows).

    * ``success``: every grounded goal confirmed true and confident, every goal object present, in
      ``AgentConfig.confirm_reads`` reads (the only outcome that claims success);
    * ``not_confirmed``: the episode ended (the env's success flag or step limit, the rollout's cap) before the agent
      confirmed success, or its claims of completion failed confirmation ``max_attempts_per_subgoal`` times;
    * ``gave_up``: a subgoal used up its attempts, the planner its calls, or the planner gave no usable plan;
    * ``refused``: the planner refused the instruction before anything moved;
    * ``planner_failed``: the planner raised;
    * ``error``: the episode failed (unstable simulation, non-finite action, crash);
    * ``running``: not ended yet.
    """

    SUCCESS = "success"
    NOT_CONFIRMED = "not_confirmed"
    GAVE_UP = "gave_up"
    REFUSED = "refused"
    PLANNER_FAILED = "planner_failed"
    ERROR = "error"
    RUNNING = "running"


@dataclass
class AgentStatus:
    """What the agent has done so far in the episode (JSON-safe via ``to_json``).

    ``outcome``: an :class:`AgentOutcome` value; ``claims_success`` is True only for ``success``;
    ``hold_steps``: control steps the agent returned its hold action (waiting for a plan with async planning, or
    between the reads that confirm success); ``plans_discarded``: plans that arrived after a later verdict had made
    them stale (async planning); ``unconfirmed_claims``: plans that claimed the task complete whose goal reads did not
    confirm it; ``verdicts``: one entry per judged attempt, the one cut short by the episode's end included
    (``at_episode_end``, ``cut_short`` and ``on_final_state`` True).
    """

    finished: bool = False
    claims_success: bool = False
    outcome: str = AgentOutcome.RUNNING.value
    end_reason: str = ""
    unconfirmed_claims: int = 0
    subgoals_done: int = 0
    attempts: int = 0
    replans: int = 0
    plans: int = 0
    uncertain_verdicts: int = 0
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    hold_steps: int = 0
    plans_discarded: int = 0
    plan_latency_s: list[float] = field(default_factory=list)
    action_latency_s: list[float] = field(default_factory=list)
    grounding: dict[str, Any] | None = None  # the planner's reading of the instruction (Grounding.to_json)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict of the status, without the per-step latency lists."""
        return {k: v for k, v in self.__dict__.items() if k not in ("plan_latency_s", "action_latency_s")}


class HierarchicalAgent:
    """Closed-loop hierarchical agent (Goal2Skill-style planner + memory + verifier over an executor).

    Args:
        planner: produces the done/remaining Plan (oracle, VLM or learned).
        verifier: judges each subgoal (oracle, VLM or learned).
        executor: low-level policy (scripted expert, diffusion policy, LeRobot policy).
        memory: structured task memory; every decision is recorded in it.
        goal_producer: fills each subgoal's goal image / trace before execution (optional).
        config: budgets.
        hold_action: ``float32 (A,)`` action that keeps the robot still, returned while waiting for a plan with
            ``config.async_planning`` (zeros for robosuite's OSC delta actions: no motion, gripper kept as it is).

    Use: ``reset(task, obs)`` once, then ``act(obs)`` every control step until ``status.finished``; ``close()``
    at the end (stops the planning worker). Each attempt runs under the memory's ``retry_policy``: its
    ``speed_scale`` multiplies every action component but the last (the gripper; the
    :data:`tandem.core.types.OSC_ACTION_LAYOUT` convention).

    Raises:
        ConfigError: a component that lacks a member of its protocol (e.g. ``is_oracle``), named;
            ``config.async_planning`` without a ``hold_action``. (Without a ``hold_action`` the agent cannot wait
            between confirmation reads either: with ``config.confirm_reads`` > 1 it then never claims success, and
            says so in the end reason.)
    """

    def __init__(
        self,
        planner: Planner,
        verifier: Verifier,
        executor: Executor,
        memory: TaskMemory,
        goal_producer: GoalProducer | None = None,
        config: AgentConfig | None = None,
        hold_action: np.ndarray | None = None,
        truth_sink: Any = None,
    ):
        for component, protocol, role in ((planner, Planner, "planner"), (verifier, Verifier, "verifier"),
                                          (executor, Executor, "executor"), (memory, TaskMemory, "memory")):
            require_protocol(component, protocol, role)
        if goal_producer is not None:
            require_protocol(goal_producer, GoalProducer, "goal producer")
        self.planner, self.verifier, self.executor, self.memory = planner, verifier, executor, memory
        self.goal_producer = goal_producer
        # SIM-ONLY oracle helper (tandem.runtime.oracle_sim_vlm.OracleTruthPublisher): sent every full observation
        if truth_sink is not None and not truth_sink.is_oracle:
            raise ConfigError("a truth sink reads the simulator's truth: it must declare is_oracle = True")
        self.truth_sink = truth_sink
        self.config = config or AgentConfig()
        # --- asynchronous planning: worker, hold action, plan waiting for a chunk boundary, memory version ---
        self._worker: PlanningWorker | None = None
        self._hold = None if hold_action is None else np.asarray(hold_action, dtype=np.float32).copy()
        if self.config.async_planning:
            if self._hold is None:
                raise ConfigError("AgentConfig.async_planning needs a hold_action (the action that keeps the robot "
                                  "still while no plan is there), e.g. np.zeros(env.action_dim) for OSC delta actions")
            self._worker = PlanningWorker(planner)
        self._pending_plan: Plan | None = None
        self._version = 0
        self._speed = 1.0
        self.task: TaskSpec | None = None
        self._executor_task: TaskSpec | None = None  # the task as the executor may see it (goals withheld if not oracle)
        self.plan: Plan = Plan()
        self.subgoal: Subgoal | None = None
        self.status = AgentStatus()
        self._before: Observation | None = None
        self._steps_in_subgoal = 0
        self._step = 0
        self._budget = self.config.subgoal_step_budget or 0
        self._rechecks = 0  # re-checks of uncertain verdicts spent on the active attempt
        self._recheck_wait = 0  # control steps left before the next re-check
        self._rechecking = False  # the active attempt's last verdict was uncertain; verify again after the wait
        self._read_achieved_at: int | None = None  # step of the active attempt's first (uncertain) read as achieved
        self._confirming = 0  # confirmation reads that confirmed so far (a plan claimed the task complete)
        self._next_read_step: int | None = None  # when the next confirmation read is due
        self._replan_at_step: int | None = None  # when to replan after an unconfirmed claim

    @property
    def oracle_components(self) -> list[str]:
        """The roles whose component reads the simulator's truth (``is_oracle``), e.g. ``["planner", "executor"]``."""
        parts: list[tuple[str, Planner | Verifier | Executor | GoalProducer | None]] = [
            ("planner", self.planner), ("verifier", self.verifier), ("executor", self.executor),
            ("goal producer", self.goal_producer)]
        roles = [role for role, c in parts if c is not None and c.is_oracle]
        return roles + ([self.truth_sink.role] if self.truth_sink is not None else [])

    @property
    def privileged(self) -> bool:
        """Whether this stack reads the simulator's truth anywhere (any component is an oracle). Recorded with every
        result: a privileged stack's success does not transfer to a robot."""
        return bool(self.oracle_components)

    # ------------------------------------------------------------------ public API
    def reset(self, task: TaskSpec, observation: Observation, meta: dict[str, Any] | None = None) -> None:
        """Start an episode: reset executor and memory, make the first plan (or, with async planning, request it),
        start its first subgoal."""
        self.task = task
        self._budget = self.config.step_budget(task)
        self.status = AgentStatus()
        self.plan, self.subgoal, self._before = Plan(), None, None
        self._steps_in_subgoal, self._step = 0, observation.step
        self._rechecks, self._recheck_wait, self._rechecking = 0, 0, False
        self._clear_confirmation()
        self.memory.start_episode(withhold_goals(task, "memory"), meta)
        if self.truth_sink is not None:  # before anything plans: the oracle-sim VLM answers from this truth
            self.truth_sink.reset(task)
            self.truth_sink.publish(observation)
        self._pending_plan, self._version, self._speed = None, 0, 1.0
        planner_task = task_for(self.planner, task, "planner")
        if self._worker is not None:
            self._worker.reset(planner_task)  # between episodes: waits for a running request, drops queued ones
        else:
            self.planner.reset(planner_task)
        self.verifier.reset(task_for(self.verifier, task, "verifier"), self.memory)  # model verifiers log to memory
        self.executor.reset()
        self._executor_task = task_for(self.executor, task, "executor")  # once per episode, not per subgoal
        if self._record_grounding(self.planner.grounding):
            return
        if self._worker is not None:
            self._request_plan(observation)
        else:
            self._replan(observation, after_failure=False)

    def _record_grounding(self, grounding: Grounding | None) -> bool:
        """Record the planner's reading of the instruction in memory and the status; True when it refused the
        instruction, which ends the episode before anything moves (the refusal's one line is the end reason)."""
        if grounding is None:
            return False
        self.status.grounding = grounding.to_json()
        self.memory.record_event("grounding", self._step, **grounding.to_json())
        if grounding.refused is None:
            return False
        self.memory.record_event("instruction_refused", self._step, reason=grounding.refused,
                                 grounded_by=grounding.grounded_by)
        self._finish(AgentOutcome.REFUSED, f"instruction refused: {grounding.refused}")
        return True

    def act(self, observation: Observation) -> np.ndarray | None:
        """One control step. Returns the ``float32 (A,)`` action to apply, or None once finished.

        Verifies the current subgoal when the executor reports it done or its step budget is spent,
        then replans and starts the next subgoal, all within this call (with async planning: requests the plan
        and collects it on a later call, never waiting; the hold action is returned while no subgoal runs).
        After an uncertain verdict the subgoal stays active and is verified again ``AgentConfig.recheck_steps``
        control steps later.

        Raises:
            ConfigError: if called before ``reset``.
            NonFiniteActionError: if the executor returns NaN/inf (the rollout records it as a failure).
        """
        if self.task is None:
            raise ConfigError("HierarchicalAgent.act() called before reset()")
        self._step = observation.step
        if self.truth_sink is not None:
            self.truth_sink.publish(observation)
        if self._worker is not None:
            self._poll_plan(observation)
        while not self.status.finished and self.subgoal is not None and self._verification_due():
            self._finish_subgoal(observation)
        if not self.status.finished and self.subgoal is None:
            self._advance_confirmation(observation)
        if self._worker is not None and not self.status.finished:
            self._switch_to_pending(observation)
        if self.status.finished:
            return None
        if self.subgoal is None:  # waiting for a plan (async) or between confirmation reads
            assert self._hold is not None
            self.status.hold_steps += 1
            return self._hold.copy()
        t0 = time.perf_counter()
        action = np.array(self.executor.select_action(observation_for(self.executor, observation, "executor")),
                          dtype=np.float32)
        if self._speed != 1.0:  # the attempt's retry policy: slower motion, gripper command unchanged
            action[:-1] *= self._speed
        self.status.action_latency_s.append(time.perf_counter() - t0)
        if not np.all(np.isfinite(action)):
            raise NonFiniteActionError(f"executor returned a non-finite action {action.tolist()} "
                                       f"for subgoal {self.subgoal.signature}")
        self._steps_in_subgoal += 1
        self._recheck_wait = max(self._recheck_wait - 1, 0)
        return action

    def close(self) -> None:
        """Stop the planning worker thread, if any (a running plan finishes in the background)."""
        if self._worker is not None:
            self._worker.close()

    def record_event(self, kind: str, step: int, **data: Any) -> None:
        """Record an external event (perturbation, env error) in memory."""
        self.memory.record_event(kind, step, **data)

    def extend_episode(self, steps: int) -> None:
        """The episode's step limit grew by ``steps`` control steps (a perturbation undid finished work:
        ``RobosuiteEnv(perturbation_budget=True)``). With ``AgentConfig.subgoal_step_budget`` None an attempt spans
        the whole episode (a flat policy's one subgoal), so its budget grows too; a per-attempt budget is unchanged.

        Raises:
            ConfigError: ``steps`` < 0.
        """
        if steps < 0:
            raise ConfigError(f"HierarchicalAgent.extend_episode: steps must be >= 0, got {steps}")
        if self.config.subgoal_step_budget is None:
            self._budget += int(steps)

    def stop(self, reason: str, step: int, observation: Observation | None = None, error: bool = False) -> None:
        """End the episode from outside (env success or truncation, error). Recorded in memory.

        With ``observation`` (the final state), a ``final_verdict`` memory event is recorded on it: the active
        subgoal, cut short, verified once more (:meth:`_record_final_verdict`). The outcome is ``error`` when
        ``error`` (the episode failed), else ``not_confirmed``: success is claimed only by the agent's own confirmed
        reads, never because the episode was stopped.
        """
        self._step = step
        if observation is not None and not self.status.finished:
            self._record_final_verdict(observation, reason)
        if not self.status.finished:
            self._finish(AgentOutcome.ERROR if error else AgentOutcome.NOT_CONFIRMED, reason)
        self.memory.record_event("stop", step, reason=reason)

    # ------------------------------------------------------------------ internals
    def _verification_due(self) -> bool:
        """Whether the active subgoal is verified now: a re-check whose wait is over, or (no re-check pending) its
        step budget is spent or the executor reports it done."""
        if self._recheck_wait > 0:
            return False
        if self._rechecking:
            return True
        return self._steps_in_subgoal >= self._budget or (self._steps_in_subgoal > 0 and self.executor.subgoal_done())

    def _replan(self, observation: Observation, after_failure: bool) -> None:
        if self.status.plans >= self.config.max_plans:
            self._finish(AgentOutcome.GAVE_UP, f"gave up: planner called {self.status.plans} times (max_plans)")
            return
        t0 = time.perf_counter()
        try:
            plan = self.planner.plan(observation_for(self.planner, observation, "planner"), self.memory)
        except TandemError as e:  # planners should fall back themselves; this is the last line of defence
            reraise_interrupt(e)
            self.memory.record_event("planner_error", self._step, error=str(e))
            self._finish(AgentOutcome.PLANNER_FAILED, f"planner failed: {e}")
            return
        self.status.plan_latency_s.append(time.perf_counter() - t0)
        nxt = self._adopt(plan, after_failure, observation)
        if nxt is not None:
            self._try_start(nxt, observation)

    def _adopt(self, plan: Plan, after_failure: bool, observation: Observation) -> Subgoal | None:
        """Count and record a new plan; returns its next subgoal, or None: a plan that claims the task complete
        starts the confirmation reads on ``observation`` (:meth:`_start_confirmation`), any other plan with nothing
        remaining ends the episode (never as success)."""
        self.status.plans += 1
        self.status.replans += int(after_failure)
        self.plan = plan
        self.memory.record_plan(plan, self._step, source=self.planner.source)
        nxt = plan.next
        if nxt is None:
            if plan.claims_complete:
                self._start_confirmation(observation)
            else:  # an empty plan, or a fallback with nothing left to execute, never counts as success
                what = "a fallback plan with nothing remaining" if plan.fallback else "an empty plan"
                self._finish(AgentOutcome.GAVE_UP,
                             f"planner gave no usable plan ({what}): {plan.rationale[:200]}".rstrip(": "))
        return nxt

    # ------------------------------------------------------------------ confirmation of success
    def _clear_confirmation(self) -> None:
        self._confirming, self._next_read_step, self._replan_at_step = 0, None, None

    def _goals_to_confirm(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(goals, objects)``: the goals of the planner's grounding of the instruction (never ``TaskSpec.goals``)
        and the task objects they name; both empty for a planner that grounds no goals."""
        grounding = self.planner.grounding
        if grounding is None or not grounding.ok:
            return (), ()
        assert self.task is not None
        known = set(self.task.objects)
        objects = tuple(dict.fromkeys(a for g in grounding.goals for a in predicate_args(g) if a in known))
        return tuple(grounding.goals), objects

    def _start_confirmation(self, observation: Observation) -> None:
        """The plan says nothing remains: take the first confirmation read now."""
        self._clear_confirmation()
        self.memory.record_event("completion_claimed", self._step, reads_needed=self.config.confirm_reads,
                                 gap_steps=self.config.confirm_gap_steps)
        self._take_confirmation_read(observation)

    def _advance_confirmation(self, observation: Observation) -> None:
        """With no subgoal running: take a confirmation read, or replan after an unconfirmed claim, when due."""
        if self._next_read_step is not None and self._step >= self._next_read_step:
            self._take_confirmation_read(observation)
        elif self._replan_at_step is not None and self._step >= self._replan_at_step:
            self._replan_at_step = None
            if self._worker is None:
                self._replan(observation, after_failure=True)
            else:
                self._request_plan(observation)

    def _read_goals(self, observation: Observation) -> GoalReading | None:
        """The planner's read of the goals on ``observation`` (privileged state withheld from a non-oracle)."""
        return self.planner.read_goals(observation_for(self.planner, observation, "planner"), self.memory)

    def _take_confirmation_read(self, observation: Observation) -> None:
        """Read the goals; success once ``confirm_reads`` reads confirmed them, else the next read after the gap, or,
        on a read that does not confirm, :meth:`_claim_not_confirmed`."""
        goals, objects = self._goals_to_confirm()
        reading = self._read_goals(observation)
        gaps = confirmation_gaps(reading, goals, objects)
        n = self._confirming + 1
        self.memory.record_event("goal_read", self._step, read=n, of=self.config.confirm_reads, confirms=not gaps,
                                 gaps=gaps, reading=None if reading is None else reading.to_json())
        if gaps:
            self._claim_not_confirmed(gaps, observation)
            return
        self._confirming = n
        if n >= self.config.confirm_reads:
            self._finish(AgentOutcome.SUCCESS, f"every goal ({', '.join(goals)}) confirmed true and confident, "
                                               f"objects present, in {n} read(s) {self.config.confirm_gap_steps} "
                                               "steps apart")
        elif self._hold is None:
            self._finish(AgentOutcome.NOT_CONFIRMED, f"success not confirmed: read {n} of {self.config.confirm_reads} "
                                                     "confirmed, but the agent has no hold_action to wait still with "
                                                     "for the next read")
        else:
            self._next_read_step = self._step + self.config.confirm_gap_steps

    def _claim_not_confirmed(self, gaps: list[str], observation: Observation) -> None:
        """A read did not confirm the plan's claim: replan after the gap (keep working), or end as ``not_confirmed``
        after ``max_attempts_per_subgoal`` such claims."""
        self._clear_confirmation()
        self.status.unconfirmed_claims += 1
        n = self.status.unconfirmed_claims
        self.memory.record_event("claim_not_confirmed", self._step, gaps=gaps, claims=n,
                                 of=self.config.max_attempts_per_subgoal)
        if n >= self.config.max_attempts_per_subgoal:
            self._finish(AgentOutcome.NOT_CONFIRMED, f"success not confirmed after {n} claim(s): {'; '.join(gaps)}")
            return
        wait = self.config.confirm_gap_steps if self._hold is not None else 0
        self._replan_at_step = self._step + wait
        if wait == 0:  # no hold action to wait with (confirm_reads=1): replan at once
            self._advance_confirmation(observation)

    def _try_start(self, nxt: Subgoal, observation: Observation) -> None:
        """Start ``nxt``, or end the episode if it has used up its attempts."""
        attempts = self.memory.attempts(nxt)
        if attempts >= self.config.max_attempts_per_subgoal:
            self._finish(AgentOutcome.GAVE_UP, f"gave up: {nxt.signature} failed {attempts} times")
            return
        self._start_subgoal(nxt, observation)

    def _start_subgoal(self, subgoal: Subgoal, observation: Observation) -> None:
        if self.goal_producer is not None:
            planned_trace, planned_trace_3d = subgoal.trace, subgoal.trace_3d
            subgoal = self.goal_producer.produce(
                subgoal, observation_for(self.goal_producer, observation, "goal producer"))
            if planned_trace is not None:  # a trace the planner predicted wins over the producer's
                subgoal.trace = planned_trace
            if planned_trace_3d is not None:
                subgoal.trace_3d = planned_trace_3d
        self._clear_confirmation()  # a new subgoal: any claim of completion is void
        self.subgoal = subgoal
        self._before = materialize_images(observation)  # the verifier reads it after the simulator moved on
        self._steps_in_subgoal = 0
        self._rechecks, self._recheck_wait, self._rechecking = 0, 0, False
        self._read_achieved_at = None
        policy = self.memory.retry_policy(subgoal)
        self._speed = float(policy.speed_scale)
        attempt = self.memory.record_attempt(subgoal, self._step, policy)
        self.status.attempts += 1
        self.executor.set_subgoal(subgoal, self._executor_task)
        self.memory.record_event("subgoal_start", self._step, subgoal=subgoal.to_json(), attempt=attempt)

    def _verify_active(self, observation: Observation, note: str = "") -> Verdict | None:
        """Verify the active subgoal against ``observation``, record the verdict, clear the subgoal.

        An uncertain verdict (``Verdict.uncertain``) with re-checks left is recorded as a ``verdict_uncertain``
        event and deferred: the subgoal stays active, and None is returned. One left after the re-checks (or of an
        attempt interrupted by a new plan: ``note``) becomes a failure. (An attempt cut short by the episode's end
        is not judged here: :meth:`_record_final_verdict`.)

        ``note``: prefixed to the verdict's reason (e.g. ``"interrupted by a new plan"``)."""
        subgoal = self.subgoal
        assert subgoal is not None and self._before is not None
        verdict: Verdict = self.verifier.verify(observation_for(self.verifier, self._before, "verifier"),
                                                observation_for(self.verifier, observation, "verifier"), subgoal)
        if verdict.uncertain:
            self.status.uncertain_verdicts += 1
            if verdict.success and self._read_achieved_at is None:
                self._read_achieved_at = self._step
            if not note and self._rechecks < self.config.verify_rechecks:
                self._rechecks += 1
                self._rechecking, self._recheck_wait = True, self.config.recheck_steps
                self.memory.record_event("verdict_uncertain", self._step, subgoal=subgoal.signature,
                                         recheck=self._rechecks, of=self.config.verify_rechecks,
                                         verdict=verdict.to_json(), recheck_in_steps=self.config.recheck_steps)
                return None
            verdict = Verdict(False, verdict.confidence,
                              f"still uncertain after {self._rechecks} re-check(s), not taken as success: "
                              f"{verdict.reason}", verdict.source, uncertain=True)
        self._rechecking, self._recheck_wait = False, 0
        if self._steps_in_subgoal >= self._budget and not verdict.success:
            verdict = Verdict(False, verdict.confidence,
                              f"step budget of {self._budget} spent; {verdict.reason}",
                              verdict.source, uncertain=verdict.uncertain)
        if not verdict.success and self._read_achieved_at is not None and not verdict.uncertain:
            verdict = Verdict(False, verdict.confidence, f"moved away after it was read achieved at step "
                                                         f"{self._read_achieved_at}; {verdict.reason}", verdict.source)
        if note:
            verdict = Verdict(verdict.success, verdict.confidence, f"{note}; {verdict.reason}", verdict.source,
                              uncertain=verdict.uncertain)
        self._version += 1
        self.memory.record_verdict(subgoal, verdict, self._step)
        self.status.verdicts.append({"step": self._step, "subgoal": subgoal.signature, **verdict.to_json(),
                                     "at_episode_end": False})
        self.status.subgoals_done += int(verdict.success)
        if not verdict.success:  # what the verifier saw becomes a fact about each object involved
            for obj in subgoal.args:
                self.memory.record_fact(obj, f"{subgoal.signature} failed at step {self._step}: {verdict.reason}",
                                        self._step, source="verifier")
        self.subgoal = None
        return verdict

    def _record_final_verdict(self, observation: Observation, ended_by: str) -> None:
        """The verdict on the final state of an episode ended from outside: a ``final_verdict`` memory event
        (``on_final_state: true``, ``ended_by``, ``claim_pending``: whether a claim of completion was being
        confirmed). A running subgoal was cut short (``cut_short: true``, its ``subgoal``, ``attempt`` and the
        verifier's ``verdict`` on ``observation``, uncertain or not): it is no failure, and it ends the attempt; a
        confident success on the final state counts in ``subgoals_done``."""
        subgoal = self.subgoal
        data: dict[str, Any] = {"on_final_state": True, "ended_by": ended_by, "cut_short": subgoal is not None,
                                "claim_pending": self._next_read_step is not None}
        if subgoal is not None:
            assert self._before is not None
            verdict = self.verifier.verify(observation_for(self.verifier, self._before, "verifier"),
                                           observation_for(self.verifier, observation, "verifier"), subgoal)
            data.update(subgoal=subgoal.signature, attempt=self.memory.attempts(subgoal), verdict=verdict.to_json())
            self.status.verdicts.append({"step": self._step, "subgoal": subgoal.signature, **verdict.to_json(),
                                         "at_episode_end": True, "cut_short": True, "on_final_state": True})
            self.status.subgoals_done += int(verdict.success and not verdict.uncertain)  # achieved, as read at the end
            self.subgoal = None
        self.memory.record_event("final_verdict", self._step, **data)

    def _finish_subgoal(self, observation: Observation) -> None:
        done = self.subgoal
        verdict = self._verify_active(observation)
        if verdict is None:  # uncertain: keep executing the subgoal, verify again later
            return
        if self._worker is None:
            self._replan(observation, after_failure=not verdict.success)
            return
        # --- asynchronous planning: ask for a new plan, keep acting on the current one meanwhile ---
        self._request_plan(observation)
        if not verdict.success or done is None:
            return  # hold until the new plan: the current one is known to be wrong
        rest = list(self.plan.remaining)
        for i, s in enumerate(rest):
            if s.signature == done.signature:
                del rest[i]
                break
        self.plan = Plan(done=[*self.plan.done, done], remaining=rest, rationale=self.plan.rationale)
        if rest:
            self._try_start(rest[0], observation)

    def _request_plan(self, observation: Observation) -> None:
        """Hand the planner (in its worker thread) a request for ``observation`` (privileged state withheld from a
        non-oracle planner) and a snapshot of memory; returns at once."""
        assert self._worker is not None
        materialize_images(observation)  # the worker thread reads it while this thread steps the simulator
        self._worker.submit(observation_for(self.planner, observation, "planner"), self.memory.snapshot(),
                            tag=(self._version, self._last_failed()))

    def _last_failed(self) -> bool:
        return bool(self.status.verdicts) and not self.status.verdicts[-1]["success"]

    def _poll_plan(self, observation: Observation) -> None:
        """Collect a finished plan, if any (never blocks); adopt it unless a verdict made it stale."""
        assert self._worker is not None
        res = self._worker.poll()
        if res is None:
            return
        res.memory.replay_onto(self.memory)
        if res.error is not None:
            if isinstance(res.error, TandemError):  # as in _replan: the last line of defence
                self.memory.record_event("planner_error", self._step, error=str(res.error))
                self._finish(AgentOutcome.PLANNER_FAILED, f"planner failed: {res.error}")
                return
            raise res.error
        self.status.plan_latency_s.append(res.latency_s)
        version, after_failure = res.tag
        if version != self._version:  # a verdict came in since the request; a newer request is queued
            self.status.plans_discarded += 1
            self.memory.record_event("plan_discarded", self._step, request=res.request_id,
                                     reason=f"made before {self._version - version} later verdict(s)")
            if not self._worker.busy:
                self._request_plan(observation)
            return
        if self.status.plans >= self.config.max_plans:
            self._finish(AgentOutcome.GAVE_UP, f"gave up: planner called {self.status.plans} times (max_plans)")
            return
        assert res.plan is not None
        nxt = self._adopt(res.plan, after_failure, observation)
        if nxt is None:
            return
        if self.subgoal is None or self.subgoal.signature != nxt.signature:
            self._pending_plan = res.plan  # switched to at the next chunk boundary (_switch_to_pending)
        else:
            self._pending_plan = None  # the running attempt is what the new plan wants next

    def _switch_to_pending(self, observation: Observation) -> None:
        """Start the pending plan's next subgoal when there is none running or at a chunk boundary."""
        plan = self._pending_plan
        if plan is None or (self.subgoal is not None
                            and self._steps_in_subgoal % self.config.plan_switch_steps != 0):
            return
        self._pending_plan = None
        nxt = plan.next
        if nxt is not None and self.subgoal is not None and self.subgoal.signature == nxt.signature:
            return  # the agent got there on its own meanwhile
        if self.subgoal is not None:  # judge the interrupted attempt, so memory stays consistent
            self._verify_active(observation, note="interrupted by a new plan")
        if nxt is not None:
            self._try_start(nxt, observation)

    def _finish(self, outcome: AgentOutcome, reason: str) -> None:
        """End the episode with ``outcome``; success is claimed only for :attr:`AgentOutcome.SUCCESS`."""
        if self.planner.grounding is not None:  # a VLM reads its goals from its first plan, after reset
            self.status.grounding = self.planner.grounding.to_json()
        claims_success = outcome is AgentOutcome.SUCCESS
        self.status.finished = True
        self.status.claims_success = claims_success
        self.status.outcome = outcome.value
        self.status.end_reason = reason
        self.subgoal = None
        self._pending_plan = None
        self._clear_confirmation()
        self.memory.record_event("agent_finished", self._step, claims_success=claims_success, outcome=outcome.value,
                                 reason=reason)
