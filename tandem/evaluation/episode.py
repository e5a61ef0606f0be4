"""One episode in this process: build (or reuse) the variant's stack, run it, return its row.

:func:`run_job` builds the stack through :func:`tandem.runtime.registry.build_stack` or a variant's ``builder``,
keeps the last few built stacks per process, and raises on an interrupt or a build error: an exception outside
``run_episode``, a NaN action or an unstable simulation is a failed row whose ``failure_kind`` and ``failure`` say
why, while a stack that cannot be built (:class:`tandem.core.errors.BuildError`: a corrupt or mismatched
checkpoint is bad input, not a policy's failure) and Ctrl-C or SIGTERM (also when ctypes hides it in an
``ArgumentError``, :mod:`tandem.core.interrupts`) stop the batch, and nothing is recorded for the episode. Every backend (:mod:`tandem.evaluation.backends`) runs episodes
through it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tandem.core.errors import BuildError, ConfigError, TandemError
from tandem.core.interrupts import reraise_interrupt
from tandem.evaluation.rows import failed_row, row_from_result
from tandem.evaluation.suite import EpisodeJob, config_hash
from tandem.runtime.environment import prepare_runtime

#: Stacks kept alive per worker process (an env build costs seconds; memory ~ 0.2 GB each). One: closing an env
#: breaks the EGL depth render of every env built before the close (tests/sim/test_render_after_another_env_closed.py),
#: so a stack is closed before the next one is built, never after.
STACK_CACHE_SIZE = 1


_STACKS: OrderedDict[str, Any] = OrderedDict()


def _load_builder(spec: str) -> Callable[[Any], Any]:
    import importlib

    module, _, fn = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), fn)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"variant builder {spec!r} cannot be loaded: {e}") from e


def _stack_for(job: EpisodeJob) -> tuple[Any, bool]:
    """(stack, built_now) for ``job`` from this process's cache; before building, closes the least recently used
    stacks beyond ``STACK_CACHE_SIZE - 1`` (see :data:`STACK_CACHE_SIZE`)."""
    ck = config_hash({"build": job.build, "builder": job.builder})
    if ck in _STACKS:
        _STACKS.move_to_end(ck)
        return _STACKS[ck], False
    while _STACKS and len(_STACKS) >= STACK_CACHE_SIZE:
        _, old = _STACKS.popitem(last=False)
        _close_quietly(old)
    if job.builder:
        stack = _load_builder(job.builder)(job.build)
    else:
        from tandem.runtime.registry import build_stack

        stack = build_stack(job.build)
    _STACKS[ck] = stack
    while len(_STACKS) > STACK_CACHE_SIZE:
        _, old = _STACKS.popitem(last=False)
        _close_quietly(old)
    return stack, True


def _build_for(job: EpisodeJob) -> tuple[Any, bool]:
    """:func:`_stack_for`, with every error but an interrupt raised as a tandem error that stops the run.

    Raises:
        TandemError: a tandem error of the builders as it is; any other as a BuildError naming the variant.
        KeyboardInterrupt: an interrupt while building, also one hidden in another exception.
    """
    try:
        return _stack_for(job)
    except TandemError:
        raise
    except Exception as e:  # noqa: BLE001 - e.g. a variant's own builder failing: bad input, never a result row
        reraise_interrupt(e)
        raise BuildError(f"variant {job.variant!r} cannot be built: {type(e).__name__}: {e}") from e


def _close_quietly(stack: Any) -> None:
    with contextlib.suppress(Exception):  # closing a broken env must not fail the next episode
        stack.close()


def _drop_stack(job: EpisodeJob) -> None:
    ck = config_hash({"build": job.build, "builder": job.builder})
    stack = _STACKS.pop(ck, None)
    if stack is not None:
        _close_quietly(stack)


def _inflight_path(inflight_dir: str | None) -> Path | None:
    return None if inflight_dir is None else Path(inflight_dir) / f"{os.getpid()}.json"


def run_job(job: EpisodeJob | Mapping[str, Any], inflight_dir: str | None = None) -> dict[str, Any]:
    """Run one episode in this process and return its row (see module docstring).

    Args:
        job: the episode (or its ``to_json`` dict).
        inflight_dir: folder where this process writes ``<pid>.json`` with the job's key while it runs, so the
            parent can tell which episode a dead worker was running.

    Returns:
        The row: identification columns, outcome columns and :data:`TIMING_COLUMNS`.

    Raises:
        KeyboardInterrupt: an interrupt while building or running, also one hidden in another exception.
        TandemError: the variant's stack cannot be built (a BuildError such as a CheckpointError, a ConfigError,
            an UnknownNameError; any other error of a builder as a BuildError naming the variant). Every error after
            the build is a failed row.
    """
    if isinstance(job, Mapping):
        job = EpisodeJob(**job)
    marker = _inflight_path(inflight_dir)
    if marker is not None:
        marker.write_text(json.dumps({"key": job.key}))
    t0 = time.perf_counter()
    try:
        stack, built = _build_for(job)
        build_time = time.perf_counter() - t0 if built else 0.0
        try:
            from tandem.runtime.rollout import run_episode

            meta = {"key": job.key, "variant": job.variant, "config_hash": job.config_hash, "config": job.build}
            result = run_episode(stack.env, stack.agent, seed=job.seed, out_dir=job.video_dir,
                                 record_video=job.video_dir is not None, max_steps=job.max_steps, meta=meta,
                                 memory_db=job.memory_db)
        except Exception as e:  # noqa: BLE001 - outside run_episode's own guard
            _drop_stack(job)
            reraise_interrupt(e)
            return failed_row(job, "crash", f"crash outside run_episode: {type(e).__name__}: {e}",
                              traceback=traceback.format_exc(limit=6), worker=os.getpid())
        row = row_from_result(job, result.summary, result.log.meta.get("judge_goals") or [])
        row["build_time_s"] = round(build_time, 3)
        row["worker"] = os.getpid()
        if job.video_dir is not None:
            row["video"] = result.paths.get("video")
        if row["failure_kind"] in ("crash", "sim_unstable", "nan_action", "tandem_error"):
            _drop_stack(job)  # never reuse an env that ended in an error: the next episode starts from a fresh one
        return row
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)


def worker_init() -> None:
    """Process-pool and Ray worker initializer: the runtime environment of :mod:`tandem.runtime.environment`
    (headless EGL rendering, offline hub, quiet robosuite)."""
    prepare_runtime()
