"""Inspect a tandem dataset (LeRobotDataset v3 in the :mod:`tandem.core.dataset_schema`): validate, summarise, draw.

* :func:`validate_dataset` checks everything a loader relies on and raises one
  :class:`~tandem.core.errors.DatasetSchemaError` listing every problem: ``info.json`` (version, fps, the
  tandem features), every data parquet file (readable footer, one column schema across files: a
  *mixed-schema* dataset fails), frame and episode counts, per-episode ``frame_index``/``timestamp``
  continuity, task indices, value ranges of the subgoal labels, the commit journal of
  :mod:`executor_vla.dataset_writer`, and finally that ``lerobot.datasets.LeRobotDataset`` opens it offline.
* :func:`dataset_stats` counts episodes, frames, tasks and subgoal attempts, and gives per-subgoal-text
  lengths and success, plus state/action statistics.
* :func:`contact_sheet` draws one row per subgoal attempt: its first and last agentview frames with the
  keypoint trace drawn (green start, red end), the goal image, and the last wrist frame.

Tables are read straight from the parquet files with pyarrow (fast, and able to report a broken file);
images are PNG bytes inside parquet (dtype ``"image"``).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from executor_vla.dataset_timing import timing_problems
from executor_vla.dataset_writer import (
    DEFAULT_FEATURES,
    JOURNAL_PATH,
    LEROBOT_CODEBASE_VERSION,
    _parquet_files,
    features_diff,
    read_info,
    read_journal,
)
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError

_SCALAR_KEYS = (schema.SUBGOAL_INDEX_KEY, schema.SUBGOAL_TASK_INDEX_KEY, schema.PROGRESS_KEY,
                schema.SUBGOAL_SUCCESS_KEY, schema.TASK_SUCCESS_KEY)


def schema_of(info: dict[str, Any]) -> dict[str, Any]:
    """Recover the keyword arguments of :func:`tandem.core.dataset_schema.dataset_features` (``image_size``, ``trace_len``,
    ``cameras``, ``goal_image``, ``trace_3d_len``, ``labels``, ``label_camera``) of a tandem dataset from its ``info.json`` features.

    Raises:
        DatasetSchemaError: a feature needed to tell them is missing or malformed.
    """
    feats = info.get("features", {})
    cams = tuple(key[len(schema.IMAGE_PREFIX):] for key in feats if key.startswith(schema.IMAGE_PREFIX))
    try:
        image_keys = [schema.GOAL_IMAGE_KEY] if schema.GOAL_IMAGE_KEY in feats else [schema.image_key(c) for c in cams]
        h, w = (int(x) for x in feats[image_keys[0]]["shape"][:2]) if image_keys else schema.IMAGE_SIZE
        k = int(feats[schema.TRACE_KEY]["shape"][0])
        k3 = int(feats[schema.TRACE_3D_KEY]["shape"][0])
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise DatasetSchemaError(f"not a tandem dataset: feature {e} missing or malformed in meta/info.json") from e
    return {"image_size": (h, w), "trace_len": k, "cameras": cams, "goal_image": schema.GOAL_IMAGE_KEY in feats,
            "trace_3d_len": k3, "labels": schema.label_vocabulary_of(feats),
            "label_camera": schema.label_camera_of(feats) or schema.DEFAULT_LABEL_CAMERA}


@dataclass
class DatasetTables:
    """The dataset's non-image columns, concatenated over its data files, plus its metadata.

    Attributes:
        root: dataset directory.
        info: ``meta/info.json``.
        columns: column name -> numpy array over all frames (``(N,)`` or ``(N, ...)``).
        tasks: task index -> text (instructions and subgoal texts).
        journal: the collector's commit journal, or None.
        files: data files read, in order.
    """

    root: Path
    info: dict[str, Any]
    columns: dict[str, np.ndarray]
    tasks: dict[int, str]
    journal: dict[str, Any] | None
    files: list[str] = field(default_factory=list)

    @property
    def num_frames(self) -> int:
        """Number of frames read (rows of the ``index`` column)."""
        return int(len(self.columns.get("index", [])))


def _to_numpy(col: Any) -> np.ndarray:
    """A pyarrow column as a numpy array ``(N, ...)``: nested list columns of uniform length (the fixed-shape
    features of a LeRobot dataset) are flattened in C and reshaped, others go through Python lists."""
    import pyarrow as pa

    arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    if isinstance(arr.type, pa.ExtensionType):  # HF datasets' ArrayXD features: the storage is nested lists
        arr = arr.storage
    shape = [len(arr)]
    values = arr
    while pa.types.is_list(values.type) or pa.types.is_large_list(values.type) or \
            pa.types.is_fixed_size_list(values.type):
        if values.null_count or len(values) == 0:
            return np.asarray(arr.to_pylist())
        lengths = np.unique(values.value_lengths().to_numpy(zero_copy_only=False))
        if len(lengths) != 1:
            return np.asarray(arr.to_pylist())
        shape.append(int(lengths[0]))
        values = values.flatten()
        if isinstance(values.type, pa.ExtensionType):
            values = values.storage
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) or values.null_count:
        return np.asarray(arr.to_pylist())
    return values.to_numpy(zero_copy_only=False).reshape(shape)


#: Feature dtypes :func:`load_tables` leaves out: images, and LeRobot's language columns (row lists, read apart).
_NOT_LOADED = ("image", "video", schema.LANGUAGE_DTYPE)


def load_tables(root: str | Path, problems: list[str] | None = None, committed_only: bool = False) -> DatasetTables:
    """Read metadata and every column of every data file but the image and language columns.

    Args:
        problems: when given, file-level problems (unreadable file, mixed schemas) are appended to it and the
            readable files are still loaded; when None they raise.
        committed_only: read only the data files of the collector's last commit (its journal), so a dataset that
            ``tandem-collect`` is still appending to can be trained on.

    Raises:
        DatasetSchemaError: not a dataset, or (with ``problems=None``) an unreadable or mixed-schema data file.
    """
    import pyarrow.parquet as pq

    root = Path(root)
    own = problems is None
    problems = [] if problems is None else problems
    info = read_info(root)
    files = [f for f in _parquet_files(root) if f.startswith("data/")]
    if committed_only:
        try:
            committed = set((read_journal(root) or {}).get("files", files))
        except DatasetSchemaError:
            committed = set(files)
        files = [f for f in files if f in committed]
    first_schema = None
    first_file = None
    tables = []
    for f in files:
        try:
            pf = pq.ParquetFile(root / f)
        except Exception as e:  # noqa: BLE001 - any unreadable file is a problem to report
            problems.append(f"{f}: unreadable parquet ({type(e).__name__}: {e}); an interrupted write?")
            continue
        s = pf.schema_arrow
        if first_schema is None:
            first_schema, first_file = s, f
        elif not s.equals(first_schema):
            a, b = set(first_schema.names), set(s.names)
            diff = [f"columns only in {first_file}: {sorted(a - b)}"] if a - b else []
            diff += [f"columns only in {f}: {sorted(b - a)}"] if b - a else []
            diff += [f"column {n!r}: {first_schema.field(n).type} vs {s.field(n).type}"
                     for n in sorted(a & b) if not first_schema.field(n).type.equals(s.field(n).type)]
            problems.append(f"mixed schema: {f} differs from {first_file}: " + "; ".join(diff or ["metadata differs"]))
            continue
        keep = [n for n in s.names if info.get("features", {}).get(n, {}).get("dtype") not in _NOT_LOADED]
        tables.append(pf.read(columns=keep))
    columns: dict[str, np.ndarray] = {}
    if tables:
        import pyarrow as pa

        t = pa.concat_tables(tables)
        for name in t.column_names:
            columns[name] = _to_numpy(t.column(name))
    tasks: dict[int, str] = {}
    tp = root / "meta" / "tasks.parquet"
    if tp.exists():
        try:
            df = pq.read_table(tp).to_pandas()
            if "task" in df.columns:
                tasks = {int(i): str(tk) for tk, i in zip(df["task"], df["task_index"])}
            else:
                tasks = {int(i): str(tk) for tk, i in zip(df.index, df["task_index"])}
        except Exception as e:  # noqa: BLE001
            problems.append(f"meta/tasks.parquet unreadable ({type(e).__name__}: {e})")
    journal = None
    try:
        journal = read_journal(root)
    except DatasetSchemaError as e:
        problems.append(str(e))
    if own and problems:
        raise DatasetSchemaError(f"dataset at {root} is malformed:\n  - " + "\n  - ".join(problems))
    return DatasetTables(root=root, info=info, columns=columns, tasks=tasks, journal=journal, files=files)


def _segments(ep: np.ndarray, sg: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` row ranges of constant (episode, subgoal index)."""
    if len(ep) == 0:
        return []
    change = np.flatnonzero((np.diff(ep) != 0) | (np.diff(sg) != 0)) + 1
    bounds = np.concatenate([[0], change, [len(ep)]])
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _check_values(t: DatasetTables, problems: list[str]) -> None:
    c, info = t.columns, t.info
    n = t.num_frames
    if n != int(info.get("total_frames", -1)):
        problems.append(f"{n} frames in data files, meta/info.json says {info.get('total_frames')}")
    if n == 0:
        return
    ep = c["episode_index"].astype(np.int64)
    n_eps = len(np.unique(ep))
    if n_eps != int(info.get("total_episodes", -1)):
        problems.append(f"{n_eps} episodes in data files, meta/info.json says {info.get('total_episodes')}")
    if np.any(np.diff(ep) < 0):
        problems.append("episode_index is not sorted")
    if not np.array_equal(c["index"].astype(np.int64), np.arange(n)):
        problems.append("global 'index' column is not 0..N-1")
    fps = float(info.get("fps", schema.FPS))
    for e in np.unique(ep):
        rows = np.flatnonzero(ep == e)
        fi = c["frame_index"][rows].astype(np.int64)
        if not np.array_equal(fi, np.arange(len(rows))):
            problems.append(f"episode {e}: frame_index is not 0..{len(rows) - 1}")
        sgi = c[schema.SUBGOAL_INDEX_KEY][rows].astype(np.int64) if schema.SUBGOAL_INDEX_KEY in c else None
        if sgi is not None and (sgi[0] != 0 or np.any(np.diff(sgi) < 0) or np.any(np.diff(sgi) > 1)):
            problems.append(f"episode {e}: subgoal.index must start at 0 and grow by 0 or 1 per frame")
    # frame intervals against LeRobot's tolerance (the fps itself is checked against schema.FPS by the caller)
    problems += timing_problems(fps, c["timestamp"], ep, control_hz=fps)
    ntask = len(t.tasks)
    for key in ("task_index", schema.SUBGOAL_TASK_INDEX_KEY):
        if key in c and len(c[key]) and (c[key].min() < 0 or c[key].max() >= ntask):
            problems.append(f"{key} outside the {ntask} tasks of meta/tasks.parquet")
    for key in (schema.SUBGOAL_SUCCESS_KEY, schema.TASK_SUCCESS_KEY):
        if key in c and not np.all(np.isin(c[key], (0.0, 1.0))):
            problems.append(f"{key} has values other than 0 and 1")
    if schema.PROGRESS_KEY in c:
        p = c[schema.PROGRESS_KEY].astype(np.float64)
        if np.any(p <= 0) or np.any(p > 1 + 1e-6):
            problems.append("subgoal.progress outside (0, 1]")
        if schema.SUBGOAL_INDEX_KEY in c:
            for a, b in _segments(ep, c[schema.SUBGOAL_INDEX_KEY].astype(np.int64)):
                if abs(p[b - 1] - 1.0) > 1e-5 or np.any(np.diff(p[a:b]) <= 0):
                    problems.append(f"subgoal attempt at rows {a}..{b - 1}: progress must rise to 1")
                    break
    if schema.TRACE_KEY in c and schema.TRACE_MASK_KEY in c:
        tr = np.asarray(c[schema.TRACE_KEY].tolist(), np.float64)
        m = np.asarray(c[schema.TRACE_MASK_KEY].tolist(), np.float64)
        if not np.all(np.isin(m, (0.0, 1.0))):
            problems.append("subgoal.trace_mask has values other than 0 and 1")
        h, w = schema_of(info)["image_size"]
        valid = m > 0.5
        if valid.any():
            px = tr[valid]
            if np.any(px[:, 0] < 0) or np.any(px[:, 0] > w - 1) or np.any(px[:, 1] < 0) or np.any(px[:, 1] > h - 1):
                problems.append(f"subgoal.trace has valid points outside the {w}x{h} image")
    for key in (schema.STATE_KEY, schema.ACTION_KEY):
        if key in c:
            a = np.asarray(c[key].tolist(), np.float64)
            if not np.all(np.isfinite(a)):
                problems.append(f"{key} has NaN/inf")
    if schema.ACTION_KEY in c:
        a = np.asarray(c[schema.ACTION_KEY].tolist(), np.float64)
        if np.any(np.abs(a) > 1.0 + 1e-5):
            problems.append("action outside the OSC range [-1, 1]")


