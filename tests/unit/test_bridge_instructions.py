"""The instruction is the task, on a robot too: the cell vocabulary file, ``instruction=``, the instruction topic,
and a simulated robot whose oracle channel judges the bridge's instruction instead of supplying goals.

Everything runs over the in-process transport (the DDS round trip of the instruction topic on loopback, the rclpy
one where ROS 2 is installed); time is a manual clock, as in ``test_bridge_robot_env.py``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cyclonedds", reason="the message types need the cyclonedds package (tandem[ros])")

from bridge import conversions as cv  # noqa: E402
from bridge.config import PROJECT_ROOT, bridge_config_from_dict  # noqa: E402
from bridge.errors import MissingTopicError  # noqa: E402
from bridge.oracle_channel import PRIVILEGED_TOPIC  # noqa: E402
from bridge.robot_env import RobotEnv  # noqa: E402
from bridge.sim_robot_node import SimRobotNode  # noqa: E402
from bridge.transport import InProcessBus, InProcessTransport  # noqa: E402
from tandem.core.errors import ConfigError  # noqa: E402
from tandem.core.grounding import Grounding, InstructionRefused  # noqa: E402
from tandem.core.privileged import goals_withheld  # noqa: E402
from tandem.core.types import Observation, Plan, TaskSpec  # noqa: E402
from tandem.core.vocabulary import TaskVocabulary  # noqa: E402

H, W = 8, 10
STACK_CELL = "configs/bridge/cells/stack_three.yaml"
INSTRUCTION = "/tandem/instruction"
COLORS = ("red", "green", "blue")


class ManualClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def config(**over) -> dict:
    d = {
        "transport": "inprocess", "rate_hz": 100.0, "base_frame": "base", "image_size": [H, W],
        "startup_timeout_s": 2.0, "watchdog": False,
        "topics": {"cameras": {"front": {"image": "/front/image"}}, "joint_states": "/joint_states", "eef_pose": "/eef",
                   "twist_cmd": "/servo/twist", "gripper_cmd": "/gripper/cmd"},
        "action": {"linear_scale_mps": 0.1, "angular_scale_radps": 0.5, "gripper_joints": ["f1", "f2"]},
        "safety": {"workspace_min": [-1, -1, 0], "workspace_max": [1, 1, 1], "max_message_age_s": 0.2,
                   "policy_deadline_s": 0.2, "max_linear_accel_mps2": 100.0, "max_angular_accel_radps2": 100.0},
        "task": {"name": "stack_three", "instruction": "", "vocabulary": STACK_CELL, "max_steps": 20},
    }
    for k, v in over.items():
        d[k] = {**d[k], **v} if isinstance(v, dict) and isinstance(d.get(k), dict) else v
    return d


class FakeRobot:
    """Publishes one camera, the gripper joints and the pose; publishes instructions like an operator."""

    def __init__(self, bus: InProcessBus, clock: ManualClock):
        self.clock, self.t = clock, InProcessTransport(bus, clock)
        self.ty = self.t.msg_type
        self.pub_img = self.t.create_publisher("/front/image", "sensor_msgs/msg/Image")
        self.pub_js = self.t.create_publisher("/joint_states", "sensor_msgs/msg/JointState")
        self.pub_pose = self.t.create_publisher("/eef", "geometry_msgs/msg/PoseStamped")
        self.pub_instruction = self.t.create_publisher(INSTRUCTION, "std_msgs/msg/String")

    def publish(self) -> None:
        s = self.clock()
        self.pub_img(cv.image_to_msg(self.ty, np.zeros((H, W, 3), np.uint8), s, "cam"))
        self.pub_js(cv.joint_state_to_msg(self.ty, ["f1", "f2"], [0.03, 0.03], s))
        self.pub_pose(cv.pose_to_msg(self.ty, [0.1, 0.0, 0.5], [1, 0, 0, 0], s, "base"))

    def say(self, text: str) -> None:
        self.pub_instruction(self.ty("std_msgs/msg/String")(data=text))


@pytest.fixture
def rig():
    bus = InProcessBus()
    robot = FakeRobot(bus, ManualClock())
    envs = []

    def make(**over):
        env = RobotEnv(bridge_config_from_dict(config(**over)), InProcessTransport(bus, robot.clock))
        envs.append(env)
        return env

    yield robot, make, bus
    for e in envs:
        e.close()


# ---------------------------------------------------------------------------------------- the cell file
def test_the_task_spec_carries_the_cell_vocabulary_and_no_goals(rig):
    _, make, _ = rig
    env = make(task={"name": "ur_bin", "vocabulary": "configs/bridge/cells/ur_bin.yaml",
                     "instruction": "  put the cube   in the bin "})
    s = env.spec
    assert s.name == "ur_bin" and s.instruction == "put the cube in the bin" and s.goals == () and s.max_steps == 20
    assert s.skills == {"pick": "grasped({0})", "place": "in({0},{1})"} and s.objects == ("cube",)
    assert s.targets == ("bin",) and s.skill_texts["place"] == "put the {0} into the {1}"
    assert isinstance(s.vocabulary, TaskVocabulary) and s.vocabulary.task == "ur_bin"
    assert s.cameras == ("front",) and s.image_size == (H, W) and s.control_dt == pytest.approx(0.01)


def test_an_inline_vocabulary_and_a_subset_of_its_objects(rig):
    _, make, _ = rig
    inline = TaskVocabulary.load(PROJECT_ROOT / STACK_CELL).to_dict()
    env = make(task={"vocabulary": inline, "objects": ["red", "blue"]})
    assert env.spec.objects == ("red", "blue") and env.spec.skills["stack"] == "on({0},{1})"
    assert env.spec.vocabulary == TaskVocabulary.load(PROJECT_ROOT / STACK_CELL)


def test_without_a_vocabulary_the_spec_is_the_bare_task(rig):
    _, make, _ = rig
    env = make(task={"name": "robot_task", "vocabulary": None, "objects": ["cube"]})
    assert env.spec.vocabulary is None and env.spec.skills == {} and env.spec.objects == ("cube",)


@pytest.mark.parametrize("task,message", [
    ({"vocabulary": "configs/bridge/cells/nope.yaml"}, r"bridge.task.vocabulary: no cell file 'configs/bridge/cells/nope.yaml' \(looked in"),
    ({"vocabulary": {"task": "x", "skills": {}, "goal_skills": [], "objets": {}}}, r"bridge.task.vocabulary: unknown key 'objets'"),
    ({"vocabulary": {"task": "x", "skills": {}, "goal_skills": []}}, r"bridge.task.vocabulary: missing key 'objects'"),
    ({"vocabulary": {"task": "x", "skills": {"pick": "grasped({0})"}, "goal_skills": ["stack"], "objects": {"a": ["a"]}}},
     r"goal skill 'stack' has no predicate template"),
    ({"vocabulary": 3}, r"bridge.task.vocabulary: expected a cell file path or a mapping, got int"),
    ({"vocabulary": STACK_CELL, "objects": ["red", "purple"]}, r"task.objects: 'purple' is not an object of the cell"),
    ({"max_steps": 0}, r"task.max_steps must be an integer >= 1, got 0"),
])
def test_a_bad_cell_is_one_named_line(task, message):
    with pytest.raises(ConfigError, match=message) as e:
        bridge_config_from_dict(config(task=task))
    assert "\n" not in str(e.value)


def test_a_cell_file_that_is_not_yaml_names_the_file(tmp_path):
    bad = tmp_path / "cell.yaml"
    bad.write_text("task: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"vocabulary file {bad}: not valid yaml") as e:
        bridge_config_from_dict(config(task={"vocabulary": str(bad)}))
    assert "\n" not in str(e.value)
    from tandem.runtime.config import BridgeRunConfig, load

    with pytest.raises(ConfigError, match=r"bridge.task.vocabulary: no cell file"):
        load(BridgeRunConfig, {"bridge": config(task={"vocabulary": str(tmp_path / "missing.yaml")})})


def test_the_shipped_configs_name_cells_and_the_rehearsal_cell_is_the_simulated_task():
    from tandem.cli.common import compose_config, load_config
    from tandem.runtime.config import BridgeRunConfig

    cells = {}
    for name in ("sim_loopback", "franka_moveit_servo", "ur_moveit_servo"):
        cfg = load_config(BridgeRunConfig, compose_config(f"bridge/{name}", []))
        bcfg = bridge_config_from_dict(cfg.bridge)
        assert bcfg.task.vocabulary is not None and bcfg.topics.instruction == INSTRUCTION, name
        cells[name] = bcfg.task.vocabulary
    assert cells["sim_loopback"] == TaskVocabulary.load(PROJECT_ROOT / "sim/tasks/stack_three/vocabulary.yaml")
    assert cells["ur_moveit_servo"].places == {"bin": ("bin", "tray", "container")}


# ---------------------------------------------------------------------------------------- the instruction topic
def test_instruction_messages_are_queued_in_order_and_empty_ones_dropped(rig):
    robot, make, _ = rig
    env = make()
    robot.say("put the red cube on the blue cube")
    robot.say("   ")
    robot.say("stack  the green cube on the red cube")
    assert env.pending_instructions == ("put the red cube on the blue cube", "stack the green cube on the red cube")
    assert env.next_instruction(0.1) == "put the red cube on the blue cube"
    assert env.next_instruction(0.1) == "stack the green cube on the red cube"
    assert [e for e in env.events if e["kind"] == "malformed_message" and INSTRUCTION in e["detail"]]
    with pytest.raises(MissingTopicError, match=rf"no instruction on {INSTRUCTION} within 0.05 s"):
        env.next_instruction(0.05)
    threading.Timer(0.05, robot.say, ["put the blue cube on the green cube"]).start()
    assert env.next_instruction(5.0) == "put the blue cube on the green cube"  # a wait ends when one arrives


def test_set_instruction_is_the_next_episode_task(rig):
    robot, make, _ = rig
    env = make()
    env.set_instruction(" put the red cube  on the blue cube")
    robot.publish()
    _, info = env.reset(seed=1)
    assert env.spec.instruction == info["instruction"] == "put the red cube on the blue cube"
    with pytest.raises(ConfigError, match="the instruction is empty"):
        env.set_instruction("  ")


class RecordingPlanner:
    """A planner that is not an oracle: records the task it was given and refuses, so the episode ends at once."""

    is_oracle, source = False, "recording"

    def __init__(self):
        self.tasks: list[TaskSpec] = []
        self.grounding = None

    def reset(self, task):
        self.tasks.append(task)
        self.grounding = Grounding(instruction=task.instruction, refused="test: nothing moves", grounded_by="test")

    def plan(self, observation, memory) -> Plan:
        raise AssertionError("never reached: the instruction was refused")

    def read_goals(self, observation, memory):
        raise AssertionError("never reached: the instruction was refused")


class Idle:
    is_oracle = False

    def reset(self, *args):
        pass

    def set_subgoal(self, subgoal, task=None):
        pass

    def select_action(self, observation):
        return np.zeros(7, np.float32)

    def subgoal_done(self):
        return False

    def verify(self, before, after, subgoal):
        raise AssertionError("never reached")


@pytest.fixture
def bridge_run(rig, monkeypatch, tmp_path):
    """``run_bridge`` on the rig with a recording planner; ``after_build(env)`` runs once the env subscribed."""
    from memory.task_memory import TaskMemoryV1
    from tandem.runtime import bridge_session
    from tandem.runtime.agent import HierarchicalAgent
    from tandem.runtime.registry import Stack

    robot, make, bus = rig
    planner = RecordingPlanner()
    hooks = []

    def build(cfg, transport):
        env = RobotEnv(bridge_config_from_dict(cfg.bridge), InProcessTransport(bus, robot.clock))
        robot.publish()
        for hook in hooks:
            hook(env)
        agent = HierarchicalAgent(planner=planner, verifier=Idle(), executor=Idle(), memory=TaskMemoryV1())
        return Stack(env=env, agent=agent)

    monkeypatch.setattr(bridge_session, "build_bridge_stack", build)

    def run(overrides=(), after_build=None, **top):
        from tandem.cli.common import compose_config, load_config
        from tandem.runtime.config import BridgeRunConfig

        if after_build is not None:
            hooks.append(after_build)
        cfg = load_config(BridgeRunConfig, compose_config("bridge/sim_loopback", [f"out_dir={tmp_path}", *overrides]))
        cfg = dataclasses.replace(cfg, bridge=config(), **top)
        return bridge_session.run_bridge(cfg, transport=InProcessTransport(bus, robot.clock))

    return run, planner, robot


def test_the_command_line_instruction_is_the_first_episode(bridge_run):
    run, planner, _ = bridge_run
    summary = run(["instruction=put the red cube on the green cube"])
    ep = summary["episodes"][0]
    assert planner.tasks[0].instruction == ep["instruction"] == "put the red cube on the green cube"
    assert ep["grounding"]["refused"] == "test: nothing moves" and not summary["success"]
    assert goals_withheld(planner.tasks[0]) and planner.tasks[0].vocabulary.task == "stack_three"
    assert summary["instruction_topic"] == INSTRUCTION and summary["ended"] is None


def test_each_later_episode_runs_the_next_instruction_message(bridge_run):
    run, planner, robot = bridge_run

    def operator(env):
        robot.say("put the green cube on the blue cube")
        robot.say("put the blue cube on the red cube")

    summary = run(["instruction=put the red cube on the green cube", "episodes=3"], after_build=operator)
    assert [e["instruction"] for e in summary["episodes"]] == [
        "put the red cube on the green cube", "put the green cube on the blue cube", "put the blue cube on the red cube"]
    assert [t.instruction for t in planner.tasks] == [e["instruction"] for e in summary["episodes"]]


def test_wait_for_instruction_takes_every_episode_from_the_topic_and_a_timeout_ends_the_run(bridge_run):
    run, planner, robot = bridge_run
    summary = run(["instruction=ignored in this mode", "episodes=3", "wait_for_instruction=true",
                   "instruction_timeout_s=0.2"], after_build=lambda env: robot.say("put the red cube on the blue cube"))
    assert [e["instruction"] for e in summary["episodes"]] == ["put the red cube on the blue cube"]
    assert summary["ended"].startswith(f"no instruction on {INSTRUCTION} within 0.2 s") and not summary["success"]


# ---------------------------------------------------------------------------------------- the rehearsal's judge
class FakeSimEnv:
    """A simulated task whose judge is stack_three's reference reading; its seed draws other goals."""

    def __init__(self):
        from sim.reference_reading import read_instruction

        self.vocab = TaskVocabulary.load(PROJECT_ROOT / STACK_CELL)
        self.read = lambda text: read_instruction(self.vocab, text)
        self.spec = TaskSpec(name="stack_three", instruction="the seed's own", objects=("red", "green", "blue"),
                             max_steps=50, goals=("on(green,blue)",))  # the seed's draw: never the plan's source
        self.goals, self.resets, self.stacked = None, [], set()

    def set_instruction(self, text):
        reading = self.read(text)
        if not reading.ok:
            raise InstructionRefused(f"instruction refused by task 'stack_three''s reference reading: {reading.refused}")
        self.instruction, self.goals = text, reading.goals

    def _obs(self):
        preds = {f"on({a},{b})": f"on({a},{b})" in self.stacked for a in COLORS
                 for b in COLORS if a != b}
        priv = {"task": "stack_three", "objects": {}, "predicates": preds, "goals": list(self.spec.goals),
                "success": all(preds[g] for g in self.spec.goals)}
        return Observation(images={"front": np.zeros((H, W, 3), np.uint8)},
                           proprio=np.array([0.1, 0, 0.5, 1, 0, 0, 0, 0.06], np.float32), privileged=priv)

    def reset(self, seed=None):
        self.resets.append(seed)
        if self.goals is not None:
            self.spec = dataclasses.replace(self.spec, instruction=self.instruction, goals=tuple(self.goals))
        self.stacked = set()
        return self._obs(), {}

    def step(self, action):
        return self._obs(), 0.0, False, False, {}


