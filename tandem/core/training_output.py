"""What a trainer leaves on disk and on screen: a bounded set of periodic checkpoints, and a progress bar that follows
the limit that will actually stop the run.

:class:`CheckpointKeeper` decides when a periodic checkpoint is due (every ``every_minutes`` of training time, and/or
every ``every_steps`` steps when asked for) and, after each save, deletes the checkpoints it wrote that are neither
among the last ``keep_last`` nor the best one (lowest score, e.g. the validation loss). The newest checkpoint, so the
final one, is always among the last ``keep_last``; the best is never deleted while it is the best. It deletes only
checkpoint directories it wrote itself (never a resume source or a snapshot saved beside them), and records what it
kept in ``<root>/kept.json``. It writes nothing itself: the trainer passes a function that writes one checkpoint
directory, so the checkpoint layout stays the trainer's.

:func:`progress_total` is the total of a training progress bar: the time budget in seconds when the run has one (the
bar advances with elapsed training time and shows the steps beside it), else the number of steps.

Numpy-free and torch-free: any trainer may use it.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tandem.core.errors import ConfigError

#: The file, under the keeper's root, naming the checkpoints kept (``last``, ``best``, ``final``) and the best score.
KEPT_INDEX = "kept.json"


@dataclass(frozen=True)
class SavedCheckpoint:
    """One checkpoint a :class:`CheckpointKeeper` wrote: its directory, step, training time (s) and score (lower is
    better; None: not scored, never the best)."""

    path: Path
    step: int
    seconds: float
    score: float | None


class CheckpointKeeper:
    """Periodic checkpoints, at most ``keep_last`` of them plus the best one.

    Args:
        root: the folder the checkpoints go in (``kept.json`` is written there).
        keep_last: how many of the most recent checkpoints to keep, >= 1.
        every_minutes: a checkpoint is due once this much training time (min) has passed since the last save (or
            the start); None: no time schedule.
        every_steps: a checkpoint is due at every multiple of this many steps; None: no step schedule.
        start_seconds: the training time (s) at the start (a resumed run's time so far).
        score_name: what the score is (e.g. ``"val/loss"``), recorded in ``kept.json``.

    Raises:
        ConfigError: ``keep_last`` < 1, or a schedule that is not positive.
    """

    def __init__(self, root: str | Path, keep_last: int = 2, every_minutes: float | None = None,
                 every_steps: int | None = None, start_seconds: float = 0.0, score_name: str = "loss"):
        if keep_last < 1:
            raise ConfigError(f"keep_last must be >= 1, got {keep_last}")
        if every_minutes is not None and not (every_minutes > 0 and math.isfinite(every_minutes)):
            raise ConfigError(f"every_minutes must be > 0 or None, got {every_minutes}")
        if every_steps is not None and every_steps < 1:
            raise ConfigError(f"every_steps must be >= 1 or None, got {every_steps}")
        self.root = Path(root)
        self.keep_last = int(keep_last)
        self.every_s = 60.0 * every_minutes if every_minutes is not None else None
        self.every_steps = every_steps
        self.score_name = score_name
        self.saved: list[SavedCheckpoint] = []  # those still on disk, oldest first
        self.best: SavedCheckpoint | None = None
        self.final: SavedCheckpoint | None = None
        self._last_save_s = float(start_seconds)

    def due(self, now_s: float, step: int) -> bool:
        """Whether a periodic checkpoint is due at training time ``now_s`` (s, the trainer's clock) and ``step``."""
        if self.saved and self.saved[-1].step == step:
            return False
        by_time = self.every_s is not None and now_s - self._last_save_s >= self.every_s
        by_steps = self.every_steps is not None and step > 0 and step % self.every_steps == 0
        return by_time or by_steps

    def save(self, path: str | Path, write: Callable[[Path], object], *, step: int, now_s: float,
             score: float | None = None, final: bool = False) -> Path:
        """Write a checkpoint with ``write(path)``, record it, and delete the ones no longer kept.

        Args:
            path: the checkpoint directory. A directory saved before under the same path is replaced in the record.
            write: writes the checkpoint directory at its argument.
            step, now_s: the step and training time (s) it was written at.
            score: lower is better (a NaN or None is never the best).
            final: the run's last checkpoint (named ``final`` in ``kept.json``).

        Returns:
            ``path``.
        """
        path = Path(path)
        write(path)
        score = float(score) if score is not None and math.isfinite(score) else None
        entry = SavedCheckpoint(path, int(step), float(now_s), score)
        self.saved = [s for s in self.saved if s.path != path] + [entry]
        if self.best is not None and self.best.path == path:
            self.best = None  # overwritten: its old score no longer describes it
        if score is not None and (self.best is None or self.best.score is None or score <= self.best.score):
            self.best = entry
        if final:
            self.final = entry
        self._last_save_s = float(now_s)
        self.prune()
        self._write_index()
        return path

    def mark_final(self) -> SavedCheckpoint | None:
        """Name the most recent checkpoint the final one (the run ended where it was last saved); returns it."""
        if self.saved:
            self.final = self.saved[-1]
            self._write_index()
        return self.final

    def kept(self) -> list[SavedCheckpoint]:
        """The checkpoints to keep, oldest first: the last ``keep_last``, the best and the final one."""
        keep = {s.path for s in self.saved[-self.keep_last:]}
        keep |= {s.path for s in (self.best, self.final) if s is not None}
        return [s for s in self.saved if s.path in keep]

    def prune(self) -> list[Path]:
        """Delete the checkpoints this keeper wrote that are no longer kept; returns their paths."""
        kept = self.kept()
        gone = [s.path for s in self.saved if s not in kept]
        for p in gone:
            shutil.rmtree(p, ignore_errors=True)
        self.saved = kept
        return gone

    def _write_index(self) -> None:
        def name(s: SavedCheckpoint | None) -> str | None:
            return None if s is None else (s.path.name if s.path.parent == self.root else str(s.path))

        self.root.mkdir(parents=True, exist_ok=True)
        index = {"best": name(self.best), "best_step": self.best.step if self.best else None,
                 "best_score": self.best.score if self.best else None, "score": self.score_name,
                 "final": name(self.final), "last": [name(s) for s in self.saved[-self.keep_last:]],
                 "kept": [{"path": name(s), "step": s.step, "minutes": round(s.seconds / 60.0, 3), "score": s.score}
                          for s in self.saved]}
        (self.root / KEPT_INDEX).write_text(json.dumps(index, indent=1))


@dataclass(frozen=True)
class ProgressTotal:
    """A progress bar's ``total`` and ``unit``, and whether it counts training time (whole seconds) rather than
    steps."""

    total: int
    unit: str
    by_time: bool

    def position(self, step: int, elapsed_s: float) -> int:
        """Where the bar stands at ``step`` and ``elapsed_s`` (s of training time): the whole seconds elapsed (at
        most ``total``) for a time bar, else ``step``."""
        return min(int(elapsed_s), self.total) if self.by_time else int(step)


def progress_total(steps: int, max_minutes: float | None) -> ProgressTotal:
    """The total of a training run's progress bar.

    Args:
        steps: the step limit.
        max_minutes: the time budget (min), or None.

    Returns:
        With a time budget: the budget in whole seconds (at least 1; the bar advances with elapsed training time,
        and the trainer shows the step count in its postfix). Without: ``steps`` (the bar advances one per step).
    """
    if max_minutes:
        return ProgressTotal(total=max(1, round(60.0 * float(max_minutes))), unit="s", by_time=True)
    return ProgressTotal(total=int(steps), unit="step", by_time=False)