def _check_journal(t: DatasetTables, problems: list[str]) -> None:
    j = t.journal
    if j is None:
        return
    on_disk = set(_parquet_files(t.root))
    listed = set(j.get("files", []))
    if listed - on_disk:
        problems.append(f"{JOURNAL_PATH} lists files that are missing: {sorted(listed - on_disk)}")
    if on_disk - listed:
        problems.append(f"files written after the last commit (an interrupted write): {sorted(on_disk - listed)}; "
                        f"rerun tandem-collect with the same out= to roll back and resume")
    if int(j.get("total_episodes", -1)) != int(t.info.get("total_episodes", -2)):
        problems.append(f"{JOURNAL_PATH} commits {j.get('total_episodes')} episodes, meta/info.json says "
                        f"{t.info.get('total_episodes')} (an interrupted write?)")


def validate_dataset(root: str | Path, *, open_with_lerobot: bool = True, repo_id: str = "tandem/inspect") -> DatasetTables:
    """Validate a tandem dataset; raise one error listing every problem found.

    Args:
        root: dataset directory.
        open_with_lerobot: also open it with ``LeRobotDataset(repo_id, root=root)`` (offline) and read frame 0.

    Returns:
        the loaded :class:`DatasetTables`.

    Raises:
        DatasetSchemaError: malformed, incomplete or mixed-schema dataset (the message lists each problem).
    """
    root = Path(root)
    info = read_info(root)
    problems: list[str] = []
    if info.get("codebase_version") != LEROBOT_CODEBASE_VERSION:
        problems.append(f"codebase_version {info.get('codebase_version')!r}, expected {LEROBOT_CODEBASE_VERSION!r}")
    if int(info.get("fps", -1)) != schema.FPS:
        problems.append(f"fps {info.get('fps')}, expected {schema.FPS}")
    sch = schema_of(info)
    expected = schema.dataset_features(**sch)
    problems += [f"meta/info.json: {d}" for d in features_diff(info.get("features", {}), expected)]
    t = load_tables(root, problems)
    want_cols = set(info.get("features", {}))
    for name in ("index",):
        if t.columns and name not in t.columns:
            problems.append(f"data files lack the {name!r} column")
    if t.files and t.columns:
        have = set(t.columns) | {k for k, v in info["features"].items() if v.get("dtype") in _NOT_LOADED}
        if have != want_cols:
            problems.append(f"data columns differ from meta/info.json features: missing {sorted(want_cols - have)}, "
                            f"extra {sorted(have - want_cols)}")
    if not problems:
        _check_values(t, problems)
        _check_journal(t, problems)
    if not problems and open_with_lerobot:
        try:
            from lerobot.datasets.lerobot_dataset import LeRobotDataset

            ds = LeRobotDataset(repo_id, root=root, video_backend="pyav")
            if len(ds) != t.num_frames:
                problems.append(f"LeRobotDataset sees {len(ds)} frames, the data files hold {t.num_frames}")
            elif len(ds):
                item = ds[0]
                missing = sorted(k for k in want_cols if k not in item and k not in DEFAULT_FEATURES)
                if missing:
                    problems.append(f"LeRobotDataset items lack {missing}")
        except Exception as e:  # noqa: BLE001 - LeRobot failing to open it is the finding
            problems.append(f"LeRobotDataset cannot open it: {type(e).__name__}: {e}")
    if problems:
        raise DatasetSchemaError(f"dataset at {root} failed validation ({len(problems)} problem(s)):\n  - "
                                 + "\n  - ".join(problems))
    return t


