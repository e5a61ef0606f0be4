"""Success is claimed only on evidence, and memory is true: confirmation reads some steps apart with presence
re-checked, no claim on a goal read true once or over an absent object, an attempt cut short by the episode's end is
no failure (a final verdict on the final state instead), a knock is ``object_moved``, lessons ignore cut-short
attempts."""

from __future__ import annotations

import numpy as np
from test_agent_loop import SPEC, ToyEnv, ToyExecutor, ToyVerifier

from memory.failures import classify_failure
from memory.lessons import learn_lessons
from memory.records import FailureCause
from memory.task_memory import TaskMemoryV1
from planner_vlm.learned.learned_verifier import displaced_objects
from planner_vlm.learned.scene_state import SceneState
from tandem.core.evidence import GoalRead, GoalReading, confirmation_gaps
from tandem.core.grounding import Grounding
from tandem.core.types import Observation, Plan, Subgoal, Verdict
from tandem.evaluation.rows import skill_results
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.rollout import run_episode

HOLD = np.zeros(7, np.float32)
GOALS = ("grasped(a)", "grasped(b)")


class ReadingPlanner:
    """Plans the goals the toy env has not achieved; its reads of the goals follow a script.

    ``script``: per read, goal -> probability (missing goals: what the env says); ``absent``: per read, absent objects.
    """

    is_oracle = True  # it reads the toy env's truth to plan
    source = "toy"

    def __init__(self, env, script=(), absent=()):
        self.env, self.script, self.absent = env, list(script), list(absent)
        self.grounding = Grounding(SPEC.instruction, goals=GOALS, grounded_by="test")
        self.read_steps: list[int] = []

    def reset(self, task):
        pass

    def plan(self, obs, memory):
        remaining = [Subgoal(f"sg{o}", "pick", (o,), f"pick {o}") for o in ("a", "b") if o not in self.env.achieved]
        done = [Subgoal(f"d{o}", "pick", (o,), f"pick {o}") for o in self.env.achieved]
        return Plan(done=done, remaining=remaining)

    def read_goals(self, observation, memory):
        self.read_steps.append(observation.step)
        probs = self.script.pop(0) if self.script else {}
        absent = self.absent.pop(0) if self.absent else ()
        reads = []
        for goal in GOALS:
            p = probs.get(goal, 1.0 if goal[8] in self.env.achieved else 0.0)
            reads.append(GoalRead(goal, p >= 0.5, p >= 0.9, p))
        return GoalReading(observation.step, tuple(reads), ("a", "b"), tuple((o, "presence 0.001 < 0.02") for o in absent))


class QuietEnv(ToyEnv):
    """The toy env that never reports success: the agent alone ends the episode."""

    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, r, term, trunc, {"success": False}


def _agent(env, planner, memory=None, **cfg):
    config = AgentConfig(**{"confirm_gap_steps": 4, **cfg})
    return HierarchicalAgent(planner, ToyVerifier(env), ToyExecutor(env), memory or TaskMemoryV1(), config=config,
                             hold_action=HOLD)


def test_two_confirming_reads_some_steps_apart_claim_success():
    env = QuietEnv()
    planner = ReadingPlanner(env)
    agent = _agent(env, planner)
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["agent_claims_success"] is True and s["agent_outcome"] == "success"
    assert len(planner.read_steps) == 2 and planner.read_steps[1] - planner.read_steps[0] >= 4
    reads = [e for e in agent.memory.events() if e["kind"] == "goal_read"]
    assert [r["confirms"] for r in reads] == [True, True] and reads[0]["reading"]["checked_objects"] == ["a", "b"]
    assert s["hold_steps"] >= 4  # the robot held still between the reads


def test_a_goal_read_true_once_then_false_is_no_claim():
    env = QuietEnv()
    planner = ReadingPlanner(env, script=[{}, {"grasped(b)": 0.2}] * 3)  # confirms, then contradicts, every time
    agent = _agent(env, planner, max_attempts_per_subgoal=3)
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["agent_claims_success"] is False and s["agent_outcome"] == "not_confirmed"
    assert "grasped(b) reads false (p=0.20)" in s["agent_end_reason"]
    assert s["replans"] >= 2  # it kept working (replanned) after each unconfirmed claim
    assert len([e for e in agent.memory.events() if e["kind"] == "claim_not_confirmed"]) == 3


