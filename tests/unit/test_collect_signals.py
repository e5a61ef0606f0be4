"""``tandem-collect`` stops cleanly on SIGTERM and SIGINT, even when started in the background with SIGINT ignored."""

from __future__ import annotations

import os
import signal

import pytest

from tandem.cli.common import stop_on_signals


@pytest.fixture
def restore_handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_becomes_the_keyboard_interrupt_the_collector_commits_on(signum, restore_handlers):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job inherits it
    stop_on_signals()
    with pytest.raises(KeyboardInterrupt, match=signal.Signals(signum).name):
        os.kill(os.getpid(), signum)