def _describe(x: np.ndarray) -> dict[str, list[float]]:
    return {"mean": x.mean(0).round(4).tolist(), "std": x.std(0).round(4).tolist(),
            "min": x.min(0).round(4).tolist(), "max": x.max(0).round(4).tolist()}


def _journal_verdicts(t: DatasetTables) -> dict[tuple[int, int], bool]:
    """(episode index, attempt index) -> the attempt's verdict, from the collector's journal (if any)."""
    return {(int(r["episode_index"]), int(at["index"])): bool(at["success"])
            for r in ((t.journal or {}).get("episodes") or []) for at in r.get("attempts", [])}


def dataset_stats(t: DatasetTables) -> dict[str, Any]:
    """Counts and statistics of a loaded dataset (JSON-safe).

    Returns:
        ``{"episodes", "frames", "fps", "seconds", "instructions", "subgoal_texts", "attempts",
        "failed_attempts", "episode_success", "per_subgoal": {text: {"attempts", "frames_mean", "frames_min",
        "frames_max", "success_rate"}}, "frames_with_trace", "state", "action"}``. An attempt counts as
        successful when any of its frames has ``subgoal.success == 1``; an episode when its last frame has
        ``task.success == 1``.
    """
    c = t.columns
    n = t.num_frames
    out: dict[str, Any] = {"root": str(t.root), "episodes": int(t.info.get("total_episodes", 0)), "frames": n,
                           "fps": t.info.get("fps"), "seconds": round(n / float(t.info.get("fps", schema.FPS)), 2),
                           "data_files": len(t.files)}
    if n == 0:
        return out
    ep = c["episode_index"].astype(np.int64)
    sgi = c[schema.SUBGOAL_INDEX_KEY].astype(np.int64)
    sti = c[schema.SUBGOAL_TASK_INDEX_KEY].astype(np.int64)
    succ = c[schema.SUBGOAL_SUCCESS_KEY]
    verdicts = _journal_verdicts(t)
    per: dict[str, dict[str, Any]] = {}
    failed = 0
    for a, b in _segments(ep, sgi):
        text = t.tasks.get(int(sti[a]), f"<task {int(sti[a])}>")
        d = per.setdefault(text, {"lengths": [], "ok": 0})
        d["lengths"].append(b - a)
        ok = verdicts.get((int(ep[a]), int(sgi[a])), bool(np.any(succ[a:b] > 0.5)))
        d["ok"] += int(ok)
        failed += int(not ok)
    out["instructions"] = len(np.unique(c["task_index"]))
    out["subgoal_texts"] = len(per)
    out["attempts"] = sum(len(d["lengths"]) for d in per.values())
    out["failed_attempts"] = failed
    last = np.concatenate([np.flatnonzero(np.diff(ep) != 0), [n - 1]])
    out["episode_success"] = round(float(np.mean(c[schema.TASK_SUCCESS_KEY][last] > 0.5)), 4)
    out["episode_frames"] = _describe(np.diff(np.concatenate([[-1], last])).astype(np.float64)[:, None])
    out["per_subgoal"] = {
        text: {"attempts": len(d["lengths"]), "frames_mean": round(float(np.mean(d["lengths"])), 1),
               "frames_min": int(np.min(d["lengths"])), "frames_max": int(np.max(d["lengths"])),
               "success_rate": round(d["ok"] / len(d["lengths"]), 3)}
        for text, d in sorted(per.items())
    }
    m = np.asarray(c[schema.TRACE_MASK_KEY].tolist(), np.float64)
    out["frames_with_trace"] = round(float(np.mean(m.max(axis=1) > 0.5)), 4)
    if schema.TRACE_3D_MASK_KEY in c:
        m3 = np.asarray(c[schema.TRACE_3D_MASK_KEY].tolist(), np.float64)
        out["frames_with_trace_3d"] = round(float(np.mean(m3.max(axis=1) > 0.5)), 4)
        out["trace_3d_points"] = _describe(m3.sum(axis=1)[:, None])
    feats = t.info.get("features", {})
    out["cameras"] = [k[len(schema.IMAGE_PREFIX):] for k in feats if k.startswith(schema.IMAGE_PREFIX)]
    out["goal_images"] = schema.GOAL_IMAGE_KEY in feats
    vocab = schema.label_vocabulary_of(feats)
    if vocab is not None and schema.LABEL_PREDICATES_KEY in c:
        preds = np.asarray(c[schema.LABEL_PREDICATES_KEY].tolist(), np.float64)
        out["labels"] = {"objects": list(vocab[0]), "camera": schema.label_camera_of(feats),
                         "predicates": {p: round(float(preds[:, i].mean()), 4) for i, p in enumerate(vocab[1])}}
    out["state"] = _describe(np.asarray(c[schema.STATE_KEY].tolist(), np.float64))
    out["action"] = _describe(np.asarray(c[schema.ACTION_KEY].tolist(), np.float64))
    if t.journal and t.journal.get("episodes"):
        recs = t.journal["episodes"]
        out["journal"] = {"episodes": len(recs), "task_success": sum(bool(r.get("success")) for r in recs),
                          "with_perturbation": sum(bool(r.get("perturbations")) for r in recs),
                          "dart_sigma": sorted({float(r.get("dart_sigma", 0.0)) for r in recs})}
    return out


