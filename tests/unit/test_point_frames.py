"""The frame of a VLM's trace points (issue 13, Part 2, item 4): each model's frame, converted to camera pixels."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from planner_vlm.clients.openai_client import OpenAICompatibleClient
from planner_vlm.clients.scripted_client import ScriptedVLMClient
from planner_vlm.clients.transformers_client import processor_point_frame
from planner_vlm.factory import make_vlm_planner
from planner_vlm.plan_parser import parse_plan
from planner_vlm.point_frames import PointFrame, default_point_frame, smart_resize
from tandem.core.errors import ConfigError, PlanParseError
from tandem.core.types import Observation, TaskSpec

TASK = TaskSpec(name="stack_three", instruction="stack red on green", objects=("red", "green"), max_steps=100,
                skills={"stack": "on({0},{1})"}, skill_texts={"stack": "stack the {0} cube on the {1} cube"},
                cameras=("agentview", "wrist"), image_size=(128, 128))


def reply(points) -> str:
    return json.dumps({"rationale": "r", "done": [], "remaining": [{"skill": "stack", "args": ["red", "green"],
                                                                     "text": "t"}],
                       "next_trace": {"camera": "agentview", "points": points}})


@pytest.mark.parametrize("size", [(128, 128), (84, 84), (16, 24), (480, 640), (720, 1280), (5000, 3000)])
def test_smart_resize_is_the_qwen_processor_rule(size):
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as reference

    assert smart_resize(*size, factor=28, min_pixels=3136, max_pixels=12845056) == \
        reference(*size, factor=28, min_pixels=3136, max_pixels=12845056)
    assert smart_resize(128, 128) == (140, 140)


@pytest.mark.parametrize("model, kind", [
    ("Qwen/Qwen2.5-VL-7B-Instruct", "resized_pixels"), ("qwen2.5vl:7b", "resized_pixels"),
    ("qwen2_5_vl", "resized_pixels"),
    ("Qwen/Qwen2-VL-2B-Instruct", "grid1000"), ("qwen2_vl", "grid1000"),
    ("Qwen/Qwen3-VL-8B-Instruct", "grid1000"), ("qwen3-vl:8b", "grid1000"), ("qwen3_vl_moe", "grid1000"),
    ("gpt-4o", "unit"), ("llava-hf/llava-1.5-7b-hf", "unit"), (None, "unit"),
])
def test_each_model_declares_its_frame(model, kind):
    assert default_point_frame(model).kind == kind
    assert OpenAICompatibleClient("http://127.0.0.1:1/v1", model or "m").point_frame.kind == \
        default_point_frame(model or "m").kind


@pytest.mark.parametrize("frame, points, camera_px", [
    # the input: Qwen2.5-VL saw the 128 px image as 140 px; [135, 66] is inside it
    (PointFrame("resized_pixels"), [[135, 66], [0, 139.9]], [[135 * 128 / 140, 66 * 128 / 140], [0, 139.9 * 128 / 140]]),
    (PointFrame("grid1000"), [[500, 250], [0, 1000]], [[64, 32], [0, 127.99999]]),
    (PointFrame("unit"), [[0.5, 0.25], [1.0, 0.0]], [[64, 32], [127.99999, 0]]),
    (PointFrame("pixels"), [[10, 20], [127.5, 0]], [[10, 20], [127.5, 0]]),
])
def test_points_are_converted_to_camera_pixels(frame, points, camera_px):
    tr = parse_plan(reply(points), TASK, point_frame=frame).remaining[0].trace
    assert tr.image_size == (128, 128) and tr.points.dtype == np.float32
    np.testing.assert_allclose(tr.points, camera_px, atol=1e-4)
    assert np.all(tr.points < 128) and np.all(tr.points >= 0)


@pytest.mark.parametrize("frame, point, words", [
    (PointFrame("pixels"), [135, 66], "x in [0, 128)"),  # the point, read as camera pixels
    (PointFrame("resized_pixels"), [140, 66], "x in [0, 140)"),
    (PointFrame("grid1000"), [1001, 5], "0-1000 grid"),
    (PointFrame("unit"), [1.2, 0.1], "normalised"),
    (PointFrame("unit"), [-0.01, 0.1], "normalised"),
])
def test_points_outside_the_frame_name_it(frame, point, words):
    with pytest.raises(PlanParseError, match=f"outside the {frame.kind} frame") as e:
        parse_plan(reply([point]), TASK, point_frame=frame)
    assert words in str(e.value)


@pytest.mark.parametrize("kind, size_words, answer, expected", [
    ("resized_pixels", "140 x 140", [[135, 66]], [[123.428571, 60.342857]]),
    ("grid1000", "128 x 128", [[500, 250]], [[64, 32]]),
    ("unit", "128 x 128", [[0.5, 0.25]], [[64, 32]]),
    ("pixels", "128 x 128", [[64, 32]], [[64, 32]]),
])
def test_the_planner_asks_for_the_frame_and_converts_the_answer(kind, size_words, answer, expected):
    client = ScriptedVLMClient([reply(answer)], point_frame=PointFrame(kind))
    planner = make_vlm_planner({"backend": "scripted"}, TASK, client=client)
    img = np.zeros((128, 128, 3), np.uint8)
    plan = planner.plan(Observation(images={"agentview": img, "wrist": img}, proprio=np.zeros(8)), None)
    np.testing.assert_allclose(plan.remaining[0].trace.points, expected, atol=1e-4)
    user = client.requests[0]["messages"][1].parts[0].text
    assert f"Each image is {size_words} pixels" in user
    assert PointFrame(kind).describe((128, 128)) in user
    schema = client.requests[0]["json_schema"]
    assert schema["properties"]["next_trace"]["anyOf"][0]["properties"]["points"]["description"].startswith(
        PointFrame(kind).describe((128, 128)))


def test_config_picks_or_overrides_the_frame():
    qwen = {"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "Qwen/Qwen2.5-VL-7B-Instruct"}
    assert make_vlm_planner(qwen, TASK).point_frame == PointFrame("resized_pixels")
    assert make_vlm_planner({**qwen, "point_frame": "auto"}, TASK).point_frame.kind == "resized_pixels"
    assert make_vlm_planner({**qwen, "point_frame": "grid1000"}, TASK).point_frame.kind == "grid1000"
    custom = make_vlm_planner({**qwen, "point_frame_resize": {"max_pixels": 128 * 28 * 28}}, TASK).point_frame
    assert custom == PointFrame("resized_pixels", max_pixels=128 * 28 * 28)
    assert make_vlm_planner({"backend": "scripted", "replies": ["{}"]}, TASK).point_frame.kind == "pixels"
    with pytest.raises(ConfigError, match="point_frame must be"):
        make_vlm_planner({**qwen, "point_frame": "percent"}, TASK)
    with pytest.raises(ConfigError, match="point_frame_resize"):
        make_vlm_planner({**qwen, "point_frame_resize": {"patch": 14}}, TASK)


def test_a_loaded_transformers_model_declares_its_processor_frame():
    ip = SimpleNamespace(patch_size=14, merge_size=2, size={"shortest_edge": 3136, "longest_edge": 1003520})
    frame = processor_point_frame("qwen2_5_vl", SimpleNamespace(image_processor=ip))
    assert frame == PointFrame("resized_pixels", factor=28, min_pixels=3136, max_pixels=1003520)
    assert processor_point_frame("qwen2_vl", SimpleNamespace(image_processor=ip)).kind == "grid1000"
    assert processor_point_frame("qwen3_vl", SimpleNamespace()).kind == "grid1000"
    assert processor_point_frame("llava", SimpleNamespace()).kind == "unit"
