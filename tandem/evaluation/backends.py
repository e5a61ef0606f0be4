"""Where episodes run: ``inline`` (this process), ``local`` (a process pool) or ``ray``.

* ``local``: ``concurrent.futures.ProcessPoolExecutor``, spawn context; each worker builds its own env and policy
  with the runtime environment of :mod:`tandem.runtime.environment`. A worker process that dies (segfault,
  ``os._exit``) is found through its in-flight marker file, re-run alone to confirm, and recorded as a
  ``worker_crash`` row; the run continues.
* ``ray``: Ray tasks on a local instance (``ray.init(num_cpus=...)``) or an existing cluster's ``address``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tandem.core.errors import ConfigError, TandemError, UnknownNameError
from tandem.evaluation.config import BACKENDS
from tandem.evaluation.episode import run_job, worker_init
from tandem.evaluation.rows import WORKER_CRASH_REASON, failed_row
from tandem.evaluation.suite import EpisodeJob
from tandem.runtime.environment import runtime_env


def _stamp(row: dict[str, Any], backend: str) -> dict[str, Any]:
    row["backend"] = backend
    row["finished_at"] = round(time.time(), 3)
    return row


def _run_inline(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], **_: Any) -> str:
    worker_init()
    for j in jobs:
        on_row(_stamp(run_job(j), "inline"))
    return "this process (inline)"


def _run_local(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], workers: int,
               scratch: Path, **_: Any) -> str:
    """Process pool (spawn). A broken pool is rebuilt; the episodes that were in flight are re-run one by one in a
    single-worker pool, and the one that breaks it again is recorded as ``worker_crash``."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")
    inflight = scratch / "inflight"
    inflight.mkdir(parents=True, exist_ok=True)
    pending = list(jobs)
    suspects: list[EpisodeJob] = []
    while pending or suspects:
        if suspects:  # isolation round: one worker, one suspect at a time
            batch, n, isolated = [suspects.pop(0)], 1, True
        else:
            batch, pending, n, isolated = pending, [], max(1, min(workers, len(pending))), False
        for f in inflight.glob("*.json"):
            f.unlink(missing_ok=True)
        broken: list[EpisodeJob] = []
        pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=worker_init)
        try:
            futs = {pool.submit(run_job, j, str(inflight)): j for j in batch}
            for fut in as_completed(futs):
                j = futs[fut]
                try:
                    row = fut.result()
                except BrokenProcessPool:
                    broken.append(j)
                    continue
                except TandemError:  # a stack that cannot be built: bad input that stops the run (run_job)
                    raise
                except Exception as e:  # noqa: BLE001 - e.g. a row that cannot be pickled
                    row = failed_row(j, "crash", f"worker error: {type(e).__name__}: {e}")
                on_row(_stamp(row, "local"))
        except BaseException:
            _stop_pool(pool)  # Ctrl-C: `with pool` would wait for every queued episode, whose rows are then lost
            raise
        pool.shutdown(wait=True)
        if not broken:
            continue
        if isolated:
            j = broken[0]
            on_row(_stamp(failed_row(j, "worker_crash", WORKER_CRASH_REASON,
                                     failure_detail="local: confirmed by re-running it alone"), "local"))
            continue
        dead = set()
        for f in inflight.glob("*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                dead.add(json.loads(f.read_text())["key"])
        for j in broken:
            (suspects if j.key in dead else pending).append(j)
        if not suspects:  # no marker survived (killed between jobs): re-run every broken one alone
            pending = [j for j in pending if j not in broken]
            suspects = list(broken)
    return f"a local process pool of {max(1, min(workers, len(jobs)))} worker(s)"


def _stop_pool(pool: Any) -> None:
    """Start no queued episode and end the running ones (their rows are not written; a rerun with the same
    ``out_dir`` resumes them). Python 3.12's ProcessPoolExecutor has no public way to end its workers."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()


def ray_init_kwargs(address: str | None, workers: int) -> tuple[dict[str, Any], str]:
    """The ``ray.init`` arguments for ``ray.address`` and a sentence saying where the episodes will run.

    Args:
        address: ``"local"`` or None: a new private local instance with ``workers`` CPUs, whatever ``RAY_ADDRESS``
            says (``ray.init(address="local")``; with no address Ray would join the cluster ``RAY_ADDRESS`` names
            and fail on ``num_cpus``); ``"auto"`` or a cluster address: connect, without ``num_cpus``.
        workers: CPUs of the local instance.

    Returns:
        ``(kwargs, where)``, e.g. ``"a new local Ray instance with 2 CPUs"``.
    """
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "runtime_env": {"env_vars": {
        **runtime_env(), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}}}
    env_address = os.environ.get("RAY_ADDRESS")
    if address in (None, "local"):
        kw.update(address="local", num_cpus=int(workers))
        where = f"a new local Ray instance with {int(workers)} CPU(s)"
        if env_address:
            where += f" (RAY_ADDRESS={env_address} is not used: ray.address=local; ray.address=auto would join it)"
    else:
        kw["address"] = address
        where = f"the Ray cluster at {address}"
        if address == "auto" and env_address:
            where += f" (RAY_ADDRESS={env_address})"
    return kw, where


def _run_ray(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], workers: int,
             ray_address: str | None = None, **_: Any) -> str:
    """Ray tasks (``max_retries=0``) where :func:`ray_init_kwargs` says; returns that sentence.

    Raises:
        ConfigError: ray is not installed, or the cluster cannot be reached (names the address).
    """
    try:
        import ray
    except ImportError as e:
        raise ConfigError("backend=ray needs the 'ray' extra: pip install 'tandem[ray]'") from e
    started = False
    if ray.is_initialized():
        where = "the Ray instance already initialised in this process"
    else:
        kw, where = ray_init_kwargs(ray_address, workers)
        try:
            ray.init(**kw)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(f"backend=ray could not start {where}: {type(e).__name__}: {e}") from e
        started = True
    print(f"ray: running on {where}", file=sys.stderr)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_entry)
        refs = {remote.remote(j.to_json()): j for j in jobs}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for r in done:
                j = refs.pop(r)
                try:
                    row = ray.get(r)
                except ray.exceptions.RayTaskError as e:  # an exception escaped run_job: a build error stops
                    if isinstance(e.cause, TandemError):
                        raise e.cause from None
                    row = failed_row(j, "crash", f"ray task error: {str(e).splitlines()[0]}")
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayError) as e:
                    row = failed_row(j, "worker_crash", WORKER_CRASH_REASON,
                                     failure_detail=f"ray: {type(e).__name__}")
                on_row(_stamp(row, "ray"))
    finally:
        if started:
            ray.shutdown()
    return where


def _ray_entry(job: dict[str, Any]) -> dict[str, Any]:
    worker_init()
    return run_job(job)


def run_jobs(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], backend: str = "local",
             workers: int = 1, scratch: str | Path | None = None, ray_address: str | None = None) -> str:
    """Run ``jobs`` on ``backend``, calling ``on_row(row)`` in this process as each episode finishes.

    Returns:
        Where they ran, e.g. ``"a local process pool of 2 worker(s)"`` or ``"the Ray cluster at auto"``.

    Raises:
        UnknownNameError: unknown backend. ConfigError: ``workers < 1``, ray not installed.
    """
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    if int(workers) < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if not jobs:
        return "nowhere (no episode to run)"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tandem-eval-", dir=scratch) as tmp:
        fn = {"inline": _run_inline, "local": _run_local, "ray": _run_ray}[backend]
        return fn(jobs, on_row, workers=int(workers), scratch=Path(tmp), ray_address=ray_address)
