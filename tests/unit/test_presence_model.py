"""The presence model: it learns a tiny presence problem, fits thresholds, round-trips and refuses bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from planner_vlm.learned.presence_model import (
    PresenceModel,
    PresenceModelConfig,
    PresenceNet,
    fit_absent_below,
)
from planner_vlm.learned.presence_train import presence_accuracy, presence_logits, train_presence
from tandem.core.errors import CheckpointError, ConfigError

COLOURS = {"red": (220, 30, 30), "blue": (30, 30, 220)}


def squares(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` pairs of noisy grey 32 x 32 views; each present object (probability 0.5, red and/or blue) is a 6 px
    square at a random place in one of the two views, the other view not showing it (as an object hidden from one
    camera): ``(uint8 (n, 2, 32, 32, 3), bool (n, 2))``."""
    images = rng.integers(90, 140, (n, 2, 32, 32, 3)).astype(np.uint8)
    present = rng.uniform(size=(n, 2)) < 0.5
    for i in range(n):
        for j, colour in enumerate(COLOURS.values()):
            if present[i, j]:
                y, x = rng.integers(0, 26, 2)
                images[i, rng.integers(2), y:y + 6, x:x + 6] = colour
    return images, present


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def small_config() -> PresenceModelConfig:
    return PresenceModelConfig(objects=tuple(COLOURS), cameras=("agentview", "wrist"), image_size=(32, 32),
                               channels=(8, 8, 16, 16), hidden=16)


def test_a_tiny_presence_problem_is_learned() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    images, present = squares(400, rng)
    net, log = train_presence(images, present, small_config(), max_minutes=2.0, max_steps=500, batch_size=32, seed=0)
    assert log["steps"] == 500
    assert log["loss_last"] < 0.3 * log["loss_first"]  # learned, not only run
    test_images, test_present = squares(200, rng)
    acc = presence_accuracy(presence_logits(net, test_images), test_present, tuple(COLOURS))
    assert acc["accuracy"] >= 0.95, acc


def test_fit_keeps_every_present_read_and_splits_a_gap() -> None:
    below, report = fit_absent_below([3.0, 4.0, 5.0], [-6.0, -4.0])
    assert logit(below) == pytest.approx(-0.5)  # the gap's middle, below min(present) - 1
    assert report["absent_caught"] == 1.0 and report["present_refused"] == 0
    below, report = fit_absent_below([1.0, 4.0], [2.0, -3.0])  # overlapping: min(present) - margin
    assert logit(below) == pytest.approx(0.0)
    assert report["absent_caught"] == 0.5 and report["present_refused"] == 0


@pytest.mark.parametrize("present, absent, match", [([], [1.0], "present reads"), ([np.nan], [], "non-finite"),
                                                     ([1.0], [np.inf], "non-finite")])
def test_fit_refuses_bad_reads(present: list[float], absent: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fit_absent_below(present, absent)


def test_checkpoint_round_trip_and_refusal(tmp_path) -> None:
    cfg = small_config()
    torch.manual_seed(0)
    model = PresenceModel(cfg, PresenceNet(cfg), absent_below={"red": 0.2, "blue": 0.9999}, metrics={"x": 1})
    model.save(tmp_path / "ck", command="python scripts/train_presence.py ...")
    loaded = PresenceModel.from_checkpoint(tmp_path / "ck")
    image = {"agentview": np.full((32, 32, 3), 120, np.uint8), "wrist": np.full((32, 32, 3), 90, np.uint8)}
    np.testing.assert_allclose(loaded.predict(image), model.predict(image))
    assert loaded.command.startswith("python scripts/train_presence.py")
    assert [name for name, _ in loaded.absent(loaded.predict(image), ["blue"])] == ["blue"]  # any read < 0.9999
    assert "presence" in loaded.absent(loaded.predict(image), ["blue"])[0][1]


def test_other_sizes_are_resized_and_bad_images_and_names_are_refused() -> None:
    model = PresenceModel(small_config())
    views = np.random.default_rng(0).integers(0, 255, (2, 32, 32, 3)).astype(np.uint8)
    image = {"agentview": views[0], "wrist": views[1], "other": np.zeros((5, 5), np.uint8)}  # unread cameras: ignored
    big = {c: v.repeat(2, 0).repeat(2, 1) for c, v in zip(("agentview", "wrist"), views)}
    np.testing.assert_allclose(model.predict(big), model.predict(image), atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        model.predict({**image, "wrist": np.zeros((32, 32), np.uint8)})
    with pytest.raises(ValueError, match="no 'wrist' image"):
        model.predict({"agentview": views[0]})
    with pytest.raises(ValueError, match="green"):
        model.absent(model.predict(image), ["green"])


def test_bad_configs_and_checkpoints_are_named(tmp_path) -> None:
    with pytest.raises(ConfigError, match="unknown presence model config keys"):
        PresenceModelConfig.from_dict({"objects": ["a"], "colour": 1})
    with pytest.raises(ConfigError, match="unique"):
        PresenceModelConfig(objects=("a", "a"))
    with pytest.raises(ConfigError, match="cameras"):
        PresenceModelConfig(objects=("a",), cameras=())
    cfg = small_config()
    with pytest.raises(ConfigError, match="each object"):
        PresenceModel(cfg, absent_below={"red": 0.1})
    with pytest.raises(ConfigError, match=r"in \(0, 1\)"):
        PresenceModel(cfg, absent_below={"red": 0.1, "blue": 1.5})
    with pytest.raises(CheckpointError, match="missing"):
        PresenceModel.from_checkpoint(tmp_path / "none")
    path = PresenceModel(cfg).save(tmp_path / "ck")
    raw = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**raw, "format": "tandem-state-model/1"}))
    with pytest.raises(CheckpointError, match="format"):
        PresenceModel.from_checkpoint(path)
    (path / "config.json").write_text(json.dumps({**raw, "absent_below": {"red": "low", "blue": 0.1}}))
    with pytest.raises(CheckpointError, match="absent_below"):
        PresenceModel.from_checkpoint(path)
    (path / "config.json").write_text(json.dumps({**raw, "model": {**raw["model"], "hidden": 8}}))
    with pytest.raises(CheckpointError, match="does not match"):
        PresenceModel.from_checkpoint(path)
    (path / "config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="format"):
        PresenceModel.from_checkpoint(path)
