"""The collector's labelling with fakes: trace resampling, DART noise, per-frame subgoal labels, keep_failed."""

from __future__ import annotations

import numpy as np
import pytest

from memory.task_memory import TaskMemoryV1
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError
from tandem.core.grounding import Grounding
from tandem.core.traces import resample_trace
from tandem.core.types import KeypointTrace, Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.collect import DartNoiseEnv, collect_episode
from tandem.runtime.labelling import OracleFrameLabeller

SIZE = (8, 8)
SPEC = TaskSpec(name="toy", instruction="grab a then b", objects=("a", "b"), max_steps=60,
                skills={"pick": "grasped({0})"}, goals=("grasped(a)", "grasped(b)"),
                skill_texts={"pick": "pick up {0}"}, image_size=SIZE)


def test_resample_trace_by_arc_length():
    tr = KeypointTrace("agentview", np.array([[0, 0], [4, 0], [4, 3]], np.float32), image_size=SIZE)
    pts, mask = resample_trace(tr, 8, SIZE)
    assert pts.shape == (8, 2) and mask.tolist() == [1.0] * 8
    np.testing.assert_allclose(pts[0], [0, 0])
    np.testing.assert_allclose(pts[-1], [4, 3])
    steps = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    np.testing.assert_allclose(steps, 1.0, atol=1e-5)  # 7 equal steps along a 7 px polyline
    one, m1 = resample_trace(KeypointTrace("agentview", np.array([[2, 5]], np.float32), image_size=SIZE), 4, SIZE)
    assert np.all(one == [2, 5]) and m1.sum() == 4
    none, m0 = resample_trace(None, 4, SIZE)
    assert not none.any() and not m0.any()
    half, _ = resample_trace(KeypointTrace("agentview", np.array([[3, 1]], np.float32), image_size=(4, 4)), 2, SIZE)
    assert half.tolist() == [[6.0, 2.0], [6.0, 2.0]]  # a (4, 4) trace scaled to the (8, 8) image


class RecordingEnv:
    """Collects executed actions; a 1-D toy where each pick needs `need` steps of action[0] > 0."""

    action_dim = 7
    action_low = -np.ones(7, np.float32)
    action_high = np.ones(7, np.float32)

    def __init__(self, need: int = 4, fail_first_b: bool = False):
        self.spec, self.need, self.fail_first_b = SPEC, need, fail_first_b
        self.executed: list[np.ndarray] = []

    def reset(self, seed=None):
        self.t, self.progress, self.held, self.b_tries = 0, 0, [], 0
        return self._obs(), {}

    def _obs(self):
        img = np.full((*SIZE, 3), self.t % 255, np.uint8)
        preds = {f"grasped({o})": o in self.held for o in ("a", "b")}
        return Observation(images={"agentview": img, "wrist": img[::-1].copy()},
                           proprio=np.full(8, self.t, np.float32), t=self.t * 0.05, step=self.t,
                           privileged={"predicates": preds, "success": all(preds.values())})

    def step(self, action):
        self.executed.append(np.asarray(action, np.float32).copy())
        self.t += 1
        done = len(self.held) == 2  # like RobosuiteEnv: terminated on task success
        return self._obs(), float(done), done, False, {"success": done}


class ToyPlanner:
    is_oracle, source = True, "toy"  # reads the toy world's truth
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None

    def __init__(self, env):
        self.env = env

    def reset(self, task):
        self.n = 0

    def plan(self, obs, memory):
        self.n += 1
        todo = [o for o in ("a", "b") if o not in self.env.held]
        return Plan(done=[Subgoal(f"done{o}", "pick", (o,), f"pick up {o}") for o in self.env.held],
                    remaining=[Subgoal(f"sg{self.n}{o}", "pick", (o,), f"pick up {o}",
                                       goal_image=None, trace=None) for o in todo])


class ToyGoals:
    is_oracle = False

    def produce(self, sg, obs):
        goal = np.full((*SIZE, 3), 200 if sg.args[0] == "a" else 100, np.uint8)
        tr = KeypointTrace("agentview", np.array([[0, 0], [7, 7]], np.float32), image_size=SIZE)
        return Subgoal(sg.id, sg.skill, sg.args, sg.text, goal_image=goal, trace=tr)


class ToyExecutor:
    is_oracle = False

    def __init__(self, env):
        self.env = env

    def reset(self):
        pass

    def set_subgoal(self, sg, task):
        self.sg, self.k = sg, 0

    def select_action(self, obs):
        self.k += 1
        if self.k == self.env.need - 1:  # grasped one step before the executor reports done
            obj = self.sg.args[0]
            if obj == "b" and self.env.fail_first_b and self.env.b_tries == 0:
                self.env.b_tries += 1
            else:
                self.env.held.append(obj)
        return np.array([0.5, 0, 0, 0, 0, 0, 1.0], np.float32)

    def subgoal_done(self):
        return self.k >= self.env.need


