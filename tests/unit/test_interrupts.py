"""raised_by_interrupt: an interrupt hidden inside another exception is still an interrupt."""

from __future__ import annotations

import ctypes

import pytest

from tandem.core.interrupts import raised_by_interrupt, reraise_interrupt


def _chained(inner: BaseException, outer: type[Exception] = RuntimeError) -> Exception:
    try:
        try:
            raise inner
        except BaseException:
            raise outer("while rendering")  # noqa: B904 - the implicit __context__ is the point
    except Exception as e:
        return e


def test_interrupts_are_found_directly_through_ctypes_and_along_the_chain() -> None:
    assert raised_by_interrupt(KeyboardInterrupt())
    assert raised_by_interrupt(ctypes.ArgumentError("argument 1: KeyboardInterrupt: SIGTERM"))
    assert raised_by_interrupt(_chained(KeyboardInterrupt("SIGTERM")))
    assert raised_by_interrupt(_chained(ctypes.ArgumentError("argument 2: KeyboardInterrupt: ")))


def test_errors_are_not_interrupts() -> None:
    assert not raised_by_interrupt(ValueError("bad frame"))
    assert not raised_by_interrupt(ctypes.ArgumentError("argument 1: TypeError: wrong type"))
    assert not raised_by_interrupt(_chained(OSError("disk full")))
    looped = ValueError("a")
    looped.__context__ = ValueError("b")
    looped.__context__.__context__ = looped  # a cycle ends the walk
    assert not raised_by_interrupt(looped)


def test_reraise_interrupt_raises_only_for_interrupts() -> None:
    reraise_interrupt(ValueError("x"))  # returns
    with pytest.raises(KeyboardInterrupt) as info:
        reraise_interrupt(ctypes.ArgumentError("argument 1: KeyboardInterrupt: SIGTERM"))
    assert isinstance(info.value.__cause__, ctypes.ArgumentError)