@pytest.fixture
def rehearsal(rig):
    robot, make, bus = rig
    cfg = config(oracle_side_channel=True, topics={"oracle_privileged": PRIVILEGED_TOPIC})
    sim = FakeSimEnv()
    node = SimRobotNode(sim, InProcessTransport(bus, robot.clock), bridge_config_from_dict(cfg), oracle=True)
    payloads = []
    robot.t.create_subscription(PRIVILEGED_TOPIC, "std_msgs/msg/String", lambda m: payloads.append(cv.msg_to_json(m)))
    node.reset(seed=7)
    stop = threading.Event()
    th = threading.Thread(target=node.run, kwargs={"stop_event": stop}, daemon=True)
    th.start()
    yield make(**cfg), node, sim, payloads
    stop.set()
    th.join(timeout=2)


def test_the_sim_robot_judges_the_bridge_instruction_and_never_sends_goals(rehearsal):
    env, node, sim, payloads = rehearsal
    assert payloads and node.judge is None and not payloads[-1]["success"]  # nothing to judge before an episode
    env.set_instruction("put the red cube on the blue cube, then the green cube on the red cube")
    obs, info = env.reset(seed=0)
    judge = info["judge"]
    assert judge["instruction"] == "put the red cube on the blue cube, then the green cube on the red cube"
    assert judge["goals"] == ["on(red,blue)", "on(green,red)"] and judge["refused"] is None
    assert env.spec.goals == ("on(red,blue)", "on(green,red)")  # the judge's reading, for the oracle components only
    assert sim.resets == [7, 7]  # the scene is reset for the episode (first seed, then +1 per episode)
    for p in payloads:
        assert "spec" not in p and "goals" not in p["privileged"]
    assert "goals" not in obs.privileged and obs.privileged["predicates"]["on(red,blue)"] is False
    sim.stacked = {"on(red,blue)"}
    time.sleep(0.1)
    assert not env.step(np.zeros(7))[4]["success"]  # one goal of two
    sim.stacked = {"on(red,blue)", "on(green,red)"}
    deadline = time.monotonic() + 2
    while not node.judged_success() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    _, _, terminated, _, info = env.step(np.zeros(7))
    assert info["success"] and terminated

    # the next episode: a new instruction, a new judge reading, the next seed
    env.set_instruction("put the green cube on the blue cube")
    _, info = env.reset(seed=1)
    assert info["judge"]["goals"] == ["on(green,blue)"] and env.spec.goals == ("on(green,blue)",)
    assert sim.resets == [7, 7, 8] and node.episodes_started == 2


