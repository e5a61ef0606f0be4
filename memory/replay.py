"""Replay of a recorded episode from its memory store: timeline table (rich) and rerun.io recording.

* :func:`timeline` turns an episode's records into rows (plans, replans, attempts with start and end step,
  verdicts, failures with their cause, and the agent's other events); :func:`timeline_table` renders them as a
  ``rich`` table.
* :func:`write_rerun` writes a recording for the rerun.io viewer (``rerun-sdk``, as LeRobot's dataset viewer
  uses) with everything on one ``step`` timeline: the camera streams (when frames are given: the store keeps no
  camera images, ``tandem.runtime.replay`` re-simulates them), each subgoal's keypoint trace over its camera and its goal
  image and text, the actions and proprio as scalar series, and the memory timeline as a text log with running
  counts of attempts and failures.

Entity paths: ``camera/<name>``, ``camera/<name>/trace``, ``subgoal/text``, ``subgoal/goal_image``,
``action/<component>``, ``proprio/<component>``, ``memory/timeline``, ``memory/attempts``, ``memory/failures``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory.records import (
    AttemptRecord,
    EpisodeStart,
    EventRecord,
    FailureRecord,
    ObjectFactRecord,
    PlanRecord,
    Record,
    ReplanRecord,
    VerdictRecord,
)
from tandem.core.memory_view import clip_text
from tandem.core.types import OSC_ACTION_LAYOUT, PROPRIO_LAYOUT, KeypointTrace

#: Event kinds left out of the timeline unless ``all_events`` (bulky model exchanges and step-level noise).
QUIET_EVENTS: frozenset[str] = frozenset({"vlm_exchange", "subgoal_start"})


@dataclass(frozen=True)
class TimelineRow:
    """One row of an episode's timeline.

    Attributes:
        step: control step the row happened at; ``end_step`` for attempts (None while running / interrupted).
        kind: ``plan``, ``replan``, ``attempt``, ``verdict``, ``failure``, ``fact`` or an event kind.
        subgoal: the signature involved, or ``""``.
        detail: one line of text.
        ok: True / False for verdicts, None otherwise.
    """

    step: int
    end_step: int | None
    kind: str
    subgoal: str
    detail: str
    ok: bool | None = None


def timeline(records: Sequence[Record], all_events: bool = False) -> list[TimelineRow]:
    """Rows of ``records`` in commit order (see :class:`TimelineRow`); facts and :data:`QUIET_EVENTS` only
    with ``all_events``."""
    rows: list[TimelineRow] = []
    for r in records:
        if isinstance(r, EpisodeStart):
            continue
        if isinstance(r, PlanRecord):
            rem = r.remaining
            shown = ", ".join(rem[:4]) + (f" (+{len(rem) - 4})" if len(rem) > 4 else "")
            rows.append(TimelineRow(r.step, None, "plan", "", clip_text(
                f"{r.source}: remaining [{shown}]; {r.plan.get('rationale', '')}", 160)))
        elif isinstance(r, ReplanRecord):
            rows.append(TimelineRow(r.step, None, "replan", r.failed or "", r.reason))
        elif isinstance(r, AttemptRecord):
            speed = r.params.get("speed_scale", 1.0)
            note = f" at {speed:g}x speed ({r.params.get('reason', '')})" if speed != 1.0 else ""
            rows.append(TimelineRow(r.step, r.end_step, "attempt", r.signature, f"attempt {r.attempt}{note}"))
        elif isinstance(r, VerdictRecord):
            rows.append(TimelineRow(r.step, None, "verdict", r.signature, clip_text(
                f"{'success' if r.success else 'FAILURE'} ({r.source}, {r.confidence:.2f}): {r.reason}", 160),
                ok=r.success))
        elif isinstance(r, FailureRecord):
            rows.append(TimelineRow(r.step, None, "failure", r.signature, f"{r.cause.value}: {r.detail}"))
        elif isinstance(r, ObjectFactRecord):
            if all_events:
                rows.append(TimelineRow(r.step, None, "fact", r.object, clip_text(f"[{r.source}] {r.fact}", 160)))
        elif isinstance(r, EventRecord) and (all_events or r.kind not in QUIET_EVENTS):
            data = ", ".join(f"{k}={v}" for k, v in r.data.items() if k not in ("subgoal",))
            rows.append(TimelineRow(r.step, None, r.kind, "", clip_text(data, 160)))
    return rows


def timeline_table(rows: Sequence[TimelineRow], title: str = "") -> Any:
    """A ``rich.table.Table`` of ``rows``: step, end step, kind, subgoal, detail (verdicts coloured)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title or None, show_lines=False, expand=False)
    for name, kw in (("step", {"justify": "right"}), ("end", {"justify": "right"}), ("kind", {}),
                     ("subgoal", {}), ("detail", {"overflow": "fold"})):
        table.add_column(name, **kw)
    styles = {"plan": "cyan", "replan": "magenta", "attempt": "", "failure": "red"}
    for r in rows:
        style = "green" if r.ok else "red" if r.ok is False else styles.get(r.kind, "dim")
        table.add_row(str(r.step), "" if r.end_step is None else str(r.end_step), escape(r.kind), escape(r.subgoal),
                      escape(r.detail), style=style)
    return table


