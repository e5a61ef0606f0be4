"""Held-out seeds: an evaluation must not run a learned executor on the seeds of its own demonstrations.

``tandem-train`` records, in each checkpoint, the simulator seeds of the episodes it trained on
(``config.json`` ``extra.dataset.seeds``: ``{task: [seed, ...]}``, :func:`executor_vla.dataset_writer.episode_seeds`).
Before any episode runs, :func:`check_held_out` resolves the executor checkpoint of every job (as ``build_stack``
will) and refuses a suite whose seeds the checkpoint was trained on. A checkpoint that records no seeds (trained
before they were recorded, or on a dataset without a journal) is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from executor_vla.loading import read_checkpoint_config
from tandem.core.errors import CheckpointError, ConfigError
from tandem.runtime.config import StackConfig, TandemCheckpointWiring, load
from tandem.runtime.registry import resolve_checkpoint


def training_seeds(checkpoint: str | Path) -> dict[str, frozenset[int]]:
    """``{task: seeds}`` a checkpoint was trained on (``extra.dataset.seeds`` of its ``config.json``); ``{}`` when
    it records none or has no readable ``config.json`` (loading the stack reports that checkpoint's error)."""
    try:
        raw = read_checkpoint_config(checkpoint)
    except CheckpointError:
        return {}
    seeds = ((raw.get("extra") or {}).get("dataset") or {}).get("seeds") or {}
    return {str(t): frozenset(int(s) for s in v) for t, v in seeds.items()} if isinstance(seeds, dict) else {}


def training_seed_overlap(jobs: Iterable[Any]) -> dict[tuple[str, str], list[int]]:
    """``{(checkpoint, task): seeds}`` of the jobs (``EpisodeJob``) whose seed is among the training seeds of the
    executor checkpoint that their stack loads. Jobs with a custom builder, or an executor without a tandem
    checkpoint, are skipped.

    Raises:
        ConfigError: a job's stack config is invalid, or names no checkpoint where none is shipped.
    """
    found: dict[tuple[str, str], set[int]] = {}
    cache: dict[tuple[str, str], tuple[str, frozenset[int]]] = {}
    for j in jobs:
        if j.builder:
            continue
        key = (j.variant, j.task)
        if key not in cache:
            stack = load(StackConfig, j.build, f"variants.{j.variant}")
            if not isinstance(stack.executor, TandemCheckpointWiring):
                cache[key] = ("", frozenset())
            else:
                path = resolve_checkpoint(stack.executor, j.task, stack.planner.name)
                cache[key] = (str(path), training_seeds(path).get(j.task, frozenset()))
        ck, seeds = cache[key]
        if ck and j.seed in seeds:
            found.setdefault((ck, j.task), set()).add(int(j.seed))
    return {k: sorted(v) for k, v in found.items()}


def check_held_out(jobs: Iterable[Any]) -> None:
    """Refuse jobs that run an executor on seeds it was trained on (see :func:`training_seed_overlap`).

    Raises:
        ConfigError: naming each checkpoint, task and the overlapping seeds, and how to choose others.
    """
    overlap = training_seed_overlap(jobs)
    if not overlap:
        return
    lines = [f"{ck} was trained on {task} seeds {_ranges(seeds)}" for (ck, task), seeds in sorted(overlap.items())]
    raise ConfigError("the suite's seeds are not held out: " + "; ".join(lines) + ". Evaluate on other seeds "
                      "(suite.seed_start=, e.g. 1000 for the held-out test seeds), or pass allow_training_seeds=true "
                      "to measure training-seed performance on purpose")


def _ranges(seeds: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    out: list[str] = []
    start = prev = seeds[0]
    for s in [*seeds[1:], None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if s is not None:
            start = prev = s
    return ", ".join(out)