def test_the_judge_refuses_an_impossible_instruction(rehearsal):
    env, node, sim, payloads = rehearsal
    env.set_instruction("put the red cube on the red cube")
    _, info = env.reset()
    assert "an object on or in itself" in info["judge"]["refused"] and env.spec.goals == ()
    assert sim.resets == [7] and not info["success"]


def test_a_non_oracle_planner_never_receives_the_judge_goals(rehearsal):
    from memory.task_memory import TaskMemoryV1
    from tandem.runtime.agent import HierarchicalAgent
    from tandem.runtime.rollout import run_episode

    env, *_ = rehearsal
    planner = RecordingPlanner()
    agent = HierarchicalAgent(planner=planner, verifier=Idle(), executor=Idle(), memory=TaskMemoryV1())
    env.set_instruction("put the red cube on the blue cube")
    result = run_episode(env, agent, seed=0, record_video=False)
    assert result.summary["judge_goals"] == ["on(red,blue)"]  # recorded for the judge ...
    assert goals_withheld(planner.tasks[0])  # ... and withheld from the planner, which reads the words
    assert planner.tasks[0].instruction == "put the red cube on the blue cube"


def test_the_bridge_waits_for_the_sim_robot_to_start_the_episode(rig):
    robot, make, _ = rig
    env = make(oracle_side_channel=True, topics={"oracle_privileged": PRIVILEGED_TOPIC}, startup_timeout_s=0.3)
    pub = robot.t.create_publisher(PRIVILEGED_TOPIC, "std_msgs/msg/String")
    pub(cv.json_to_msg(robot.ty, {"privileged": {"predicates": {}}, "success": True, "episode": "old"}))
    robot.publish()
    env.set_instruction("put the red cube on the blue cube")
    with pytest.raises(MissingTopicError, match="did not start the episode on /tandem/oracle/episode within 0.3 s"):
        env.reset()


