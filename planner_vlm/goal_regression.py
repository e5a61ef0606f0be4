"""The symbolic core shared by the oracle and learned planners: goal regression over a predicates dict.

:class:`GoalRegressionPlanner` plans from *any* truth values of the task's ground predicates: the simulator's
(:class:`planner_vlm.oracle_planner.OraclePlanner`, privileged) or a state model's predictions
(:class:`planner_vlm.learned.learned_planner.LearnedPlanner`, the CES-style state-tracker planner). It reads only
the :class:`~tandem.core.types.TaskSpec`, the predicates it is given and the task memory.

Algorithm (a goal-regression planner over the task's ordered goal predicates, in the done/remaining
form of LoHo-Manip):

1. ``reset(task)`` inverts the task's skill templates once: each goal predicate, e.g. ``"on(red,green)"``,
   is matched against every ``TaskSpec.skills`` template except the grasp skill (``"on({0},{1})"`` ->
   ``stack(red, green)``). Nothing is hard-coded per task. If the skill takes more args than its
   predicate names (``place`` -> ``"in_bin({0})"`` but ``place(milk, milk_bin)``), or the task has
   targets and the predicate names only the object, the missing place is the task target named
   ``"<object>_..."`` (e.g. ``milk_bin``), or the task's only target.
2. ``plan_from_predicates()`` walks the goals in order. A goal that holds contributes ``pick(x)`` and its placing
   subgoal to ``done`` (no pick where ``x`` is not one of ``TaskSpec.objects``: a fixture's goal, such as closing a
   drawer, is one subgoal). Every goal that does not hold contributes ``pick(x)`` then the placing subgoal
   to ``remaining``; the pick is put in ``done`` instead when ``grasped(x)`` already holds and it would
   be the very next subgoal.
3. Goals that held before (per memory: a success verdict, a ``done`` entry of the memory view, or this
   planner's previous plan) and are false now reappear in ``remaining`` with a "no longer holds (was
   done) -> redo" rationale: this is how a knocked-over cube is recovered.
4. A goal that holds while an earlier goal does not (blue on red, red not on green) is reported in the
   rationale and kept in ``done``; the earlier goals are still planned. Unstacking is out of scope: the
   planner never plans to take a correctly placed object off again.

Subgoal ids (``"sg1"``, ``"sg2"``, ...) are stable per (signature, attempt number): re-planning while an
attempt is pending or running keeps the id; once the attempt at a signature ended (success or failure
verdict in memory), the next plan gives that signature a new id; a subgoal listed in ``done`` keeps the
id it was achieved under, and gets a new one if its goal regresses. The attempt state is read from
``memory.attempts(subgoal)`` and the memory's view (``MemoryView.from_dict(memory.view()).last_outcome``);
without it, every recorded attempt is taken as finished. Ids are unique within one planner's episode
(``reset`` restarts the counter); pass a different ``id_prefix`` when several planners share an episode.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.memory_view import MemoryView
from tandem.core.protocols import TaskMemory
from tandem.core.types import Plan, Subgoal, TaskSpec


@dataclass(frozen=True)
class _GoalSteps:
    """How one goal predicate is achieved: optionally grasp ``obj``, then ``skill(*args)``."""

    goal: str
    obj: str
    skill: str
    args: tuple[str, ...]


def _template_regex(template: str) -> tuple[re.Pattern[str], int]:
    """Regex matching a ground instance of a predicate template, and how many args it binds.

    ``"on({0},{1})"`` -> ``^on\\((?P<a0>[^,()\\s]+),(?P<a1>[^,()\\s]+)\\)$``, 2.
    """
    parts, seen = ["^"], []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is None:
            continue
        if not field.isdigit():
            raise ConfigError(f"predicate template {template!r} has a non-positional field {{{field}}}")
        idx = int(field)
        parts.append(f"(?P=a{idx})" if idx in seen else f"(?P<a{idx}>[^,()\\s]+)")
        if idx not in seen:
            seen.append(idx)
    if sorted(seen) != list(range(len(seen))):
        raise ConfigError(f"predicate template {template!r} must use {{0}}..{{n}} without gaps, got {sorted(seen)}")
    return re.compile("".join(parts) + "$"), len(seen)


def _n_placeholders(template: str | None) -> int:
    if not template:
        return 0
    idx = [int(f) for _, f, _, _ in string.Formatter().parse(template) if f is not None and f.isdigit()]
    return max(idx) + 1 if idx else 0


class GoalRegressionPlanner:
    """Symbolic planner over ``TaskSpec.goals`` and given predicate values (see the module docstring).

    Subclasses say where the predicates come from and implement ``Planner.plan``; they call
    :meth:`plan_from_predicates`.

    Args:
        grasp_skill: the skill that grasps an object before it is placed (``"pick"``, predicate
            ``grasped({0})``). If the task has no such skill, no pick subgoals are emitted.
        id_prefix: prefix of subgoal ids (``"sg"`` -> ``"sg1"``, ``"sg2"``, ...).

    Raises (from ``reset``):
        ConfigError: if a goal predicate matches no skill template, or a placing skill's place cannot be
            found among ``TaskSpec.targets``.
    """

    def __init__(self, grasp_skill: str = "pick", id_prefix: str = "sg"):
        self.grasp_skill = grasp_skill
        self.id_prefix = id_prefix
        self.task: TaskSpec | None = None
        self._steps: list[_GoalSteps] = []
        self._counter = 0
        self._ids: dict[tuple[str, int], str] = {}
        self._latest_id: dict[str, str] = {}
        self._prev_done: set[str] = set()
        self._done_ids: set[str] = set()

    # ------------------------------------------------------------------ setup
    def reset(self, task: TaskSpec) -> None:
        """Prepare for an episode of ``task``: invert its goal predicates into skills; restart ids.

        Raises:
            ConfigError: see the class docstring.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"{type(self).__name__}.reset needs a TaskSpec, got {type(task).__name__}")
        self.task = task
        self._steps = [self._invert(task, g) for g in self.goals_of(task)]
        self._counter = 0
        self._ids, self._latest_id, self._prev_done, self._done_ids = {}, {}, set(), set()

    def goals_of(self, task: TaskSpec) -> tuple[str, ...]:
        """The ordered goal predicates this planner pursues in ``task``: here ``task.goals``, the judge's, which the
        runtime gives only to an oracle. A planner that is not an oracle overrides it to ground ``task.instruction``
        (the learned planner); reading ``task.goals`` there raises ``PrivilegedAccessError``."""
        return tuple(task.goals)

    def _invert(self, task: TaskSpec, goal: str) -> _GoalSteps:
        """Find the skill and args whose predicate is ``goal`` (see the module docstring, step 1)."""
        grasp_tpl = task.skills.get(self.grasp_skill)
        for skill, template in task.skills.items():
            if skill == self.grasp_skill:
                continue
            regex, n_bound = _template_regex(template)
            m = regex.match(goal)
            if m is None:
                continue
            args = [m.group(f"a{i}") for i in range(n_bound)]
            # a place is filled in for an object's goal only: a fixture's goal (close(drawer)) names all it needs
            placing = bool(args) and args[0] in task.objects
            n_args = max(n_bound, _n_placeholders(task.skill_texts.get(skill)), 2 if task.targets else 0) \
                if placing else n_bound
            while len(args) < n_args:
                args.append(self._place_of(task, skill, args[0]))
            return _GoalSteps(goal=goal, obj=args[0], skill=skill, args=tuple(args))
        if grasp_tpl is not None:
            regex, _ = _template_regex(grasp_tpl)
            m = regex.match(goal)
            if m is not None:
                return _GoalSteps(goal=goal, obj=m.group("a0"), skill=self.grasp_skill, args=(m.group("a0"),))
        raise ConfigError(f"goal {goal!r} of task {task.name!r} matches no skill predicate template; "
                          f"skills: {task.skills}")

    @staticmethod
    def _place_of(task: TaskSpec, skill: str, obj: str) -> str:
        named = [t for t in task.targets if t.startswith(f"{obj}_")]
        if len(named) == 1:
            return named[0]
        if len(task.targets) == 1:
            return task.targets[0]
        raise ConfigError(f"cannot tell where {skill}({obj}, ...) puts {obj!r}: its predicate names no place and "
                          f"the task targets {list(task.targets)} have no single '{obj}_*' entry")

    # --------------------------------------------------------------- planning
    def goal_steps(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        """``(goal, object, skill, args)`` per goal predicate of the task, in order (after :meth:`reset`), e.g.
        ``("on(red,green)", "red", "stack", ("red", "green"))``."""
        return [(st.goal, st.obj, st.skill, st.args) for st in self._steps]

    def goals_order_free(self) -> bool:
        """Whether the task's goals may be achieved in any order: no goal names an object that another goal moves.
        ``in_bin(milk)`` and ``in_bin(can)`` are; ``on(red,green)`` and ``on(blue,red)`` are not (blue goes onto red
        once red is stacked).

        Raises:
            ConfigError: :meth:`reset` was not called.
        """
        self._require_task()
        moved = [st.obj for st in self._steps]
        return all(a not in moved[:i] + moved[i + 1:] for i, st in enumerate(self._steps) for a in st.args)

    def predicates_needed(self) -> list[str]:
        """The ground predicates :meth:`plan_from_predicates` may read: every goal and the grasp predicate of each
        goal's object (after :meth:`reset`)."""
        task = self._require_task()
        out = [st.goal for st in self._steps]
        if self.grasp_skill in task.skills:
            out += [task.predicate_for(self.grasp_skill, (st.obj,)) for st in self._steps if st.skill != self.grasp_skill]
        return list(dict.fromkeys(out))

    def _require_task(self) -> TaskSpec:
        if self.task is None:
            raise ConfigError(f"{type(self).__name__}.plan called before reset(task)")
        return self.task

    def plan_from_predicates(self, preds: Mapping[str, Any], memory: TaskMemory,
                             order: Sequence[str] | None = None) -> Plan:
        """Return the done/remaining plan for the given truth values of the ground predicates.

        Args:
            preds: ground predicate string (``"on(red,green)"``) -> truth value (anything ``bool()`` accepts).
            memory: the episode's task memory (``attempts()`` and ``view()`` are read, nothing is written).
            order: the goal predicates in the order to walk them (a permutation of the task's goals; None: the
                task's order). Only meaningful when :meth:`goals_order_free`.

        Raises:
            ConfigError: if ``reset`` was not called, or ``order`` is not a permutation of the task's goals (names
                both).
            UnknownNameError: if a goal or ``grasped(x)`` predicate is missing from ``preds`` (the message lists
                the known ones).
        """
        task = self._require_task()
        steps = self._steps
        if order is not None:
            by_goal = {st.goal: st for st in self._steps}
            if sorted(order) != sorted(by_goal):
                raise ConfigError(f"goal order {list(order)} is not a permutation of the task's goals {list(by_goal)}")
            steps = [by_goal[g] for g in order]
        view = MemoryView.from_dict(memory.view())
        outcomes = view.last_outcome
        was_done = set(self._prev_done) | {s for s, o in outcomes.items() if o == "success"}
        done_texts = set(view.done)

        def holds(pred: str) -> bool:
            if pred not in preds:
                raise UnknownNameError("predicate", pred, list(preds))
            return bool(preds[pred])

        def make(skill: str, args: tuple[str, ...], pending: bool) -> Subgoal:
            sg = Subgoal(id="", skill=skill, args=args, text=task.subgoal_text(skill, args))
            sg.id = self._id_for(sg, memory, outcomes, pending)
            return sg

        done: list[Subgoal] = []
        remaining: list[Subgoal] = []
        notes: list[str] = []
        first_unmet: str | None = None
        for st in steps:
            place = make(st.skill, st.args, pending=False) if holds(st.goal) else None
            # a goal over a graspable object is placed after a pick; one over a fixture (close a drawer, turn on a
            # stove) is reached without one
            pick_needed = st.skill != self.grasp_skill and self.grasp_skill in task.skills and st.obj in task.objects
            if place is not None:  # the goal holds
                if pick_needed:
                    done.append(make(self.grasp_skill, (st.obj,), pending=False))
                done.append(place)
                if first_unmet is None:
                    notes.append(f"{st.goal} holds")
                else:
                    notes.append(f"{st.goal} holds but earlier goal {first_unmet} does not; unstacking is out of "
                                 f"scope, so {st.goal} is left as it is and {first_unmet} is still planned")
                continue
            first_unmet = first_unmet or st.goal
            place_sig = f"{st.skill}({','.join(st.args)})"
            if place_sig in was_done or task.subgoal_text(st.skill, st.args) in done_texts:
                notes.append(f"{st.goal} no longer holds (was done) -> redo")
            else:
                notes.append(f"{st.goal} does not hold -> {place_sig}")
            if pick_needed:
                grasp_pred = task.predicate_for(self.grasp_skill, (st.obj,))
                if not remaining and holds(grasp_pred):
                    done.append(make(self.grasp_skill, (st.obj,), pending=False))
                    notes.append(f"{grasp_pred} holds -> no pick needed")
                else:
                    remaining.append(make(self.grasp_skill, (st.obj,), pending=True))
            remaining.append(make(st.skill, st.args, pending=True))

        notes += self._retry_notes(remaining, memory, outcomes, view)
        if not remaining:
            notes.append(f"all {len(self._steps)} goals hold; nothing left to do")
        self._prev_done = {s.signature for s in done}
        return Plan(done=done, remaining=remaining, rationale="; ".join(notes))

    def _id_for(self, sg: Subgoal, memory: TaskMemory, outcomes: dict[str, str], pending: bool) -> str:
        """Stable id per (signature, attempt number); see the module docstring."""
        sig = sg.signature
        if not pending:  # achieved: keep the id it was achieved under, or give it one
            if sig not in self._latest_id:
                self._latest_id[sig] = self._new_id()
            self._done_ids.add(self._latest_id[sig])
            return self._latest_id[sig]
        n = int(memory.attempts(sg))
        attempt_no = n if outcomes.get(sig) == "running" and n > 0 else n + 1
        key = (sig, attempt_no)
        if key not in self._ids or self._ids[key] in self._done_ids:  # a regressed goal is redone under a new id
            self._ids[key] = self._new_id()
        self._latest_id[sig] = self._ids[key]
        return self._ids[key]

    def _new_id(self) -> str:
        self._counter += 1
        return f"{self.id_prefix}{self._counter}"

    @staticmethod
    def _retry_notes(remaining: list[Subgoal], memory: TaskMemory, outcomes: dict[str, str],
                     view: MemoryView) -> list[str]:
        """``"stack(red,green): 1 earlier attempt(s), last failed: <reason>"`` for each remaining subgoal tried before."""
        last_fail: dict[str, dict[str, Any]] = {}
        for f in view.failures:
            last_fail[f["subgoal"]] = f
        notes = []
        for sg in remaining:
            n = int(memory.attempts(sg))
            if n == 0:
                continue
            outcome = outcomes.get(sg.signature)
            if outcome == "success":
                last = ", last succeeded (since undone)"
            elif outcome == "running":
                last = ", one running"
            elif sg.signature in last_fail:
                last = f", last failed: {last_fail[sg.signature].get('reason', '')}"
            else:
                last = ""
            notes.append(f"{sg.signature}: {n} earlier attempt(s){last}")
        return notes