# ---------------------------------------------------------------------- contact sheet
def _decode(cell: Any) -> np.ndarray:
    from PIL import Image

    data = cell["bytes"] if isinstance(cell, dict) else cell
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def draw_trace(img: np.ndarray, trace: np.ndarray, mask: np.ndarray, scale: int = 1) -> np.ndarray:
    """Draw a keypoint trace on a copy of ``img`` (``uint8 (H, W, 3)``, already scaled by ``scale``).

    Args:
        trace: ``(K, 2)`` px ``(x right, y down)`` of the unscaled image; ``mask (K,)`` 1 = valid.

    Returns:
        ``uint8`` image: the valid points joined in yellow, start in green, end in red.
    """
    from PIL import Image, ImageDraw

    im = Image.fromarray(img)
    d = ImageDraw.Draw(im)
    pts = [(float(x) * scale + (scale - 1) / 2, float(y) * scale + (scale - 1) / 2)
           for (x, y), v in zip(trace, mask) if v > 0.5]
    if pts:
        if len(pts) > 1:
            d.line(pts, fill=(255, 230, 0), width=max(1, scale))
        r = 1.5 * scale
        for p in pts[1:-1]:
            d.ellipse([p[0] - r / 2, p[1] - r / 2, p[0] + r / 2, p[1] + r / 2], fill=(255, 230, 0))
        for p, col in ((pts[0], (0, 255, 0)), (pts[-1], (255, 0, 0))):
            d.ellipse([p[0] - r, p[1] - r, p[0] + r, p[1] + r], outline=col, width=max(1, scale))
    return np.asarray(im)


