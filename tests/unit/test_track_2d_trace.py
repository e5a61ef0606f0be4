"""A track executor with ``trace_input="2d"`` takes the subgoal's 2-D keypoint trace (it imported a function that
no longer existed, found by the type check): K points by arc length, in px of its own ``image_size``."""

from __future__ import annotations

import numpy as np

from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_policy import TrackExecutor
from tandem.core.types import KeypointTrace, Subgoal


def test_a_2d_trace_is_resampled_into_the_executors_image():
    cfg = TrackExecutorConfig(trace_input="2d", trace_len=5, image_size=(64, 64), text_encoder="hash", text_dim=16,
                              hidden_dim=32, cond_dim=32, n_layers=1, num_inference_steps=4)
    ex = TrackExecutor(cfg).eval()
    trace = KeypointTrace("agentview", np.array([[0, 0], [100, 50]], np.float32), (128, 128))
    ex.set_subgoal(Subgoal("sg1", "pick", ("red",), "pick up the red cube", trace=trace))
    pts, mask = ex._trace
    assert pts.shape == (5, 2) and np.array_equal(mask, np.ones(5, np.float32))
    np.testing.assert_allclose(pts[[0, -1]], [[0, 0], [50, 25]], atol=1e-4)  # 128 px -> 64 px
    np.testing.assert_allclose(np.diff(pts, axis=0), np.full((4, 2), [12.5, 6.25]), atol=1e-4)  # equal arc steps
