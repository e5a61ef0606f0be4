"""The fenced code blocks of a Markdown guide, and the example task of ``docs/tasks.md`` made importable from them.

Imported as a plain module (``tests/`` is on ``sys.path`` through pytest's ``pythonpath`` setting).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TASKS_GUIDE = ROOT / "docs" / "tasks.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
#: The first line of a block that is a file of the example task: ``# sim/tasks/lift_cube/scene.py``.
_FILE_HEADER = re.compile(r"^# (sim/tasks/(\w+)/[\w./]+)\n")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, its text, and the line of the guide it starts on."""

    lang: str
    text: str
    line: int

    @property
    def path(self) -> str | None:
        """The file the block is, where its first line names one (``sim/tasks/<task>/<file>``), else None."""
        m = _FILE_HEADER.match(self.text)
        return m.group(1) if m else None


def blocks(path: Path = TASKS_GUIDE) -> list[Block]:
    """Every fenced block of ``path``, in order."""
    text = path.read_text()
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def example_task_files(path: Path = TASKS_GUIDE) -> tuple[str, dict[str, str]]:
    """``(task name, {file name: text})`` of the guide's example task package (its python and yaml file blocks)."""
    files: dict[str, str] = {}
    names = set()
    for b in blocks(path):
        if b.path is not None:
            names.add(b.path.split("/")[2])
            files[b.path.split("/", 3)[3]] = b.text
    assert len(names) == 1, f"the guide's file blocks name several task packages: {sorted(names)}"
    return names.pop(), files


def install_example_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Write the guide's example task into ``tmp_path/<task>/``, make it importable as ``sim.tasks.<task>`` and
    register it as the guide's step 2 says; returns its name. Undone by ``monkeypatch`` and :func:`drop_modules`."""
    import sim.tasks
    from sim.tasks import registry

    name, files = example_task_files()
    pkg = tmp_path / name
    pkg.mkdir()
    for fname, text in files.items():
        (pkg / fname).write_text(text)
    monkeypatch.setattr(sim.tasks, "__path__", [*sim.tasks.__path__, str(tmp_path)])
    guide = TASKS_GUIDE.read_text()
    line = re.search(rf'`"{name}": "(sim\.tasks\.{name}:\w+)"`', guide)
    assert line, f"the guide's step 2 gives no registry line for {name}"
    monkeypatch.setitem(registry._TASKS, name, line.group(1))
    return name


def drop_modules(name: str) -> None:
    """Forget the imported modules of the example task ``name`` (``sim.tasks.<name>`` and below)."""
    for mod in [m for m in sys.modules if m == f"sim.tasks.{name}" or m.startswith(f"sim.tasks.{name}.")]:
        del sys.modules[mod]
