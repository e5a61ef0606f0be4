"""LeRobot 0.6's language columns in tandem datasets (issue 50, item 10; docs/lerobot_conventions.md).

The writer fills ``language_persistent`` with subtask and plan rows derived from ``subgoal.task_index``, so that
LeRobot's own resolver (``active_at(t, style="subtask")``) and its message renderer read tandem's subgoals; datasets
written before the columns existed keep loading and resuming. Small synthetic frames keep these fast; the real
collector is checked in tests/integration/test_collect.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from executor_vla.dataset_writer import TandemDatasetWriter, read_info
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError, SubgoalSchemaError

SIZE = (16, 16)
K = 4
INSTRUCTION = "stack it all"
#: (subgoal index, text, frames): two runs of one attempt (one subtask), a second attempt, then a retry of the
#: first text under a new attempt index (a re-pick after a drop: a new subtask).
EPISODE = ((0, "pick a", 3), (0, "pick a", 2), (1, "place a on b", 4), (2, "pick a", 3))


def frame(i: int, sg: int, task_index: int) -> dict:
    """One frame of the writer tests' fake episode (:func:`unit.test_dataset_writer.make_frame`), goal image per
    subgoal."""
    from unit.test_dataset_writer import make_frame

    return make_frame(i, sg, task_index, np.full((*SIZE, 3), 40 * (sg + 1), np.uint8), INSTRUCTION)


def write(root: Path, episodes: int = 2, **kw) -> list[list[str]]:
    """Write ``episodes`` episodes of :data:`EPISODE`; return each episode's per-frame subgoal texts."""
    texts = []
    with TandemDatasetWriter(root, "tandem/test", image_size=SIZE, trace_len=K, **kw) as w:
        for e in range(episodes):
            runs = EPISODE[e % 2:]  # the second episode starts with the attempt's second run
            per_frame = [(sg, text) for sg, text, n in runs for _ in range(n)]
            for i, (sg, text) in enumerate(per_frame):
                f = frame(i + 100 * e, sg, w.subgoal_task_index(text))
                same = [j for j, (s, _) in enumerate(per_frame) if s == sg]  # progress rises to 1 per subgoal
                f[schema.PROGRESS_KEY] = np.array([(same.index(i) + 1) / len(same)], np.float32)
                w.add_frame(f)
            w.save_episode({"seed": e})
            texts.append([t for _, t in per_frame])
    return texts