def test_a_goal_read_true_over_an_absent_object_is_no_claim():
    env = QuietEnv()
    planner = ReadingPlanner(env, absent=[("b",)] * 10)
    agent = _agent(env, planner)
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["agent_claims_success"] is False and s["agent_outcome"] == "not_confirmed"
    assert "b absent: presence 0.001 < 0.02" in s["agent_end_reason"]


def test_a_goal_read_true_but_not_confident_is_no_claim():
    reading = GoalReading(5, (GoalRead("grasped(a)", True, False, 0.7),), ("a",))
    assert confirmation_gaps(reading, ("grasped(a)",), ("a",)) == ["grasped(a) not confident (p=0.70)"]
    assert confirmation_gaps(reading, ("grasped(a)",), ("a", "b"))[-1] == "b presence not checked"
    assert confirmation_gaps(None, ("grasped(a)",), ())  # a planner that reads no goals confirms nothing


def test_the_budget_ending_while_confirming_is_not_confirmed():
    env = QuietEnv()
    agent = _agent(env, ReadingPlanner(env), confirm_gap_steps=50)
    s = run_episode(env, agent, seed=0, record_video=False, max_steps=20).summary
    assert s["agent_claims_success"] is False and s["agent_outcome"] == "not_confirmed"
    final = [e for e in agent.memory.events() if e["kind"] == "final_verdict"]
    assert final and final[0]["claim_pending"] is True and final[0]["cut_short"] is False


def test_a_run_stopped_by_env_success_mid_subgoal_records_no_failure_and_a_final_verdict():
    env = ToyEnv()  # reports success once a and b are achieved, while pick(b) still runs

    class SlowVerifier(ToyVerifier):
        def verify(self, before, after, subgoal):  # the cube has not settled: read as failed on the final state
            return Verdict(False, 0.95, f"{subgoal.args[0]} is 0.20 m from the gripper", "learned")

    memory = TaskMemoryV1()
    ex = ToyExecutor(env, need=5)
    ex.subgoal_done = lambda: False  # the executor would go on after the env's success
    agent = HierarchicalAgent(ReadingPlanner(env), SlowVerifier(env), ex, memory,
                              config=AgentConfig(subgoal_step_budget=5), hold_action=HOLD)
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["success"] is True and s["agent_claims_success"] is False and s["agent_outcome"] == "not_confirmed"
    final = [e for e in memory.events() if e["kind"] == "final_verdict"]
    assert len(final) == 1 and final[0]["on_final_state"] is True and final[0]["cut_short"] is True
    assert final[0]["subgoal"] == "pick(b)" and final[0]["ended_by"] == "env reports task success"
    assert all(f["subgoal"] != "pick(b)" for f in memory.failures)
    assert memory.last_outcome["pick(b)"] == "cut_short" and memory.current is None
    assert s["verdicts"][-1]["cut_short"] is True
    assert "pick" not in skill_results(s["verdicts"][-1:])  # a cut-short attempt is not a judged one


def test_lessons_ignore_cut_short_attempts(tmp_path):
    env = ToyEnv()
    memory = TaskMemoryV1()
    memory.open_store(tmp_path / "memory.sqlite")
    ex = ToyExecutor(env, need=5)
    agent = HierarchicalAgent(ReadingPlanner(env), ToyVerifier(env), ex, memory, hold_action=HOLD)
    run_episode(env, agent, seed=0, record_video=False, max_steps=7)  # pick(a) done, pick(b) cut at step 7
    assert memory.last_outcome == {"pick(a)": "success", "pick(b)": "cut_short"}
    store = memory.store
    episodes = [store.records(e.id) for e in store.episodes(task=SPEC.name)]
    lessons = learn_lessons(SPEC.name, episodes)
    pick = lessons.skills["pick"]
    assert (pick.attempts.n, pick.attempts.successes) == (1, 1) and sum(pick.failures.values()) == 0