class ToyVerifier:
    is_oracle = True  # reads the simulator's predicates

    def reset(self, task, memory):
        pass

    def verify(self, before, after, sg):
        ok = after.privileged["predicates"][f"grasped({sg.args[0]})"]
        return Verdict(ok, 1.0, "ok" if ok else "not grasped", "oracle")


class ListWriter:
    def __init__(self):
        self.frames, self.tasks, self.saved, self.discarded = [], [], [], 0

    def subgoal_task_index(self, text):
        if text not in self.tasks:
            self.tasks.append(text)
        return self.tasks.index(text)

    def add_frame(self, f):
        self.frames.append(f)

    def save_episode(self, record=None, state=None):
        self.saved.append((len(self.frames), record, state))
        return len(self.saved) - 1

    def discard_episode(self):
        self.discarded += 1
        self.frames = self.frames[: self.saved[-1][0]] if self.saved else []

    def update_state(self, state):
        pass


def make(need=4, fail_first_b=False, budget=50):
    env = RecordingEnv(need, fail_first_b)
    agent = HierarchicalAgent(ToyPlanner(env), ToyVerifier(), ToyExecutor(env), TaskMemoryV1(), ToyGoals(),
                              AgentConfig(max_attempts_per_subgoal=2, subgoal_step_budget=budget))
    w = ListWriter()
    lab = OracleFrameLabeller(w, cameras=("agentview", "wrist"), image_size=SIZE, trace_len=4)
    return env, agent, w, lab


def col(frames, key):
    return np.array([f[key][0] for f in frames])


def test_labels_of_a_retry_episode():
    env, agent, w, lab = make(fail_first_b=True)
    out = collect_episode(env, agent, w, lab, seed=0)
    assert out.saved and out.summary["success"]
    f = w.frames
    # attempts: pick a (ok), pick b (failed), pick b (ok): 4 frames each
    np.testing.assert_array_equal(col(f, schema.SUBGOAL_INDEX_KEY), [0] * 4 + [1] * 4 + [2] * 4)
    assert [w.tasks[i] for i in col(f, schema.SUBGOAL_TASK_INDEX_KEY)] == ["pick up a"] * 4 + ["pick up b"] * 8
    np.testing.assert_allclose(col(f, schema.PROGRESS_KEY), [0.25, 0.5, 0.75, 1.0] * 3)
    # success labels from the frame's own observation, and never inside the failed attempt
    sub = col(f, schema.SUBGOAL_SUCCESS_KEY)
    assert sub[:4].tolist() == [0, 0, 0, 1] and not sub[4:8].any() and sub[8:].tolist() == [0, 0, 0, 1]
    # the env reports success after frame 10's action; the episode goes on, so frame 11 shows it
    assert col(f, schema.TASK_SUCCESS_KEY).tolist() == [0] * 11 + [1]
    assert all(a["verified"] for a in out.record["attempts"])
    assert all(fr["task"] == SPEC.instruction for fr in f)
    assert f[0][schema.GOAL_IMAGE_KEY][0, 0, 0] == 200 and f[5][schema.GOAL_IMAGE_KEY][0, 0, 0] == 100
    np.testing.assert_allclose(f[0][schema.TRACE_KEY][[0, -1]], [[0, 0], [7, 7]])
    for j, fr in enumerate(f):  # frame t = observation the action was chosen from + that action
        assert fr[schema.STATE_KEY][0] == j
        np.testing.assert_array_equal(fr[schema.ACTION_KEY], env.executed[j])
    rec = out.record
    assert [a["success"] for a in rec["attempts"]] == [True, False, True] and rec["failed_attempts"] == 1
    assert rec["attempts"][1]["from_frame"] == 4 and rec["attempts"][1]["to_frame"] == 8


def test_failed_episode_kept_only_with_keep_failed():
    env, agent, w, lab = make(need=100, budget=5)  # never grasps: every attempt fails
    out = collect_episode(env, agent, w, lab, seed=0, keep_failed=False)
    assert not out.saved and w.discarded == 1 and not out.summary["success"]
    env, agent, w, lab = make(need=100, budget=5)
    out = collect_episode(env, agent, w, lab, seed=0, keep_failed=True)
    assert out.saved and len(w.frames) == out.frames > 0
    assert not col(w.frames, schema.SUBGOAL_SUCCESS_KEY).any()
    assert all(not a["success"] for a in out.record["attempts"])