def contact_sheet(t: DatasetTables, out_png: str | Path, *, episodes: list[int] | None = None,
                  max_rows: int = 12, scale: int = 2) -> Path:
    """Write a PNG with one row per subgoal attempt (up to ``max_rows``).

    Each row: the main camera (agentview where the dataset has it, else its first camera) at the attempt's first
    frame and at its last frame, with the attempt's 2-D trace drawn where that camera is the trace's
    (``schema.GOAL_CAMERA``); the attempt's goal image; every other camera (the wrist, a task's fixed camera such
    as pick_place_bins' ``workcell``) at the last frame; then a caption (episode, attempt index, subgoal text,
    frames, whether it succeeded). Cameras of different sizes keep their own sizes.

    Args:
        t: tables of a validated dataset.
        episodes: episode indices to show (default: from the first, in order).
        scale: integer upscaling of every image for legibility.

    Returns:
        the path written.

    Raises:
        DatasetSchemaError: the dataset has no frames, or no requested episode.
    """
    import pyarrow.parquet as pq
    from PIL import Image, ImageDraw

    c = t.columns
    if t.num_frames == 0:
        raise DatasetSchemaError(f"dataset at {t.root} has no frames to draw")
    ep = c["episode_index"].astype(np.int64)
    segs = _segments(ep, c[schema.SUBGOAL_INDEX_KEY].astype(np.int64))
    if episodes is not None:
        segs = [s for s in segs if int(ep[s[0]]) in set(episodes)]
        if not segs:
            raise DatasetSchemaError(f"none of episodes {episodes} is in {t.root}")
    segs = segs[:max_rows]
    need = sorted({r for a, b in segs for r in (a, b - 1)})
    feats = t.info["features"]
    views = [k for k in feats if k.startswith(schema.IMAGE_PREFIX)]
    if not views:
        raise DatasetSchemaError(f"dataset at {t.root} has no camera images to draw")
    main_key = schema.image_key(schema.GOAL_CAMERA) if schema.image_key(schema.GOAL_CAMERA) in views else views[0]
    others = [k for k in views if k != main_key]
    with_trace = main_key == schema.image_key(schema.GOAL_CAMERA)
    img_cols = [main_key, *others] + ([schema.GOAL_IMAGE_KEY] if schema.GOAL_IMAGE_KEY in feats else [])
    images: dict[int, dict[str, np.ndarray]] = {}
    start = 0
    for f in t.files:
        pf = pq.ParquetFile(t.root / f)
        rows = pf.metadata.num_rows
        mine = [r for r in need if start <= r < start + rows]
        if mine:
            tab = pf.read(columns=img_cols)
            for r in mine:
                images[r] = {k: _decode(tab.column(k)[r - start].as_py()) for k in img_cols}
        start += rows
    tr_all, m_all = c[schema.TRACE_KEY], c[schema.TRACE_MASK_KEY]
    verdicts = _journal_verdicts(t)

    def up(x: np.ndarray) -> np.ndarray:
        return np.kron(x, np.ones((scale, scale, 1), np.uint8)) if scale > 1 else x

    def tiles_of(a: int, b: int) -> list[np.ndarray]:
        tr = np.asarray(tr_all[a].tolist(), np.float32)
        m = np.asarray(m_all[a].tolist(), np.float32) if with_trace else np.zeros(len(tr), np.float32)
        out = [draw_trace(up(images[a][main_key]), tr, m, scale), draw_trace(up(images[b - 1][main_key]), tr, m, scale)]
        if schema.GOAL_IMAGE_KEY in images[a]:
            out.append(up(images[a][schema.GOAL_IMAGE_KEY]))
        out += [up(images[b - 1][k]) for k in others]
        return out

    rows_tiles = [tiles_of(a, b) for a, b in segs]
    widths = [max(r[i].shape[1] for r in rows_tiles) for i in range(len(rows_tiles[0]))]
    H = max(tile.shape[0] for r in rows_tiles for tile in r)
    caption_w = 360
    pad = 4
    x0 = [sum(widths[:i]) + i * pad for i in range(len(widths))]
    text_x = x0[-1] + widths[-1] + pad
    sheet = Image.new("RGB", (text_x + caption_w, len(segs) * (H + pad) + 24), (30, 30, 30))
    draw = ImageDraw.Draw(sheet)
    name = main_key[len(schema.IMAGE_PREFIX):]
    title = [f"{name} first frame" + (" + trace" if with_trace else ""), f"{name} last frame"
             + (" + trace" if with_trace else "")]
    title += ["goal image"] * (schema.GOAL_IMAGE_KEY in feats) + [f"{k[len(schema.IMAGE_PREFIX):]} (last)" for k in others]
    draw.text((4, 4), f"{t.root.name}: " + " | ".join(title), fill=(220, 220, 220))

    for row, (a, b) in enumerate(segs):
        y = 24 + row * (H + pad)
        for i, tile in enumerate(rows_tiles[row]):
            sheet.paste(Image.fromarray(tile), (x0[i], y))
        text = t.tasks.get(int(c[schema.SUBGOAL_TASK_INDEX_KEY][a]), "?")
        ok = verdicts.get((int(ep[a]), int(c[schema.SUBGOAL_INDEX_KEY][a])),
                          bool(np.any(c[schema.SUBGOAL_SUCCESS_KEY][a:b] > 0.5)))
        lines = [f"episode {int(ep[a])}  attempt {int(c[schema.SUBGOAL_INDEX_KEY][a])}",
                 text, f"{b - a} frames ({int(c['frame_index'][a])}..{int(c['frame_index'][b - 1])})",
                 f"subgoal success: {'yes' if ok else 'NO'}   task success at end: "
                 f"{'yes' if c[schema.TASK_SUCCESS_KEY][b - 1] > 0.5 else 'no'}"]
        for i, line in enumerate(lines):
            draw.text((text_x + 2, y + 6 + 16 * i), line, fill=(230, 230, 230) if i != 3 or ok else (255, 120, 120))
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out_png)
    return out_png


