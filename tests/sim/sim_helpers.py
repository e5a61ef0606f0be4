"""Helpers shared by tests/sim (imported as a plain module: tests/sim is on sys.path under pytest)."""

from __future__ import annotations

import numpy as np

from tandem.core.types import Subgoal


def make_subgoal(env, i: int, skill: str, args: tuple[str, ...]) -> Subgoal:
    return Subgoal(id=f"sg{i}", skill=skill, args=tuple(args), text=env.spec.subgoal_text(skill, tuple(args)))


def run_subgoal(env, executor, subgoal: Subgoal, obs, budget: int = 300, on_info=None):
    """Step the scripted executor on ``subgoal`` until it is done; returns (obs, info, steps)."""
    executor.set_subgoal(subgoal, env.spec)
    info: dict = {}
    n = 0
    while not executor.subgoal_done() and n < budget:
        obs, _, _, _, info = env.step(executor.select_action(obs))
        n += 1
        if on_info is not None:
            on_info(info)
    return obs, info, n


def random_actions(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, 7)).astype(np.float32)
