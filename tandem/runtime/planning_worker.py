"""Planning off the control path: the planner runs in a worker thread; the control loop only polls.

:class:`PlanningWorker` owns one daemon thread (``concurrent.futures.ThreadPoolExecutor`` with one worker).
:meth:`PlanningWorker.submit` hands it a planning request and returns at once; :meth:`PlanningWorker.poll` returns
the finished result or None, never blocking. The planner reads a :class:`BufferedMemory`: an independent copy of
task memory taken on the control thread when the request is made (``TaskMemory.snapshot()``), whose writes
(``record_event``, ``record_fact``: a VLM planner logs its exchanges) are buffered and replayed onto the live
memory by the control thread when the result is collected. So the memory is only ever touched by the control
thread, and the planner sees one consistent state.

Why a thread and not a process: the planners that are slow are a VLM behind an HTTP server (the thread waits on a
socket and releases the GIL) and a local transformers / torch model (torch releases the GIL in its kernels). A
process would need the planner, its model and the memory pickled across, for no gain on those. A planner that
burns pure-Python CPU for seconds does hold the GIL in 5 ms slices (``sys.getswitchinterval``); the benchmark
``benchmarks/async_planning_jitter.py`` measures both kinds.

One request is in flight at a time. A request made while another runs is queued as the *latest* one (older queued
requests are dropped): the agent only ever wants a plan for the newest state.
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tandem.core.errors import ConfigError
from tandem.core.protocols import Planner, TaskMemory
from tandem.core.types import Observation, Plan, RetryPolicy, Subgoal, TaskSpec

#: TaskMemory methods a planner may call to write; they are buffered and replayed on the control thread.
BUFFERED_WRITES: tuple[str, ...] = ("record_event", "record_fact")


class BufferedMemory:
    """A TaskMemory for a planner in a worker thread: reads from a snapshot, buffers writes.

    Args:
        snapshot: ``TaskMemory.snapshot()`` of the live memory, taken on the control thread.

    Reads (``view``, ``attempts``, ``events``, ``retry_policy``) go to the snapshot. ``record_event`` and
    ``record_fact`` are kept in :attr:`writes` as ``(method name, args, kwargs)``; any other write raises
    ConfigError (a planner must not record plans, attempts or verdicts itself).
    """

    def __init__(self, snapshot: TaskMemory):
        self._snap = snapshot
        self.writes: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    # reads
    def view(self) -> dict[str, Any]:
        """The snapshot's view."""
        return self._snap.view()

    def attempts(self, subgoal: Subgoal) -> int:
        """The snapshot's attempt count at ``subgoal``'s signature."""
        return self._snap.attempts(subgoal)

    def events(self) -> list[dict[str, Any]]:
        """The snapshot's event log."""
        return self._snap.events()

    def retry_policy(self, subgoal: Subgoal) -> RetryPolicy:
        """The snapshot's retry policy for ``subgoal``."""
        return self._snap.retry_policy(subgoal)

    def snapshot(self) -> TaskMemory:
        """A copy of the snapshot."""
        return self._snap.snapshot()

    # buffered writes
    def record_event(self, kind: str, step: int, **data: Any) -> None:
        """Buffered: replayed on the control thread's memory after the plan."""
        self.writes.append(("record_event", (kind, step), data))

    def record_fact(self, obj: str, fact: str, step: int, source: str = "planner") -> None:
        """Buffered: replayed on the control thread's memory after the plan."""
        self.writes.append(("record_fact", (obj, fact, step), {"source": source}))

    # refused writes
    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError("a planner running in the planning worker may only call record_event / record_fact on "
                          "its memory; plans, attempts and verdicts are recorded by the agent")

    start_episode = record_plan = record_attempt = record_verdict = record_step = _refuse
    open_store = finish_episode = save = _refuse

    def replay_onto(self, memory: TaskMemory) -> None:
        """Apply the buffered writes to ``memory`` in order (call on the control thread)."""
        for name, args, kwargs in self.writes:
            if name not in BUFFERED_WRITES:  # pragma: no cover - only buffered names are stored
                raise ConfigError(f"cannot replay {name!r}")
            getattr(memory, name)(*args, **kwargs)
        self.writes = []


