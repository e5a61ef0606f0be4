"""A fit recipe: the stages that take a task from nothing to its learned stack (``configs/fit/<name>.yaml``).

Format (YAML)::

    task: stack_three                 # the task the recipe fits (a run may name another with task=...)
    stages:
      collect_lowdim:                 # a stage: a name, unique
        run: tandem-collect task={task} episodes=200 out={out}/datasets/lowdim ...
        needs: []                     # stages that must finish first
        summary: null                 # a JSON file the stage writes (relative to the run folder) whose figures
        figures: []                   #   (dotted keys) the report shows
        accept_exit: []               # non-zero exit statuses that still count as finished (e.g. [3]: a
                                      #   collection that ran out of tries short of its target feeds the next stage)
      train_executor:
        run: tandem-train executor=track dataset.root={out}/datasets/lowdim output_dir={out}/executor
        needs: [collect_lowdim]
        summary: executor/summary.json
        figures: [best_val_loss]

``run`` is a command line (split like a shell would, no pipes): a tandem console script (``tandem-train``...) or
``python <script or -m module>``, run with this interpreter. ``{task}`` and ``{out}`` (the run folder) are
substituted, and ``{<stage>.<dotted key>}`` by that value of an earlier stage's summary (e.g.
``{train_executor.best_checkpoint}``: the checkpoint a training run chose), read when the stage starts; the stage
must list that stage in ``needs``. A literal brace is doubled (``{{``). Stages run in an order that respects ``needs``.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tandem.core.errors import ConfigError

#: Keys a stage may have.
STAGE_KEYS = ("run", "needs", "summary", "figures", "accept_exit")


@dataclass(frozen=True)
class Stage:
    """One stage of a recipe (see the module doc).

    Attributes:
        name: unique within the recipe. run: the command template. needs: names of earlier stages.
        summary: the JSON file (relative to the run folder) holding the stage's figures, or None.
        figures: dotted keys of ``summary`` shown in the report.
        accept_exit: non-zero exit statuses that count as finished (the report shows the status all the same).
    """

    name: str
    run: str
    needs: tuple[str, ...] = ()
    summary: str | None = None
    figures: tuple[str, ...] = ()
    accept_exit: tuple[int, ...] = ()

    def finished_with(self, rc: int | None) -> bool:
        """Whether exit status ``rc`` counts as finished: 0, or one of :attr:`accept_exit`."""
        return rc == 0 or rc in self.accept_exit

    def references(self) -> tuple[str, ...]:
        """The stages whose summaries ``run`` reads (``{<stage>.<key>}``)."""
        fields = [f for _, f, _, _ in string.Formatter().parse(self.run) if f]
        return tuple(dict.fromkeys(f.split(".")[0] for f in fields if "." in f))

    def argv(self, task: str, out: Path, summaries: Mapping[str, Any] | None = None) -> list[str]:
        """The stage's command line for ``task`` and run folder ``out``, split into words.

        Args:
            summaries: stage name -> its summary (a dict), for ``{<stage>.<key>}``.

        Raises:
            ConfigError: an unknown placeholder, or a summary value that is missing (names it).
        """
        values: dict[str, Any] = {"task": task, "out": str(out)}
        for f in (f for _, f, _, _ in string.Formatter().parse(self.run) if f):
            if f in values:
                continue
            stage, _, key = f.partition(".")
            if not key:
                raise ConfigError(f"fit stage {self.name!r}: unknown placeholder {{{f}}} in run (known: {{task}}, "
                                  "{out}, {<stage>.<key>})")
            value = dotted((summaries if summaries is not None else {}).get(stage), key)
            if value is None:
                raise ConfigError(f"fit stage {self.name!r}: {{{f}}}: stage {stage!r} wrote no {key!r} in its summary")
            values[f] = value
        line = "".join(lit + (str(values[f]) if f else "") for lit, f, _, _ in string.Formatter().parse(self.run))
        return shlex.split(line)


@dataclass(frozen=True)
class Recipe:
    """A validated recipe: its task and stages in an order that respects their needs.

    Raises (from :meth:`from_dict`):
        ConfigError: a missing or unknown key, a stage that needs an unknown stage, or a cycle (names it).
    """

    task: str
    stages: tuple[Stage, ...] = field(default_factory=tuple)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Recipe:
        """The recipe of a parsed YAML mapping ``{task, stages}``; ``where`` names it in errors (see the class)."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a recipe is a mapping with task and stages")
        unknown = sorted(set(data) - {"task", "stages"})
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (keys: task, stages)")
        task, raw = data.get("task"), data.get("stages")
        if not isinstance(task, str) or not task:
            raise ConfigError(f"{where}: task must be a task name, got {task!r}")
        if not isinstance(raw, dict) or not raw:
            raise ConfigError(f"{where}: stages must be a non-empty mapping of stage name -> stage")
        stages: dict[str, Stage] = {}
        for name, s in raw.items():
            if not isinstance(s, dict):
                raise ConfigError(f"{where}: stage {name!r} must be a mapping with run (and needs, summary, figures)")
            bad = sorted(set(s) - set(STAGE_KEYS))
            if bad:
                raise ConfigError(f"{where}: stage {name!r}: unknown key {bad[0]!r} (keys: {', '.join(STAGE_KEYS)})")
            if not isinstance(s.get("run"), str) or not s["run"].strip():
                raise ConfigError(f"{where}: stage {name!r}: run must be a command line")
            needs = s.get("needs") or []
            figures = s.get("figures") or []
            if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
                raise ConfigError(f"{where}: stage {name!r}: needs must be a list of stage names")
            if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures):
                raise ConfigError(f"{where}: stage {name!r}: figures must be a list of dotted keys")
            summary = s.get("summary")
            if summary is not None and not isinstance(summary, str):
                raise ConfigError(f"{where}: stage {name!r}: summary must be a path or null")
            accept = s.get("accept_exit") or []
            if not isinstance(accept, list) or not all(isinstance(c, int) and not isinstance(c, bool) and 0 < c < 256
                                                       for c in accept):
                raise ConfigError(f"{where}: stage {name!r}: accept_exit must be a list of exit statuses 1-255")
            stages[str(name)] = Stage(name=str(name), run=s["run"], needs=tuple(needs), summary=summary,
                                      figures=tuple(figures), accept_exit=tuple(accept))
        for st in stages.values():
            for n in st.references():
                if n not in st.needs:
                    raise ConfigError(f"{where}: stage {st.name!r} reads stage {n!r}'s summary but does not need it")
            for n in st.needs:
                if n not in stages:
                    raise ConfigError(f"{where}: stage {st.name!r} needs unknown stage {n!r} "
                                      f"(stages: {', '.join(stages)})")
        return cls(task=task, stages=tuple(_ordered(stages, where)))

    @classmethod
    def load(cls, path: str | Path) -> Recipe:
        """Read and validate a recipe file.

        Raises:
            ConfigError: the file is missing, not YAML, or not a valid recipe (names the file and the key).
        """
        p = Path(path)
        try:
            data = yaml.safe_load(p.read_text())
        except OSError as e:
            raise ConfigError(f"fit recipe {p}: cannot be read ({e.strerror or e})") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"fit recipe {p}: not YAML ({str(e).splitlines()[0]})") from None
        return cls.from_dict(data, f"fit recipe {p}")

    def stage(self, name: str) -> Stage:
        """The stage named ``name`` (KeyError if none)."""
        return next(s for s in self.stages if s.name == name)


def dotted(data: Any, key: str) -> Any:
    """``data["a"]["b"][0]`` for ``key == "a.b.0"``; None where a part is missing."""
    for part in key.split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.lstrip("-").isdigit() and -len(data) <= int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def _ordered(stages: dict[str, Stage], where: str) -> list[Stage]:
    """The stages in the recipe's order, each after its needs (a depth-first topological order).

    Raises:
        ConfigError: a cycle (names a stage on it).
    """
    out: list[Stage] = []
    state: dict[str, int] = {}  # 1: visiting, 2: done

    def visit(name: str) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ConfigError(f"{where}: stages form a cycle through {name!r}")
        state[name] = 1
        for n in stages[name].needs:
            visit(n)
        state[name] = 2
        out.append(stages[name])

    for name in stages:
        visit(name)
    return out