# ---------------------------------------------------------------------------------------- the real transports
def test_the_instruction_topic_over_dds_on_loopback():
    from bridge.dds_transport import DdsTransport

    dom = random.randint(1, 200)
    cfg = bridge_config_from_dict(config(transport="dds", domain_id=dom))
    env, operator = RobotEnv(cfg, DdsTransport(dom)), DdsTransport(dom)
    try:
        pub = operator.create_publisher(INSTRUCTION, "std_msgs/msg/String")
        deadline = time.monotonic() + 10
        while not env.pending_instructions and time.monotonic() < deadline:
            pub(operator.msg_type("std_msgs/msg/String")(data="put the red cube on the blue cube"))
            time.sleep(0.05)
        assert env.next_instruction(0.1) == "put the red cube on the blue cube"
    finally:
        env.close()
        operator.close()


def test_the_instruction_topic_over_rclpy():
    """``std_msgs/msg/String`` on ``/tandem/instruction`` from another ROS 2 node (what ``ros2 topic pub`` sends) is
    queued by the bridge's node; no gripper (control_msgs is not on PyPI, tests/unit/test_bridge_rclpy.py)."""
    from rclpy_support import require_rclpy

    require_rclpy()
    from bridge.rclpy_transport import RclpyTransport

    dom = random.randint(1, 200)
    cfg = bridge_config_from_dict(config(transport="rclpy", domain_id=dom, gripper_mode="none"))
    env, operator = RobotEnv(cfg, RclpyTransport("tandem_test_bridge", dom)), RclpyTransport("tandem_test_op", dom)
    try:
        pub = operator.create_publisher(INSTRUCTION, "std_msgs/msg/String")
        deadline = time.monotonic() + 10
        while not env.pending_instructions and time.monotonic() < deadline:
            pub(operator.msg_type("std_msgs/msg/String")(data="put the red cube on the blue cube"))
            time.sleep(0.05)
        assert env.next_instruction(0.1) == "put the red cube on the blue cube"
    finally:
        env.close()
        operator.close()


def test_summary_files_record_the_instruction(bridge_run, tmp_path):
    run, _, _ = bridge_run
    run(["instruction=put the red cube on the green cube"])
    summary = json.loads((Path(tmp_path) / "bridge_summary.json").read_text())
    assert summary["episodes"][0]["instruction"] == "put the red cube on the green cube"
