"""Shared robosuite fixtures for tests/sim (built once per session: building an env costs ~3 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def render_env():
    """stack_three with agentview + wrist at 128x128 (fast rendering)."""
    from sim.robosuite_env import RobosuiteEnv

    env = RobosuiteEnv("stack_three")
    yield env
    env.close()


@pytest.fixture(scope="session")
def blind_env():
    """stack_three without cameras (fast; for expert rollouts)."""
    from sim.robosuite_env import RobosuiteEnv

    env = RobosuiteEnv("stack_three", render=False)
    yield env
    env.close()