def test_dart_noise_changes_executed_not_recorded_actions():
    env, agent, w, lab = make()
    out = collect_episode(env, agent, w, lab, seed=3, dart_sigma=0.2)
    clean = np.array([fr[schema.ACTION_KEY] for fr in w.frames])
    executed = np.array(env.executed)
    np.testing.assert_array_equal(clean[:, 0], 0.5)  # the label is the expert's clean action
    assert np.abs(executed[:, :6] - clean[:, :6]).max() > 0.01  # the env got noisy actions
    np.testing.assert_array_equal(executed[:, 6], clean[:, 6])  # gripper untouched by default
    assert np.all(np.abs(executed) <= 1.0) and out.record["dart_sigma"] == 0.2
    with pytest.raises(ConfigError):
        DartNoiseEnv(env, -0.1, np.random.default_rng(0))


def test_resume_seed_continues_past_recorded_seeds_and_honours_a_later_one(capsys):
    from tandem.runtime.collect import resume_seed

    assert resume_seed(10, None, 0) == 10  # a new dataset starts at the requested seed
    assert resume_seed(0, 50, 40) == 50  # resume: the recorded next seed (10 of the first 50 failed)
    assert "resuming at the dataset's next seed 50" in capsys.readouterr().err
    assert resume_seed(500, 50, 40) == 500  # a later seed range is honoured
    assert resume_seed(0, None, 7) == 7  # a dataset written without a recorded next seed


def test_ctrl_c_keeps_saved_episodes_and_rerun_resumes(tmp_path):
    """collect(): Ctrl-C in episode 2 commits episode 1; the same call again finishes the job (real writer)."""
    from types import SimpleNamespace

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from tandem.runtime.collect import collect

    out = tmp_path / "ds"
    cfg = {"out": str(out), "repo_id": "tandem/toy", "episodes": 3, "seed": 10,
           "env": {"cameras": ["agentview", "wrist"], "image_size": list(SIZE), "control_freq": 20},
           "dataset": {"trace_len": 4, "labels": False}}
    env, agent, _, _ = make()
    seen = {"episodes": 0}

    def interrupt_in_second_episode(rec):
        if rec.step == 1:
            seen["episodes"] += 1
        if seen["episodes"] == 2 and rec.step == 3:
            raise KeyboardInterrupt

    stack = SimpleNamespace(env=env, agent=agent, close=lambda: None)
    rep = collect(cfg, observer=interrupt_in_second_episode, stack=stack)
    assert rep.interrupted and rep.episodes_total == 1 and rep.episodes_saved == 1
    assert LeRobotDataset("tandem/toy", root=out, video_backend="pyav").num_episodes == 1
    rep2 = collect(cfg, stack=stack)
    assert not rep2.interrupted and rep2.episodes_total == 3 and rep2.episodes_saved == 2
    assert rep2.seeds == [11, 12]  # the interrupted seed 11 is run again; seed 10 is not repeated
    ds = LeRobotDataset("tandem/toy", root=out, video_backend="pyav")
    assert ds.num_episodes == 3 and len(ds) == 3 * 8
    rep3 = collect({**cfg, "episodes": 4, "seed": 500}, stack=stack)  # more episodes from a new seed range
    assert rep3.seeds == [500]


class ConfirmingPlanner(ToyPlanner):
    """Grounds both goals and reads them from the toy world, so the agent confirms success in reads between which it
    holds still."""

    grounding = Grounding(SPEC.instruction, SPEC.goals, False, 1.0, None, "toy")

    def read_goals(self, observation, memory):
        from tandem.core.evidence import GoalRead, GoalReading

        held = observation.privileged["predicates"]
        return GoalReading(observation.step, tuple(GoalRead(g, held[g], True, float(held[g])) for g in SPEC.goals),
                           ("a", "b"), source="toy")


def test_hold_steps_between_confirmation_reads_are_not_frames():
    env = RecordingEnv(4)
    agent = HierarchicalAgent(ConfirmingPlanner(env), ToyVerifier(), ToyExecutor(env), TaskMemoryV1(), ToyGoals(),
                              AgentConfig(max_attempts_per_subgoal=2, subgoal_step_budget=50, confirm_reads=2,
                                          confirm_gap_steps=3),
                              hold_action=np.zeros(7, np.float32))
    w = ListWriter()
    lab = OracleFrameLabeller(w, cameras=("agentview", "wrist"), image_size=SIZE, trace_len=4)
    out = collect_episode(env, agent, w, lab, seed=0)
    assert out.saved and out.summary["success"] and agent.status.claims_success
    assert lab.hold_steps_skipped == agent.status.hold_steps > 0
    assert len(w.frames) == len(env.executed) - agent.status.hold_steps  # every other step is one subgoal's frame