@dataclass
class PlanResult:
    """A finished planning request.

    Attributes:
        request_id: the id :meth:`PlanningWorker.submit` returned.
        plan: the plan, or None if the planner raised.
        error: the exception the planner raised, or None.
        latency_s: wall time of ``planner.plan`` in the worker (s).
        memory: the buffered memory the planner wrote to (replay it with ``replay_onto``).
        thread: name of the thread the planner ran in.
        tag: the caller's tag given to ``submit``.
    """

    request_id: int
    plan: Plan | None
    error: BaseException | None
    latency_s: float
    memory: BufferedMemory
    thread: str
    tag: Any = None


@dataclass
class _Request:
    request_id: int
    observation: Observation
    memory: BufferedMemory
    tag: Any
    future: Future | None = field(default=None)


class PlanningWorker:
    """Runs ``planner.plan`` in one background thread (see the module docstring).

    Args:
        planner: the planner (its ``plan`` is only ever called from the worker thread, one call at a time).
        name: thread name prefix.

    Use: ``submit(obs, memory.snapshot())`` -> request id; ``poll()`` each control step -> ``PlanResult`` or None;
    ``reset(task)`` between episodes (waits for a running request to end, drops queued ones, resets the planner);
    ``close()`` at the end.
    """

    def __init__(self, planner: Planner, name: str = "tandem-planner"):
        self.planner = planner
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._ids = itertools.count(1)
        self._running: _Request | None = None
        self._queued: _Request | None = None
        self._lock = threading.Lock()
        self.dropped = 0

    @property
    def busy(self) -> bool:
        """Whether a request is running or queued."""
        return self._running is not None or self._queued is not None

    def _run(self, req: _Request) -> PlanResult:
        t0 = time.perf_counter()
        try:
            plan, err = self.planner.plan(req.observation, req.memory), None  # type: ignore[arg-type]
        except BaseException as e:  # noqa: BLE001 - handed to the control thread, which decides
            plan, err = None, e
        return PlanResult(req.request_id, plan, err, time.perf_counter() - t0, req.memory,
                          threading.current_thread().name, req.tag)

    def submit(self, observation: Observation, snapshot: TaskMemory, tag: Any = None) -> int:
        """Request a plan for ``observation`` and the memory ``snapshot``; returns at once with the request id.

        If a request is running, this one is queued (replacing an older queued one, counted in ``dropped``).
        """
        req = _Request(next(self._ids), observation, BufferedMemory(snapshot), tag)
        with self._lock:
            if self._running is None:
                self._start(req)
            else:
                if self._queued is not None:
                    self.dropped += 1
                self._queued = req
        return req.request_id

    def _start(self, req: _Request) -> None:
        req.future = self._pool.submit(self._run, req)
        self._running = req

    def poll(self) -> PlanResult | None:
        """The result of the running request if it has finished (then the queued one starts), else None.
        Never blocks."""
        with self._lock:
            run = self._running
            if run is None or run.future is None or not run.future.done():
                return None
            result = run.future.result()
            self._running = None
            if self._queued is not None:
                self._start(self._queued)
                self._queued = None
            return result

    def wait_done(self, timeout_s: float | None = None) -> bool:
        """Block until the running request has finished (its result stays for :meth:`poll`); True if none runs or
        it finished within ``timeout_s``. For tests and shutdown: the control loop never calls it."""
        with self._lock:
            run = self._running
        if run is None or run.future is None:
            return True
        try:
            run.future.exception(timeout=timeout_s)
        except TimeoutError:
            return False
        return True

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Drop the queued request and wait for the running one to end (between episodes, never in the loop).
        Returns False if it is still running after ``timeout_s``."""
        with self._lock:
            if self._queued is not None:
                self.dropped += 1
                self._queued = None
            run = self._running
        if not self.wait_done(timeout_s):
            return False
        with self._lock:
            if self._running is run:
                self._running = None
        return True

    def reset(self, task: TaskSpec, timeout_s: float | None = None) -> None:
        """Forget pending requests (waiting for a running one) and ``planner.reset(task)``.

        Raises:
            ConfigError: the running request did not end within ``timeout_s``.
        """
        if not self.wait_idle(timeout_s):
            raise ConfigError(f"the planner did not return within {timeout_s} s; cannot reset it for a new episode")
        self.planner.reset(task)

    def close(self) -> None:
        """Stop accepting requests; a running one finishes in the background."""
        self._pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["BUFFERED_WRITES", "BufferedMemory", "PlanResult", "PlanningWorker"]