def _names(n: int, layout: Sequence[str], prefix: str) -> list[str]:
    return list(layout) if n == len(layout) else [f"{prefix}{i}" for i in range(n)]


def episode_recording_id(store_id: str, run_name: str, episode_id: int) -> str:
    """The rerun.io recording id of episode ``episode_id`` of the memory store ``store_id``
    (:attr:`memory.store.MemoryStore.store_id`): unique per store and episode, with the run folder's name
    ``run_name`` first for the reader (two run folders may share a name, never a store id)."""
    return f"{run_name}#{episode_id}@{store_id}"


def write_rerun(path: str | Path, records: Sequence[Record], steps: Sequence[Mapping[str, Any]],
                images: Mapping[str, tuple[int, np.ndarray]],
                frames: Iterable[tuple[int, Mapping[str, np.ndarray]]] | None = None,
                recording_id: str = "tandem-episode") -> Path:
    """Write a rerun.io recording (``.rrd``) of one episode (see the module docstring for the entities).

    Args:
        path: the ``.rrd`` file to write (parents created).
        records: the episode's records (``MemoryStore.records``).
        steps: its step rows (``MemoryStore.steps``: ``action`` ``(A,)``, ``proprio`` ``(D,)``).
        images: stored images (``MemoryStore.images``): goal images named ``goal/<signature>#<attempt>``.
        frames: optional ``(step, {camera: uint8 (H, W, 3)})`` in step order (re-simulated camera streams).
        recording_id: the recording's id in the viewer.

    Returns:
        The path written.

    Raises:
        ImportError: ``rerun-sdk`` is not installed (it is a tandem dependency).
    """
    import rerun as rr

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = rr.RecordingStream("tandem_replay", recording_id=recording_id)
    rec.save(path)
    if steps:
        idx = [rr.TimeColumn("step", sequence=[int(s["step"]) for s in steps])]
        for key, layout, prefix in (("action", OSC_ACTION_LAYOUT, "a"), ("proprio", PROPRIO_LAYOUT, "p")):
            arr = np.asarray([s[key] for s in steps], dtype=np.float64)
            for j, name in enumerate(_names(arr.shape[1], layout, prefix)):
                rec.send_columns(f"{key}/{name}", indexes=idx, columns=rr.Scalars.columns(scalars=arr[:, j]))
    n_att = n_fail = 0
    for r, row in zip(records, _rows_for(records), strict=True):
        rec.set_time("step", sequence=int(r.step))
        if row is not None:
            level = "ERROR" if row.ok is False or row.kind == "failure" else "INFO"
            rec.log("memory/timeline", rr.TextLog(f"{row.kind} {row.subgoal} {row.detail}".strip(), level=level))
        if isinstance(r, AttemptRecord):
            n_att += 1
            rec.log("memory/attempts", rr.Scalars(n_att))
            rec.log("subgoal/text", rr.TextDocument(f"{r.subgoal.get('text', r.signature)} (attempt {r.attempt})"))
            goal = images.get(f"goal/{r.signature}#{r.attempt}")
            if goal is not None:
                rec.log("subgoal/goal_image", rr.Image(goal[1]))
            else:
                rec.log("subgoal/goal_image", rr.Clear(recursive=False))
            trace = r.subgoal.get("trace")
            if trace:
                tr = KeypointTrace.from_json(trace)
                rec.log(f"camera/{tr.camera}/trace", rr.LineStrips2D([tr.points], colors=[(255, 220, 0)]))
            if r.end_step is not None and trace:
                rec.set_time("step", sequence=int(r.end_step))
                rec.log(f"camera/{trace['camera']}/trace", rr.Clear(recursive=False))
        elif isinstance(r, FailureRecord):
            n_fail += 1
            rec.log("memory/failures", rr.Scalars(n_fail))
    for step, cams in frames or ():
        rec.set_time("step", sequence=int(step))
        for cam, img in cams.items():
            rec.log(f"camera/{cam}", rr.Image(img))
    rec.flush()
    rec.disconnect()
    return path


def _rows_for(records: Sequence[Record]) -> list[TimelineRow | None]:
    """The timeline row of each record (None where the timeline shows none), aligned with ``records``."""
    return [next(iter(timeline([r])), None) for r in records]


__all__ = ["QUIET_EVENTS", "TimelineRow", "episode_recording_id", "timeline", "timeline_table", "write_rerun"]
