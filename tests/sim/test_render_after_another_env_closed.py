"""A known fault, kept as a test until it is fixed: closing one env breaks the depth render of another env that
was created before the close (both headless EGL, one process).

Seen in ``tandem-eval`` when one worker runs several tasks: the learned stack's first plan on stack_three crashes
("AssertionError" from robosuite's ``get_real_depth_map``: the z-buffer read back is uninitialised). Tried without
success: re-binding the env's context before each render (done already), pausing the garbage collector around the
render, re-binding the desktop-GL client API (robosuite's ``EGLGLContext.free`` calls ``eglReleaseThread``). Until it
is fixed, a ``tandem-eval`` worker closes its stack before it builds the next one, never after
(``tandem.evaluation.episode.STACK_CACHE_SIZE``).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.robosuite_env import RobosuiteEnv

pytestmark = pytest.mark.sim


@pytest.mark.xfail(strict=True, reason="closing an env breaks another env's EGL depth render (see module docstring)")
def test_depth_renders_after_another_env_was_closed():
    first = RobosuiteEnv("nut_assembly", image_size=(64, 64))
    first.reset(seed=0)
    first.render_camera("agentview")
    second = RobosuiteEnv("stack_three", image_size=(64, 64), depth_cameras=("agentview",))
    second.reset(seed=0)
    first.close()
    try:
        depth = second.render_depth("agentview")
        assert np.all(np.isfinite(depth)) and 0.1 < float(depth.min()) < float(depth.max()) < 10.0
    finally:
        second.close()
