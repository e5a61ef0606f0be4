"""Tell an interrupt (Ctrl-C, or SIGTERM where a CLI turns it into KeyboardInterrupt) from an error.

An interrupt must stop a batch, while an error only fails its episode. Some foreign-call layers hide the interrupt
inside an ordinary exception. ctypes is one: when the signal's KeyboardInterrupt is raised while ctypes converts a
foreign call's arguments (inside EGL rendering through PyOpenGL, where a MuJoCo episode spends most of its time),
it raises ``ctypes.ArgumentError("argument 1: KeyboardInterrupt: SIGTERM")``, an ``Exception`` with no chained
cause. A rollout's guard against crashed episodes then recorded it as a crash and went on.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
from collections.abc import Iterator

#: how far along ``__cause__`` / ``__context__`` to look
_MAX_CHAIN = 16


def raised_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, was raised from or while handling one, or is a ``ctypes.ArgumentError``
    that carries one in its message (ctypes keeps no chained cause).

    Args:
        exc: the exception a guard caught.

    Returns:
        True where the batch should stop as on Ctrl-C rather than record a failed episode.
    """
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return True
        if isinstance(e, ctypes.ArgumentError) and "KeyboardInterrupt" in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


def reraise_interrupt(exc: BaseException) -> None:
    """Raise ``KeyboardInterrupt`` (chained from ``exc``) where :func:`raised_by_interrupt`; else return.

    Raises:
        KeyboardInterrupt: ``exc`` came from an interrupt.
    """
    if raised_by_interrupt(exc):
        raise KeyboardInterrupt(f"interrupted ({type(exc).__name__}: {exc})") from exc


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (blocked in this thread) for the ``with`` block; one that arrives meanwhile is
    delivered as the block ends, so its KeyboardInterrupt is raised in the caller's code, never inside the block.

    For writes that an exception would leave broken: imageio's ffmpeg writer kills ffmpeg when a KeyboardInterrupt
    is raised while it feeds it a frame, and the MP4 then has no index ("moov atom not found") and does not play.
    """
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


__all__ = ["interrupts_held", "raised_by_interrupt", "reraise_interrupt"]
