"""LazyImages: rendered once on first read, checked on read, stale after the state moved on, keys for free."""

from __future__ import annotations

import numpy as np
import pytest

from tandem.core.errors import StaleObservationError
from tandem.core.lazy_images import LazyImages, materialize_images
from tandem.core.types import Observation


def _lazy(state: dict, bad: bool = False) -> tuple[LazyImages, list[str]]:
    calls: list[str] = []
    at = state["version"]

    def render(cam: str) -> np.ndarray:
        calls.append(cam)
        return np.zeros((4, 4), np.uint8) if bad else np.full((4, 4, 3), state["version"], np.uint8)

    return LazyImages(("agentview", "wrist"), render, lambda: state["version"] == at, step=7), calls


def test_read_once_kept_and_keys_render_nothing():
    state = {"version": 1}
    images, calls = _lazy(state)
    obs = Observation(images=images, proprio=np.zeros(8))
    assert list(obs.images) == ["agentview", "wrist"] and "wrist" in obs.images and len(obs.images) == 2
    assert calls == []
    a = obs.images["agentview"]
    assert obs.images["agentview"] is a and calls == ["agentview"] and images.rendered == ("agentview",)
    with pytest.raises(KeyError):
        obs.images["side"]


def test_stale_read_raises_and_materialized_images_survive():
    state = {"version": 1}
    images, _ = _lazy(state)
    other, _ = _lazy(state)
    materialize_images(Observation(images=other, proprio=np.zeros(8)))
    state["version"] = 2  # the simulator moved on
    with pytest.raises(StaleObservationError, match="'agentview' image of step 7 was never rendered"):
        images["agentview"]
    assert other["wrist"][0, 0, 0] == 1  # rendered while current: the observed state, not the later one


def test_a_bad_render_is_named_on_read():
    images, _ = _lazy({"version": 1}, bad=True)
    obs = Observation(images=images, proprio=np.zeros(8))  # nothing rendered, nothing checked yet
    with pytest.raises(ValueError, match=r"images\['wrist'\] must be uint8 \(H, W, 3\)"):
        obs.images["wrist"]