def test_a_displaced_object_is_object_moved_not_a_slip():
    reason = ("on(blue,red) is false: p=0.03 (calibrated), blue/red located with confidence 0.98: blue at (0.1, 0.2, "
              "0.83), 0.15 m from red (height -0.05 m), 0.22 m from the gripper; displaced: red moved 0.06 m during "
              "the attempt")
    assert classify_failure("stack(blue,red)", reason)[0] is FailureCause.OBJECT_MOVED
    without = reason.split("; displaced")[0]
    assert classify_failure("stack(blue,red)", without)[0] is FailureCause.GRASP_SLIPPED  # the same read, no knock
    moved_away = "moved away after it was read achieved at step 40; " + without
    assert classify_failure("stack(blue,red)", moved_away)[0] is FailureCause.OBJECT_MOVED


def _scene(positions: dict[str, tuple[float, float, float]], confidence: float = 1.0) -> SceneState:
    objects = tuple(positions)
    kp = np.zeros((len(objects), 2, 3))
    kp[:, 0] = [positions[o] for o in objects]
    n = len(objects)
    return SceneState(objects=objects, predicates=(), probabilities=np.zeros(0), keypoints_px=np.zeros((n, 2, 2)),
                      keypoints_3d=kp, object_confidence=np.full(n, confidence), scene_confidence=confidence,
                      heatmap_entropy=np.zeros((n, 2)))


def test_the_learned_verifier_reads_displaced_objects_sharp_in_both_reads():
    before = _scene({"blue": (0, 0, 1), "red": (0.1, 0, 0.82), "green": (0.3, 0, 0.82)})
    after = _scene({"blue": (0.5, 0, 0.82), "red": (0.16, 0, 0.82), "green": (0.301, 0, 0.82)})
    moved = displaced_objects(before, after, moved="blue")
    assert [o for o, _ in moved] == ["red"] and abs(moved[0][1] - 0.06) < 1e-9
    assert displaced_objects(before, _scene({"blue": (0, 0, 1), "red": (0.16, 0, 0.82), "green": (0.3, 0, 0.82)},
                                            confidence=0.5), moved="blue") == []  # diffuse reads are no evidence


def test_a_subgoal_read_achieved_then_failed_is_recorded_as_object_moved():
    env = QuietEnv()

    class KnockVerifier(ToyVerifier):
        def __init__(self, env):
            super().__init__(env)
            self.verdicts = [Verdict(True, 0.7, "grasped(a) holds", "learned", uncertain=True),
                             Verdict(False, 0.95, "grasped(a) is false: a is 0.30 m from the gripper", "learned")]

        def verify(self, before, after, subgoal):
            return self.verdicts.pop(0) if self.verdicts else super().verify(before, after, subgoal)

    memory = TaskMemoryV1()
    agent = HierarchicalAgent(ReadingPlanner(env), KnockVerifier(env), ToyExecutor(env), memory, hold_action=HOLD,
                              config=AgentConfig(verify_rechecks=2, recheck_steps=2))
    run_episode(env, agent, seed=0, record_video=False, max_steps=30)
    assert memory.failures[0]["cause"] == "object_moved"
    assert memory.failures[0]["reason"].startswith("moved away after it was read achieved at step")


def test_rows_carry_the_outcome_and_false_claims_stay_counted():
    from tandem.evaluation.rows import row_from_result
    from tandem.evaluation.suite import EpisodeJob

    job = EpisodeJob(key="v/toy/none/seed0600", task="toy", seed=600, variant="v", setting="none", perturb=None,
                     build={}, builder=None, max_steps=None, config_hash="h", labels={})
    row = row_from_result(job, {"success": False, "agent_claims_success": True, "agent_outcome": "success"}, GOALS)
    assert row["agent_outcome"] == "success" and row["false_success_claim"] is True
    row = row_from_result(job, {"success": True, "agent_claims_success": False, "agent_outcome": "not_confirmed"},
                          GOALS)
    assert row["agent_outcome"] == "not_confirmed" and row["false_success_claim"] is False


def test_the_final_state_is_read_for_the_final_verdict():
    env = ToyEnv()
    env.reset()
    agent = _agent(env, ReadingPlanner(env))
    agent.reset(SPEC, env._obs())
    obs = Observation(images={}, proprio=np.zeros(8), t=0.1, step=2)
    agent.stop("env step limit reached", 2, observation=obs)
    final = [e for e in agent.memory.events() if e["kind"] == "final_verdict"][0]
    assert final["step"] == 2 and final["on_final_state"] is True and final["subgoal"] == "pick(a)"
    assert agent.status.outcome == "not_confirmed"