def inspect_dataset(root: str | Path, sheet: str | Path | None = None, *, episodes: list[int] | None = None,
                    max_rows: int = 12, open_with_lerobot: bool = True) -> dict[str, Any]:
    """Validate, summarise and (optionally) draw the contact sheet. Returns the stats (plus ``"sheet"``).

    Raises:
        DatasetSchemaError: the dataset failed validation (nothing is drawn).
    """
    t = validate_dataset(root, open_with_lerobot=open_with_lerobot)
    stats = dataset_stats(t)
    if sheet is not None and t.num_frames and not any(k.startswith(schema.IMAGE_PREFIX) for k in t.info["features"]):
        stats["sheet"] = "none (a low-dimensional dataset: no camera images to draw)"
    elif sheet is not None and t.num_frames:
        stats["sheet"] = str(contact_sheet(t, sheet, episodes=episodes, max_rows=max_rows))
    return stats


def format_stats(stats: dict[str, Any]) -> str:
    """Human-readable multi-line summary of :func:`dataset_stats`."""
    lines = [f"dataset {stats['root']}: {stats['episodes']} episodes, {stats['frames']} frames "
             f"({stats.get('seconds', 0)} s at {stats.get('fps')} fps) in {stats.get('data_files', 0)} data file(s)"]
    if stats["frames"]:
        lines.append(f"  instructions {stats['instructions']}, subgoal texts {stats['subgoal_texts']}, attempts "
                     f"{stats['attempts']} ({stats['failed_attempts']} failed), episode success "
                     f"{stats['episode_success']:.0%}, frames with a trace {stats['frames_with_trace']:.0%}")
        ef = stats["episode_frames"]
        lines.append(f"  episode length: mean {ef['mean'][0]:.0f}, min {ef['min'][0]:.0f}, max {ef['max'][0]:.0f} frames")
        lines.append("  per subgoal:  attempts  frames mean [min, max]  success")
        for text, d in stats["per_subgoal"].items():
            lines.append(f"    {text[:48]:48s} {d['attempts']:4d}  {d['frames_mean']:7.1f} [{d['frames_min']}, "
                         f"{d['frames_max']}]  {d['success_rate']:.0%}")
        lines.append(f"  cameras {stats.get('cameras', [])}, goal images {'yes' if stats.get('goal_images') else 'no'}, "
                     f"frames with a 3-D trace {stats.get('frames_with_trace_3d', 0):.0%}")
        if "labels" in stats:
            lab = stats["labels"]
            lines.append(f"  labels: keypoints of {lab['objects']} (2 per object, m and {lab.get('camera')} px); "
                         "predicates (fraction of frames true): "
                         + ", ".join(f"{p} {v:.0%}" for p, v in lab["predicates"].items()))
        for key in ("state", "action"):
            lines.append(f"  {key} mean {np.round(stats[key]['mean'], 3).tolist()}")
            lines.append(f"  {key} std  {np.round(stats[key]['std'], 3).tolist()}")
        if "journal" in stats:
            lines.append(f"  journal: {json.dumps(stats['journal'])}")
    if "sheet" in stats:
        lines.append(f"  contact sheet: {stats['sheet']}")
    return "\n".join(lines)