def load(root: Path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset("tandem/test", root=root, video_backend="pyav")


def task_texts(ds) -> dict[int, str]:
    return {int(i): str(t) for t, i in zip(ds.meta.tasks.index, ds.meta.tasks["task_index"])}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("lang") / "ds"
    return root, write(root)


def test_rows_follow_lerobot_annotate_subtask_and_plan_rule():
    texts = [t for _, t, n in EPISODE for _ in range(n)]
    index = [i for i, _, n in EPISODE for _ in range(n)]
    rows = schema.language_persistent_rows(texts, index, fps=20)
    subtasks = [(r["timestamp"], r["content"]) for r in rows if r["style"] == "subtask"]
    # frames of one attempt (same index, same text) are one subtask; the same text under a new index is another
    assert subtasks == [(0.0, "pick a"), (5 / 20, "place a on b"), (9 / 20, "pick a")]
    plans = [r["content"] for r in rows if r["style"] == "plan"]
    assert plans == ["1. pick a\n2. place a on b\n3. pick a", "1. place a on b\n2. pick a", "1. pick a"]
    assert all(r["role"] == "assistant" and r["camera"] is None and r["tool_calls"] is None for r in rows)
    # LeRobot's writer sorts a persistent slice by (timestamp, style, role)
    assert rows == sorted(rows, key=lambda r: (r["timestamp"], r["style"], r["role"]))


def test_rows_refuse_bad_input():
    with pytest.raises(SubgoalSchemaError, match="2 subgoal texts for 1"):
        schema.language_persistent_rows(["a", "b"], [0], fps=20)
    with pytest.raises(SubgoalSchemaError, match="frame 1"):
        schema.language_persistent_rows(["a", " "], [0, 1], fps=20)


def test_language_features_are_lerobots():
    from lerobot.datasets.language import LANGUAGE_EVENTS, LANGUAGE_PERSISTENT, language_feature_info

    assert (schema.LANGUAGE_PERSISTENT_KEY, schema.LANGUAGE_EVENTS_KEY) == (LANGUAGE_PERSISTENT, LANGUAGE_EVENTS)
    feats = schema.dataset_features()
    assert {k: feats[k] for k in schema.LANGUAGE_KEYS} == language_feature_info()
    assert not set(schema.LANGUAGE_KEYS) & set(schema.dataset_features(language=False))


def test_lerobot_resolves_every_frames_subtask_to_its_subgoal_text(written):
    from lerobot.datasets.language_render import active_at

    root, texts = written
    ds = load(root)
    assert ds.meta.has_language_columns
    tasks = task_texts(ds)
    flat = [t for ep in texts for t in ep]
    assert len(ds) == len(flat)
    for i in range(len(ds)):
        item = ds[i]
        row = active_at(float(item["timestamp"]), persistent=item[schema.LANGUAGE_PERSISTENT_KEY], style="subtask")
        assert row["content"] == flat[i] == tasks[int(item[schema.SUBGOAL_TASK_INDEX_KEY])]
        assert item[schema.LANGUAGE_EVENTS_KEY] == []
        assert item["task"] == INSTRUCTION
    assert ds[len(flat) - 1][schema.LANGUAGE_PERSISTENT_KEY] != ds[0][schema.LANGUAGE_PERSISTENT_KEY]


def test_lerobots_message_renderer_trains_on_the_subgoals(written):
    """LeRobot's RenderMessagesStep with a subtask recipe (main's configs/recipes/subtask.yaml, high-level part)."""
    from lerobot.configs.recipe import TrainingRecipe
    from lerobot.processor.converters import batch_to_transition
    from lerobot.processor.render_messages_processor import RenderMessagesStep
    from lerobot.utils.collate import lerobot_collate_fn

    root, texts = written
    ds = load(root)
    recipe = TrainingRecipe.from_dict({"messages": [
        {"role": "user", "content": "${task}", "stream": "high_level"},
        {"role": "assistant", "content": "${subtask}", "stream": "high_level", "target": True,
         "if_present": "subtask"}]})
    step = RenderMessagesStep(recipe=recipe)
    i = len(texts[0]) - 1  # the last frame of the first episode: its third subtask
    out = step(batch_to_transition(dict(ds[i])))
    messages = out["complementary_data"]["messages"]
    assert [m["content"] for m in messages] == [INSTRUCTION, texts[0][-1]]
    # lerobot-train's collate (chosen because the dataset declares language columns) batches episodes whose row
    # lists differ in length (3 and 2 subtasks)
    batch = lerobot_collate_fn([ds[0], ds[len(texts[0])]])
    assert batch[schema.ACTION_KEY].shape == (2, 7) and batch["task"] == [INSTRUCTION] * 2


def test_tandem_readers_ignore_the_language_columns(written):
    from executor_vla.data import ExecutorDataset
    from executor_vla.dataset_inspect import inspect_dataset
    from executor_vla.frame_cache import FrameCache
    from executor_vla.track_config import TrackExecutorConfig
    from executor_vla.track_data import TrackDataset

    root, texts = written
    inspect_dataset(root, open_with_lerobot=True)
    track = TrackDataset(root, TrackExecutorConfig())
    assert sorted(track.texts) == sorted(set(texts[0]) | set(texts[1]))
    from test_executor_policy import small_cfg

    data = ExecutorDataset(root, small_cfg(image_size=SIZE, trace_len=K), repo_id="tandem/test")
    loader = torch.utils.data.DataLoader(data, batch_size=len(texts[0]) + 2, shuffle=False)
    batch = next(iter(loader))  # frames of both episodes, whose row lists differ in length
    assert not set(schema.LANGUAGE_KEYS) & set(batch)
    cache = FrameCache(data.ds, {})
    assert not set(schema.LANGUAGE_KEYS) & set(cache.window(0))


def test_a_dataset_without_the_columns_is_resumed_without_them(tmp_path):
    root = tmp_path / "old"
    old = schema.dataset_features(image_size=SIZE, trace_len=K, language=False)
    write(root, episodes=1, features=old)
    write(root, episodes=1, mode="resume")  # today's writer, whose default schema has the columns
    info = read_info(root)
    assert not set(schema.LANGUAGE_KEYS) & set(info["features"])
    ds = load(root)
    assert not ds.meta.has_language_columns and len(ds) == 2 * sum(n for _, _, n in EPISODE)
    assert schema.LANGUAGE_PERSISTENT_KEY not in ds[0]
    assert task_texts(ds)[int(ds[0][schema.SUBGOAL_TASK_INDEX_KEY])] == "pick a"


def test_an_unregistered_subgoal_index_is_named(tmp_path):
    with TandemDatasetWriter(tmp_path / "ds", "tandem/test", image_size=SIZE, trace_len=K) as w:
        w.subgoal_task_index("pick a")
        w.add_frame(frame(0, 0, 7))
        with pytest.raises(DatasetSchemaError, match=r"subgoal.task_index \[7\] not in the tasks table"):
            w.save_episode()
