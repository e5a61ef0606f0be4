"""The local evaluation backend stops on Ctrl-C: no queued episode starts and the running ones end (found in
review: ``with ProcessPoolExecutor`` waited for every queued episode, whose rows were then thrown away)."""

from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor

from tandem.evaluation.backends import _stop_pool


def test_stopping_the_pool_cancels_queued_work_and_ends_the_running_worker() -> None:
    pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
    futures = [pool.submit(time.sleep, 30) for _ in range(6)]
    while not futures[0].running():
        time.sleep(0.05)
    procs = list(pool._processes.values())
    t0 = time.monotonic()
    _stop_pool(pool)
    while any(p.is_alive() for p in procs) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert all(not p.is_alive() for p in procs) and time.monotonic() - t0 < 10  # not 6 x 30 s
    while not all(f.cancelled() or f.done() for f in futures) and time.monotonic() - t0 < 10:
        time.sleep(0.05)  # each is cancelled, or fails once the pool sees its worker ended
    assert all(f.cancelled() or f.done() for f in futures) and time.monotonic() - t0 < 10
    assert not any(not f.cancelled() and f.exception() is None for f in futures)  # none ran to the end
