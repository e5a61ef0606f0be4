"""An evaluation worker closes its cached stack before it builds the next one, never after (closing an env breaks
the EGL depth render of envs built before the close: tests/sim/test_render_after_another_env_closed.py)."""

from __future__ import annotations

from types import SimpleNamespace

from tandem.evaluation import episode


class RecordingStack:
    def __init__(self, name: str, log: list[str]):
        self.name, self.log = name, log
        log.append(f"build {name}")

    def close(self) -> None:
        self.log.append(f"close {self.name}")


def test_a_stack_is_closed_before_the_next_is_built(monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(episode, "_STACKS", type(episode._STACKS)())
    monkeypatch.setattr(episode, "_load_builder", lambda spec: lambda build: RecordingStack(build["task"], log))
    jobs = [SimpleNamespace(build={"task": t}, builder="fake:builder") for t in ("nut", "bins", "bins", "stack")]
    built = [episode._stack_for(job)[1] for job in jobs]
    assert built == [True, True, False, True]  # the same stack is reused
    assert log == ["build nut", "close nut", "build bins", "close bins", "build stack"]
