"""OracleVerifier: verdicts and replanning-friendly reasons from hand-made privileged state."""

from __future__ import annotations

import numpy as np
import pytest

from planner_vlm.oracle_verifier import OracleVerifier
from tandem.core.errors import ConfigError, SubgoalSchemaError, UnknownNameError, UnknownSkillError
from tandem.core.protocols import Verifier
from tandem.core.types import Observation, Subgoal, TaskSpec

STACK = TaskSpec(
    name="stack_three", instruction="stack red on green, then blue on red", objects=("red", "green", "blue"),
    max_steps=900, skills={"pick": "grasped({0})", "stack": "on({0},{1})"}, goals=("on(red,green)", "on(blue,red)"),
)
BINS = TaskSpec(name="pick_place_bins", instruction="milk to its bin", objects=("milk",), max_steps=900,
                skills={"pick": "grasped({0})", "place": "in_bin({0})"}, goals=("in_bin(milk)",),
                targets=("milk_bin",))

STACK_RG = Subgoal(id="sg2", skill="stack", args=("red", "green"), text="stack the red cube on the green cube")


def obs(preds: dict[str, bool], objects: dict[str, tuple[float, float, float]] | None = None,
        eef=(0.0, 0.0, 1.0), goals=()) -> Observation:
    priv = {"predicates": preds, "goals": list(goals),
            "objects": {k: {"pos": list(v), "quat": [1.0, 0.0, 0.0, 0.0]} for k, v in (objects or {}).items()}}
    return Observation(images={}, proprio=np.array([*eef, 1, 0, 0, 0, 0.04]), privileged=priv)


def stack_preds(**true):
    preds = {"on(red,green)": False, "on(blue,red)": False, "grasped(red)": False, "grasped(blue)": False}
    return preds | {k.replace("_", ","): v for k, v in true.items()}


def test_implements_protocol():
    assert isinstance(OracleVerifier(STACK), Verifier)


def test_success_when_predicate_holds():
    v = OracleVerifier(STACK).verify(obs(stack_preds()), obs({**stack_preds(), "on(red,green)": True}), STACK_RG)
    assert v.success and v.confidence == 1.0 and v.source == "oracle"
    assert v.reason == "on(red,green) holds"


def test_failure_reason_gives_pose_distance_motion_and_grasp():
    before = obs(stack_preds(), {"red": (0.10, -0.05, 0.83), "green": (0.0, 0.0, 0.83)})
    after = obs({**stack_preds(), "grasped(red)": True}, {"red": (0.11, -0.05, 0.90), "green": (0.0, 0.0, 0.83)},
                eef=(0.11, -0.05, 0.93))
    v = OracleVerifier(STACK).verify(before, after, STACK_RG)
    assert not v.success and v.confidence == 1.0
    assert v.reason.startswith("on(red,green) is false: red is at (0.11, -0.05, 0.90), ")
    d = np.linalg.norm([0.11, -0.05, 0.07])
    assert f"{d:.2f} m from green (horizontal {np.hypot(0.11, 0.05):.2f} m, height +0.07 m)" in v.reason
    assert "0.03 m from the gripper" in v.reason
    assert f"moved {np.linalg.norm([0.01, 0, 0.07]):.2f} m during the attempt" in v.reason
    assert "red is still grasped (not released)" in v.reason


def test_failure_reason_when_nothing_moved_and_goal_held_before():
    pos = {"red": (0.1, 0.0, 0.8), "green": (0.0, 0.0, 0.8)}
    v = OracleVerifier(STACK).verify(obs({**stack_preds(), "on(red,green)": True}, pos), obs(stack_preds(), pos),
                                     STACK_RG)
    assert not v.success
    assert "did not move during the attempt" in v.reason and v.reason.endswith("it held before the attempt")


def test_failure_without_poses_is_still_clear():
    v = OracleVerifier(STACK).verify(obs(stack_preds()), obs(stack_preds()), STACK_RG)
    assert v.reason == "on(red,green) is false"


def test_success_notes_goals_broken_during_the_attempt():
    before = obs({**stack_preds(), "on(blue,red)": True})
    after = obs({**stack_preds(), "on(red,green)": True})
    v = OracleVerifier(STACK).verify(before, after, STACK_RG)
    assert v.success and "but on(blue,red) became false during the attempt" in v.reason


def test_place_uses_the_bin_pose():
    sg = Subgoal(id="sg2", skill="place", args=("milk", "milk_bin"), text="place the milk in the milk_bin")
    preds = {"in_bin(milk)": False, "grasped(milk)": False}
    after = obs(preds, {"milk": (0.2, 0.1, 0.9), "milk_bin": (0.2, 0.4, 0.8)})
    v = OracleVerifier(BINS).verify(obs(preds), after, sg)
    assert not v.success and "in_bin(milk) is false: milk is at (0.20, 0.10, 0.90), 0.32 m from milk_bin" in v.reason


def test_without_reset_uses_the_shared_skill_predicates_and_privileged_goals():
    verifier = OracleVerifier()
    before = obs({**stack_preds(), "on(blue,red)": True}, goals=STACK.goals)
    after = obs({**stack_preds(), "on(red,green)": True}, goals=STACK.goals)
    v = verifier.verify(before, after, STACK_RG)
    assert v.success and "on(blue,red) became false" in v.reason
    verifier.reset(BINS)
    with pytest.raises(UnknownSkillError, match="unknown skill 'stack'; known skills: pick, place"):
        verifier.verify(before, after, STACK_RG)


def test_unknown_predicate_raises_naming_it_and_the_known_ones():
    sg = Subgoal(id="x", skill="stack", args=("blue", "green"), text="")
    with pytest.raises(UnknownNameError, match=r"unknown predicate 'on\(blue,green\)'; known predicates: "
                                               r"grasped\(blue\), grasped\(red\), on\(blue,red\), on\(red,green\)"):
        OracleVerifier(STACK).verify(obs(stack_preds()), obs(stack_preds()), sg)


def test_too_few_args_raise_schema_error():
    with pytest.raises(SubgoalSchemaError, match=r"stack\(red\) has too few args"):
        OracleVerifier(STACK).verify(obs(stack_preds()), obs(stack_preds()),
                                     Subgoal(id="x", skill="stack", args=("red",), text=""))


def test_missing_privileged_raises():
    plain = Observation(images={}, proprio=np.zeros(8))
    with pytest.raises(ConfigError, match="oracle verifier needs simulator ground truth"):
        OracleVerifier(STACK).verify(plain, plain, STACK_RG)
    with pytest.raises(ConfigError, match="needs a TaskSpec"):
        OracleVerifier().reset("stack_three")
