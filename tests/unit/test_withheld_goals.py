"""The goal is the user's words: ``TaskSpec.goals`` (the judge's reading of the instruction) reaches only oracle
components; a planner, verifier, executor or the memory that is not an oracle fails loudly when it reads them, and
every summary records the instruction, the judge's goals and who grounded the planner's."""

from __future__ import annotations

import copy
import pickle
import re
from pathlib import Path

import pytest
from test_agent_loop import SPEC, ToyEnv, ToyExecutor, ToyPlanner, ToyVerifier

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import PrivilegedAccessError
from tandem.core.grounding import Grounding
from tandem.core.privileged import WithheldGoals, goals_withheld, task_for, withhold_goals
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.rollout import run_episode

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("read", [
    lambda g: list(g), lambda g: g[0], lambda g: len(g), lambda g: bool(g), lambda g: "on(a,b)" in g,
    lambda g: tuple(g), lambda g: [x for x in g],
])
def test_every_read_of_withheld_goals_raises_naming_the_component(read):
    task = withhold_goals(SPEC, "planner SneakyPlanner")
    with pytest.raises(PrivilegedAccessError, match=r"planner SneakyPlanner read TaskSpec.goals"):
        read(task.goals)


def test_withheld_goals_survive_copies_and_logs_and_the_original_is_untouched():
    task = withhold_goals(SPEC, "memory")
    assert goals_withheld(task) and not goals_withheld(SPEC) and tuple(SPEC.goals)
    assert "withheld from memory" in repr(task.goals)
    assert copy.deepcopy(task).goals is task.goals
    assert isinstance(pickle.loads(pickle.dumps(task)).goals, WithheldGoals)


def test_task_for_follows_is_oracle():
    class Oracle:
        is_oracle = True

    class Learned:
        is_oracle = False

    assert task_for(Oracle(), SPEC, "planner") is SPEC
    with pytest.raises(PrivilegedAccessError, match="verifier Learned read TaskSpec.goals"):
        list(task_for(Learned(), SPEC, "verifier").goals)


class GoalReadingPlanner(ToyPlanner):
    """Claims not to be an oracle, then plans from the judge's goals anyway."""

    is_oracle = False

    def reset(self, task):
        super().reset(task)
        self.goals = list(task.goals)


class GoalReadingVerifier(ToyVerifier):
    is_oracle = False

    def reset(self, task, memory):
        self.goals = list(task.goals)


class GoalReadingExecutor(ToyExecutor):
    is_oracle = False

    def set_subgoal(self, subgoal, task):
        self.goals = list(task.goals)
        super().set_subgoal(subgoal, task)


def _run(**kw):
    env = ToyEnv()
    agent = HierarchicalAgent(kw.get("planner") or ToyPlanner(env), kw.get("verifier") or ToyVerifier(env),
                              kw.get("executor") or ToyExecutor(env), TaskMemoryV1())
    for c in (agent.planner, agent.verifier, agent.executor):
        c.env = env
    return run_episode(env, agent, seed=0, record_video=False).summary


@pytest.mark.parametrize("role,kw", [
    ("planner GoalReadingPlanner", {"planner": GoalReadingPlanner(None)}),
    ("verifier GoalReadingVerifier", {"verifier": GoalReadingVerifier(None)}),
    ("executor GoalReadingExecutor", {"executor": GoalReadingExecutor(None)}),
])
def test_a_non_oracle_component_that_reads_the_goals_fails_naming_itself(role, kw):
    s = _run(**kw)
    assert s["success"] is False
    assert f"{role} read TaskSpec.goals (" in s["failure"]


def test_the_summary_records_the_instruction_the_judges_goals_and_the_grounding():
    s = _run()
    assert s["instruction"] == SPEC.instruction and s["judge_goals"] == list(SPEC.goals)
    assert s["grounding"] is None  # the toy planner grounds nothing


class RefusingPlanner(ToyPlanner):
    is_oracle = False

    def reset(self, task):
        super().reset(task)
        self.grounding = Grounding(task.instruction, refused="'purple' is not an object of task 'toy'",
                                   grounded_by="test")

    def plan(self, obs, memory):  # never called: a refused instruction ends the episode before anything moves
        raise AssertionError("planned after a refusal")


def test_a_refused_instruction_ends_the_episode_before_anything_moves_and_is_remembered():
    env = ToyEnv()
    memory = TaskMemoryV1()
    agent = HierarchicalAgent(RefusingPlanner(env), ToyVerifier(env), ToyExecutor(env), memory)
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["success"] is False and s["steps"] == 0 and s["attempts"] == 0
    assert s["failure"] == "instruction refused: 'purple' is not an object of task 'toy'"
    assert s["grounding"]["refused"] and s["grounding"]["grounded_by"] == "test"
    kinds = [e["kind"] for e in memory.events()]
    assert "grounding" in kinds and "instruction_refused" in kinds


#: Modules that may read TaskSpec.goals: the judge (sim), oracle components (the oracle-sim VLM's truth publisher
#: among them: its runs are marked privileged), the runtime's records of the judge.
_MAY_READ_GOALS = re.compile(r"^(sim/|planner_vlm/oracle_|planner_vlm/goal_regression\.py|tandem/runtime/rollout\.py"
                             r"|tandem/core/|bridge/sim_robot_node\.py|tandem/runtime/oracle_remote\.py"
                             r"|tandem/runtime/oracle_sim_vlm\.py)")


def test_no_component_but_the_oracles_reads_the_goals_in_its_source():
    offenders = []
    for pkg in ("planner_vlm", "executor_vla", "memory", "bridge", "tandem/runtime", "tandem/evaluation"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if _MAY_READ_GOALS.match(rel):
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\b(task|spec|self\.task|env\.spec)\.goals\b", line):
                    offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "non-oracle code reads TaskSpec.goals:\n" + "\n".join(offenders)
