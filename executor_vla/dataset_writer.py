"""Crash-safe writer of tandem datasets: LeRobotDataset v3 (LeRobot 0.6.1) in the :mod:`tandem.core.dataset_schema`.

It drives LeRobot's own recording API (``LeRobotDataset.create`` / ``resume``, ``save_episode``,
``finalize``) and adds four things:

* **Schema check.** Opening an existing dataset compares its ``meta/info.json`` features and fps with the
  tandem schema first, and raises :class:`~tandem.core.errors.DatasetSchemaError` naming every difference
  before anything is written. Every frame is checked too (keys, dtypes, shapes), with the key named.
* **Commits.** LeRobot keeps the data parquet file and the episode-metadata parquet file open across
  episodes and writes their footers only in ``finalize()``; a crash before that leaves files that no reader
  can open. This writer ``finalize()``-s after every ``checkpoint_every`` saved episodes, then records a
  *commit*: the list of complete parquet files and a copy of ``meta/info.json``, ``meta/stats.json`` and
  ``meta/tasks.parquet``, written atomically (temp file + ``os.replace``) to :data:`JOURNAL_PATH`. The next
  episode reopens the dataset with ``LeRobotDataset.resume``, which starts new parquet files, so committed
  files are never written again.
* **Recovery.** Opening a dataset whose files differ from its last commit (a killed process, a full disk)
  rolls it back to that commit: files written after it are deleted and the three metadata files restored.
  Committed episodes are never touched. A write error while collecting does the same roll-back and raises
  :class:`DatasetWriteError`; rerunning the collection resumes from the commit.
* **Cheaper image staging.** Frames are staged as LeRobot's ``add_frame`` would (PNG files under ``images/``,
  then ``LeRobotDataset.save_episode(episode_data=...)`` embeds them), but the PNGs are encoded at zlib level 1
  (optionally by a thread pool), an image identical to the previous frame's (the goal image of a subgoal attempt) is
  written once, and a failed PNG write raises instead of being logged (LeRobot's ``write_image`` logs it).
* **Batched embedding.** LeRobot embeds an episode's image bytes into its table one frame at a time, 87% of a
  low-dimensional episode's save; the writer has it done in batches (:func:`_embed_images_batched`, same bytes).

The journal also holds one JSON record per committed episode (seed, outcome, attempts, perturbations...),
given by the caller of :meth:`TandemDatasetWriter.save_episode`. LeRobot ignores the file.

Subgoal texts are LeRobot tasks (``meta/tasks.parquet``): :meth:`TandemDatasetWriter.subgoal_task_index`
registers a text and returns its index, stored per frame in ``subgoal.task_index``; the frame's ``"task"``
is the episode's full instruction (see :mod:`tandem.core.dataset_schema`). From those, ``save_episode`` fills
LeRobot 0.6's ``language_persistent`` column (subtask and plan rows,
:func:`tandem.core.dataset_schema.language_persistent_rows`) and an empty ``language_events``, so that LeRobot's
own language tools read the subgoals; a dataset created before those columns existed is resumed without them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError, TandemError

#: The commit journal, relative to the dataset root.
JOURNAL_PATH = "meta/tandem_collect.json"
#: Folder of the metadata snapshots of each commit, relative to the dataset root.
SNAPSHOT_DIR = "meta/.tandem_commits"
#: Metadata files LeRobot rewrites on every ``save_episode``; a commit snapshots them.
SNAPSHOT_FILES: tuple[str, ...] = ("meta/info.json", "meta/stats.json", "meta/tasks.parquet")
#: Folders whose parquet files are append-only per LeRobot writer session.
PARQUET_DIRS: tuple[str, ...] = ("data", "meta/episodes")
#: LeRobot's temporary PNG folder of the episode being recorded.
TEMP_IMAGE_DIR = "images"
JOURNAL_FORMAT = "tandem-collect/1"
LEROBOT_CODEBASE_VERSION = "v3.0"

OpenMode = Literal["auto", "create", "resume"]
#: Columns LeRobot adds to every dataset itself (``lerobot.utils.constants.DEFAULT_FEATURES`` in 0.6.1).
DEFAULT_FEATURES: tuple[str, ...] = ("timestamp", "frame_index", "episode_index", "index", "task_index")


class DatasetWriteError(TandemError, OSError):
    """Writing a dataset failed (disk full, permission, I/O error).

    The dataset was rolled back to its last commit, whose episodes are intact; rerunning the collection
    resumes from there.
    """


def _norm_feature(ft: Mapping[str, Any]) -> dict[str, Any]:
    names = ft.get("names")
    return {"dtype": ft.get("dtype"), "shape": tuple(int(s) for s in ft.get("shape", ())),
            "names": None if names is None else list(names)}


def features_diff(existing: Mapping[str, Mapping[str, Any]], expected: Mapping[str, Mapping[str, Any]],
                  sides: tuple[str, str] = ("on disk", "expected")) -> list[str]:
    """Differences between two LeRobot feature dicts, one readable line each (empty when they match); ``sides``
    names ``existing`` and ``expected`` in those lines (e.g. ``("in this shard", "in the first shard")``).

    LeRobot's own default columns (``timestamp``, ``frame_index``, ``episode_index``, ``index``,
    ``task_index``) are ignored, and so are LeRobot's language columns (``language_persistent``,
    ``language_events``): the writer derives them from ``subgoal.task_index``, and a dataset written before they
    existed lacks them. dtype, shape and names are compared, and the label camera of ``labels.keypoints_px``
    (:func:`tandem.core.dataset_schema.label_camera_of`); LeRobot's other ``info`` entries are not.
    """
    skip = (*DEFAULT_FEATURES, *schema.LANGUAGE_KEYS)
    ex = {k: v for k, v in existing.items() if k not in skip}
    exp = {k: v for k, v in expected.items() if k not in skip}
    out = [f"missing feature {k!r}" for k in sorted(set(exp) - set(ex))]
    out += [f"unexpected feature {k!r}" for k in sorted(set(ex) - set(exp))]
    for k in sorted(set(ex) & set(exp)):
        a, b = _norm_feature(ex[k]), _norm_feature(exp[k])
        for field in ("dtype", "shape", "names"):
            if a[field] != b[field]:
                out.append(f"feature {k!r}: {field} is {a[field]!r} {sides[0]}, {b[field]!r} {sides[1]}")
    cam_on_disk, cam_expected = schema.label_camera_of(dict(ex)), schema.label_camera_of(dict(exp))
    if cam_on_disk is not None and cam_expected is not None and cam_on_disk != cam_expected:
        out.append(f"feature {schema.LABEL_KEYPOINTS_PX_KEY!r}: keypoints in {cam_on_disk!r} pixels {sides[0]}, "
                   f"{cam_expected!r} {sides[1]}")
    return out


def read_info(root: str | Path) -> dict[str, Any]:
    """``meta/info.json`` of a dataset as a dict.

    Raises:
        DatasetSchemaError: the file is missing or is not JSON (message names the path).
    """
    path = Path(root) / "meta" / "info.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as e:
        raise DatasetSchemaError(f"{root} is not a LeRobot dataset: {path} is missing") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DatasetSchemaError(f"{path} is not valid JSON ({e}); the dataset is malformed") from e


def check_schema(info: Mapping[str, Any], expected: Mapping[str, Mapping[str, Any]], fps: int, where: str) -> None:
    """Compare a dataset's ``info.json`` with the expected features and fps.

    Raises:
        DatasetSchemaError: listing every difference (codebase version, fps, features).
    """
    problems = []
    version = info.get("codebase_version")
    if version != LEROBOT_CODEBASE_VERSION:
        problems.append(f"codebase_version is {version!r}, expected {LEROBOT_CODEBASE_VERSION!r}")
    if int(info.get("fps", -1)) != int(fps):
        problems.append(f"fps is {info.get('fps')!r}, expected {fps}")
    problems += features_diff(info.get("features", {}), expected)
    if problems:
        raise DatasetSchemaError(
            f"dataset at {where} has a different schema than the one being written:\n  - "
            + "\n  - ".join(problems)
            + "\nnothing was written; collect into a new directory (out=...) or use matching settings"
        )


def check_frame(frame: Mapping[str, Any], features: Mapping[str, Mapping[str, Any]]) -> None:
    """Check one frame against the features before LeRobot sees it.

    Args:
        frame: feature name -> value, plus ``"task"`` (str). Images ``uint8 (H, W, 3)``; float features
            ``float32`` of the feature's shape; int features ``int64``.
        features: the dataset's features (LeRobot's default columns and the language columns, which the writer
            fills, are not given per frame).

    Raises:
        DatasetSchemaError: a missing/extra key, or a value of the wrong dtype or shape (the key is named).
    """
    expected = {k for k in schema.frame_features(dict(features)) if k not in DEFAULT_FEATURES}
    keys = set(frame) - {"task"}
    problems = []
    if not isinstance(frame.get("task"), str) or not frame.get("task"):
        problems.append("'task' must be a non-empty string (the episode's instruction)")
    problems += [f"missing key {k!r}" for k in sorted(expected - keys)]
    problems += [f"unexpected key {k!r}" for k in sorted(keys - expected)]
    for k in sorted(keys & expected):
        ft, v = features[k], frame[k]
        shape = tuple(int(s) for s in ft["shape"])
        want = np.dtype("uint8") if ft["dtype"] in ("image", "video") else np.dtype(ft["dtype"])
        if not isinstance(v, np.ndarray):
            problems.append(f"{k!r} must be a numpy array {want} {shape}, got {type(v).__name__}")
        elif v.dtype != want or tuple(v.shape) != shape:
            problems.append(f"{k!r} must be {want} {shape}, got {v.dtype} {tuple(v.shape)}")
        elif v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            problems.append(f"{k!r} contains NaN/inf")
    if problems:
        raise DatasetSchemaError("frame does not match the dataset schema: " + "; ".join(problems))


def _parquet_files(root: Path) -> list[str]:
    out = []
    for d in PARQUET_DIRS:
        base = root / d
        if base.is_dir():
            out += [p.relative_to(root).as_posix() for p in sorted(base.rglob("*.parquet"))]
    return out


def read_journal(root: str | Path) -> dict[str, Any] | None:
    """The commit journal of a dataset, or None when it has none.

    Raises:
        DatasetSchemaError: the journal exists but is not valid JSON of the expected format.
    """
    path = Path(root) / JOURNAL_PATH
    if not path.exists():
        return None
    try:
        j = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DatasetSchemaError(f"{path} is not valid JSON ({e})") from e
    if not isinstance(j, dict) or j.get("format") != JOURNAL_FORMAT:
        raise DatasetSchemaError(f"{path} is not a {JOURNAL_FORMAT} journal")
    return j


def episode_seeds(root: str | Path, episodes: list[int] | None = None) -> dict[str, list[int]]:
    """The simulator seeds of a dataset's episodes, per task: ``{task: sorted seeds}`` from its journal (only the
    episodes whose ``episode_index`` is in ``episodes``, when given); ``{}`` for a dataset without a journal.

    A checkpoint records these (``extra.dataset.seeds``) so that an evaluation on the seeds it was trained on is
    refused (``tandem.evaluation.held_out``).

    Raises:
        DatasetSchemaError: the journal exists but is not valid (see :func:`read_journal`).
    """
    j = read_journal(root) or {}
    keep = None if episodes is None else {int(e) for e in episodes}
    out: dict[str, set[int]] = {}
    for r in j.get("episodes", []):
        if r.get("seed") is None or (keep is not None and int(r.get("episode_index", -1)) not in keep):
            continue
        out.setdefault(str(r.get("task")), set()).add(int(r["seed"]))
    return {t: sorted(s) for t, s in sorted(out.items())}


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def uncommitted_changes(root: str | Path) -> list[str]:
    """How a dataset's files differ from its journal's last commit: parquet files added or missing, and a
    ``meta/info.json`` that is not the committed one (what a running or killed collection leaves). Empty when the
    dataset is exactly its last commit, or has no journal.

    Raises:
        DatasetSchemaError: the journal exists but is not valid (:func:`read_journal`).
    """
    root = Path(root)
    j = read_journal(root)
    if j is None:
        return []
    committed, on_disk = set(j["files"]), set(_parquet_files(root))
    out = [f"uncommitted {f}" for f in sorted(on_disk - committed)] + [f"missing {f}" for f in sorted(committed - on_disk)]
    snap = root / SNAPSHOT_DIR / str(j.get("snapshot")) / "info.json"
    info = root / "meta" / "info.json"
    if snap.exists() and info.exists() and snap.read_bytes() != info.read_bytes():
        out.append("meta/info.json differs from the committed one")
    return out


class TandemDatasetWriter:
    """Writes episodes of tandem frames into a LeRobotDataset v3 at ``root``, crash-safely (see module doc).

    Args:
        root: dataset directory.
        repo_id: LeRobot repo id recorded in the dataset (no network use), e.g. ``"tandem/stack_three"``.
        image_size: ``(H, W)`` px of the cameras and the goal image.
        trace_len: K, points per keypoint trace.
        cameras: camera names, each stored as ``observation.images.<camera>`` (may be empty).
        goal_image: store each frame's subgoal goal image (``subgoal.goal_image``).
        labels: ``(objects, predicates)`` of the ``labels.*`` ground-truth features, or None (no labels).
        label_camera: the camera whose pixels ``labels.keypoints_px`` holds (``info.camera`` of that feature).
        robot_type: stored in ``info.json``.
        fps: frames per second (:data:`tandem.core.dataset_schema.FPS` = 20).
        checkpoint_every: commit after this many saved episodes (1 = after every episode: a crash loses
            at most the episode being recorded; more = fewer, larger parquet files).
        mode: ``"create"`` (``root`` must not exist), ``"resume"`` (must be a dataset) or ``"auto"``.
        png_compress_level: zlib level of the PNGs embedded in parquet (0-9). 1 is LeRobot's own default for
            ``write_image`` and about 4x faster to encode than 6 for ~8 % more bytes on these renders.
        features: the features to write, instead of those the arguments above describe (a merge copies its shards':
            :mod:`executor_vla.dataset_merge`); the arguments' image size, trace length, cameras, goal image and
            labels are then ignored.
        image_threads: threads that encode and write the PNGs while the caller steps the simulator (Pillow
            releases the GIL while encoding, as in LeRobot's ``AsyncImageWriter``); 0 = encode inline, the
            default: on the 2-core machine the threads slowed ``env.step`` more than they saved
            (``benchmarks/collect_throughput.py``: 1.35x vs 1.27x of the bare env).

    Attributes:
        cameras: the camera names stored.
        features: the dataset features (:func:`tandem.core.dataset_schema.dataset_features`).
        recovered: what the opening roll-back removed (empty when the dataset was consistent).

    Raises:
        DatasetSchemaError: ``root`` holds a dataset of another schema, or something that is not a tandem
            dataset, or a dataset that is incomplete and has no commit to recover from.
        ConfigError: bad ``mode``/``checkpoint_every``, or ``mode="create"`` on an existing ``root``.
    """

    def __init__(
        self,
        root: str | Path,
        repo_id: str,
        *,
        image_size: tuple[int, int] = schema.IMAGE_SIZE,
        trace_len: int = schema.TRACE_LEN,
        cameras: tuple[str, ...] = schema.CAMERAS,
        goal_image: bool = True,
        labels: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
        label_camera: str = schema.DEFAULT_LABEL_CAMERA,
        robot_type: str = "panda",
        fps: int = schema.FPS,
        checkpoint_every: int = 1,
        mode: OpenMode = "auto",
        png_compress_level: int = 1,
        image_threads: int = 0,
        features: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if mode not in ("auto", "create", "resume"):
            raise ConfigError(f"mode must be 'auto', 'create' or 'resume', got {mode!r}")
        if checkpoint_every < 1:
            raise ConfigError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
        self.root = Path(root).expanduser().resolve()
        self.repo_id = repo_id
        self.fps = int(fps)
        self.robot_type = robot_type
        self.checkpoint_every = int(checkpoint_every)
        if features is not None:
            self.features = {k: json.loads(json.dumps(dict(v))) for k, v in features.items() if k not in DEFAULT_FEATURES}
            self.cameras = tuple(k[len(schema.IMAGE_PREFIX):] for k in self.features if k.startswith(schema.IMAGE_PREFIX))
        else:
            self.cameras = tuple(cameras)
            self.features = schema.dataset_features(image_size=(int(image_size[0]), int(image_size[1])), trace_len=int(trace_len),
                                                    cameras=self.cameras, goal_image=bool(goal_image), labels=labels,
                                                    label_camera=label_camera)
        self.recovered: list[str] = []
        _quiet_progress_bars()
        if not 0 <= int(png_compress_level) <= 9:
            raise ConfigError(f"png_compress_level must be in 0..9, got {png_compress_level}")
        self.png_compress_level = int(png_compress_level)
        self._ds: Any = None  # the LeRobotDataset in write mode, opened lazily
        self._buffer: dict[str, list[Any]] = {}
        self._last_image: dict[str, tuple[np.ndarray, str]] = {}
        self._pool = ThreadPoolExecutor(max_workers=int(image_threads), thread_name_prefix="tandem-png") \
            if int(image_threads) > 0 else None
        self._png_jobs: list[Future] = []
        self._uncommitted: list[dict[str, Any]] = []
        self._closed = False
        exists = self.root.is_dir() and any(self.root.iterdir())
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"dataset path {self.root} exists and is not a directory")
        if exists and mode == "create":
            raise ConfigError(f"dataset directory {self.root} already exists (mode='create')")
        if not exists and mode == "resume":
            raise DatasetSchemaError(f"cannot resume: {self.root} does not exist or is empty")
        if exists:
            self._open_existing()
        else:
            self._create()

    # ------------------------------------------------------------------ opening
    def _create(self) -> None:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        if self.root.exists():  # an empty directory: LeRobot's create() refuses existing roots
            self.root.rmdir()
        self.root.parent.mkdir(parents=True, exist_ok=True)
        _use_batched_image_embedding()
        try:
            self._ds = LeRobotDataset.create(self.repo_id, fps=self.fps, features=self.features, root=self.root,
                                             robot_type=self.robot_type, use_videos=False, video_backend="pyav")
        except OSError as e:
            raise DatasetWriteError(f"cannot create dataset at {self.root}: {e}") from e
        self._journal = {"format": JOURNAL_FORMAT, "repo_id": self.repo_id, "commit": -1, "total_episodes": 0,
                         "total_frames": 0, "files": [], "snapshot": None, "episodes": [], "state": {}}
        self._commit()

    def _open_existing(self) -> None:
        info = read_info(self.root)  # raises DatasetSchemaError when it is not a dataset
        check_schema(info, self.features, self.fps, str(self.root))
        journal = read_journal(self.root)
        if journal is None:
            self._adopt(info)
        else:
            self._journal = journal
            self.recovered = self._rollback_to_commit()

    def _adopt(self, info: Mapping[str, Any]) -> None:
        """A same-schema dataset written without this writer: adopt it if it is complete."""
        import pyarrow.parquet as pq

        files = _parquet_files(self.root)
        bad = []
        rows = 0
        for f in files:
            try:
                md = pq.ParquetFile(self.root / f).metadata
                if f.startswith("data/"):
                    rows += md.num_rows
            except Exception as e:  # noqa: BLE001 - any unreadable file makes the dataset incomplete
                bad.append(f"{f} ({type(e).__name__})")
        if bad or rows != int(info.get("total_frames", -1)):
            raise DatasetSchemaError(
                f"dataset at {self.root} is incomplete (unreadable files: {bad or 'none'}; {rows} frames in data "
                f"files, info.json says {info.get('total_frames')}) and has no {JOURNAL_PATH} to recover from"
            )
        self._journal = {"format": JOURNAL_FORMAT, "repo_id": self.repo_id, "commit": -1,
                         "total_episodes": int(info.get("total_episodes", 0)),
                         "total_frames": int(info.get("total_frames", 0)), "files": files, "snapshot": None,
                         "episodes": [], "state": {}}
        self._commit()

    def _rollback_to_commit(self) -> list[str]:
        """Make the files on disk equal to the last commit. Returns what was removed or restored."""
        j = self._journal
        committed = set(j["files"])
        missing = [f for f in committed if not (self.root / f).exists()]
        if missing:
            raise DatasetSchemaError(f"dataset at {self.root} lost committed files {missing}; it is malformed")
        changed: list[str] = []
        for f in _parquet_files(self.root):
            if f not in committed:
                (self.root / f).unlink()
                changed.append(f"removed uncommitted {f}")
        tmp_images = self.root / TEMP_IMAGE_DIR
        if tmp_images.exists():
            shutil.rmtree(tmp_images, ignore_errors=True)
            changed.append(f"removed temporary {TEMP_IMAGE_DIR}/")
        snap = self.root / SNAPSHOT_DIR / str(j["snapshot"]) if j.get("snapshot") is not None else None
        if snap is None or not snap.is_dir():
            raise DatasetSchemaError(f"dataset at {self.root}: commit snapshot {snap} is missing; it is malformed")
        for rel in SNAPSHOT_FILES:
            src, dst = snap / Path(rel).name, self.root / rel
            if src.exists():
                if not dst.exists() or src.read_bytes() != dst.read_bytes():
                    shutil.copyfile(src, dst.with_name(dst.name + ".tmp"))
                    os.replace(dst.with_name(dst.name + ".tmp"), dst)
                    changed.append(f"restored {rel}")
            elif dst.exists():
                dst.unlink()
                changed.append(f"removed uncommitted {rel}")
        for p in (self.root / "meta").glob("*.tmp"):
            p.unlink()
        return changed

    # ------------------------------------------------------------------ commits
    def _commit(self) -> None:
        """Snapshot metadata and atomically record the current (finalized) files as a commit."""
        j = self._journal
        n = int(j["commit"]) + 1
        snap = self.root / SNAPSHOT_DIR / str(n)
        if snap.exists():
            shutil.rmtree(snap)
        snap.mkdir(parents=True)
        for rel in SNAPSHOT_FILES:
            src = self.root / rel
            if src.exists():
                shutil.copyfile(src, snap / Path(rel).name)
        info = read_info(self.root)
        new = dict(j, commit=n, snapshot=n, files=_parquet_files(self.root),
                   total_episodes=int(info["total_episodes"]), total_frames=int(info["total_frames"]),
                   episodes=list(j["episodes"]) + self._uncommitted)
        _atomic_write_text(self.root / JOURNAL_PATH, json.dumps(new, indent=1))
        self._journal = new
        self._uncommitted = []
        for old in (self.root / SNAPSHOT_DIR).iterdir():
            if old.name != str(n):
                shutil.rmtree(old, ignore_errors=True)

    def _dataset(self) -> Any:
        """The LeRobotDataset in write mode (reopened with ``LeRobotDataset.resume`` after a commit)."""
        if self._closed:
            raise TandemError(f"dataset writer for {self.root} is closed")
        if self._ds is None:
            from lerobot.datasets.lerobot_dataset import LeRobotDataset

            _use_batched_image_embedding()
            self._ds = LeRobotDataset.resume(self.repo_id, root=self.root, video_backend="pyav")
        return self._ds

    def _abandon_open_dataset(self) -> str:
        """Drop the open LeRobot writer without letting it write anything more. Returns a problem note or ``""``."""
        ds, self._ds = self._ds, None
        if ds is None:
            return ""
        try:
            abandon_lerobot_writer(ds)
        except LeRobotInternalsChanged as e:
            return f" WARNING: {e}"
        return ""

    def _fail(self, what: str, error: BaseException) -> DatasetWriteError:
        self._wait_png_jobs(raise_errors=False)
        note = self._abandon_open_dataset()
        self._buffer, self._last_image = {}, {}
        lost = len(self._uncommitted)
        self._uncommitted = []
        try:
            self._rollback_to_commit()
            state = f"rolled back to its last commit ({self._journal['total_episodes']} episodes, intact)"
        except Exception as e2:  # noqa: BLE001 - report both problems
            state = f"roll-back failed too ({e2}); reopening it will retry the roll-back"
        return DatasetWriteError(
            f"{what} failed at {self.root}: {type(error).__name__}: {error}. The dataset was {state}; "
            f"the episode being recorded and {lost} saved but uncommitted episode(s) were dropped. "
            f"Fix the cause (e.g. free disk space) and rerun to resume.{note}"
        )

    # ------------------------------------------------------------------ public API
    @property
    def num_episodes(self) -> int:
        """Episodes saved so far (committed + saved but not yet committed)."""
        return int(self._journal["total_episodes"]) + len(self._uncommitted)

    @property
    def num_frames(self) -> int:
        """Frames in committed episodes."""
        return int(self._journal["total_frames"])

    @property
    def episode_records(self) -> list[dict[str, Any]]:
        """The per-episode records of committed and saved episodes (see :meth:`save_episode`)."""
        return list(self._journal["episodes"]) + list(self._uncommitted)

    @property
    def state(self) -> dict[str, Any]:
        """Free-form collector state stored in the last commit (e.g. the next seed to use)."""
        return dict(self._journal.get("state") or {})

    def subgoal_task_index(self, text: str) -> int:
        """Register ``text`` as a LeRobot task (``meta/tasks.parquet``) if new; return its task index.

        Raises:
            DatasetSchemaError: empty text. DatasetWriteError: the tasks file could not be written.
        """
        if not isinstance(text, str) or not text.strip():
            raise DatasetSchemaError(f"subgoal text must be a non-empty string, got {text!r}")
        ds = self._dataset()
        idx = ds.meta.get_task_index(text) if ds.meta.tasks is not None else None
        if idx is None:
            try:
                ds.meta.save_episode_tasks([text])
            except OSError as e:
                raise self._fail("registering a subgoal text", e) from e
            idx = ds.meta.get_task_index(text)
        return int(idx)

    def _image_dir(self, key: str) -> Path:
        return self.root / TEMP_IMAGE_DIR / key / f"episode-{self.num_episodes:06d}"

    def add_frame(self, frame: dict[str, Any]) -> None:
        """Append one frame to the current episode (checked with :func:`check_frame` first).

        Images are written as PNG files under ``images/`` (LeRobot's staging layout) and embedded into parquet
        by ``save_episode``. An image whose content equals the same key's image of the previous frame (the goal
        image, constant within a subgoal attempt) is written once and referenced again.

        Args:
            frame: every feature of :attr:`features` (images ``uint8 (H, W, 3)``, ``float32``/``int64`` arrays)
                plus ``"task"``: the episode's instruction.

        Raises:
            DatasetSchemaError: the frame does not match the schema (nothing is added).
            DatasetWriteError: a PNG could not be written (the dataset is rolled back to its last commit).
        """
        check_frame(frame, self.features)
        self._dataset()  # reopen after a commit before anything is staged
        buf = self._buffer
        i = len(buf.get("task", []))
        row: dict[str, Any] = {}
        try:
            for key, ft in schema.frame_features(self.features).items():
                if key in DEFAULT_FEATURES:
                    continue
                v = frame[key]
                if ft["dtype"] in ("image", "video"):
                    last = self._last_image.get(key)
                    if i > 0 and last is not None and np.array_equal(last[0], v):
                        row[key] = last[1]
                        continue
                    d = self._image_dir(key)
                    if i == 0:
                        d.mkdir(parents=True, exist_ok=True)
                    path = d / f"frame-{i:06d}.png"
                    img = np.array(v, copy=True)
                    if self._pool is None:
                        _write_png(img, path, self.png_compress_level)
                    else:
                        self._png_jobs.append(self._pool.submit(_write_png, img, path, self.png_compress_level))
                    self._last_image[key] = (img, str(path))
                    row[key] = str(path)
                else:
                    row[key] = np.array(v, copy=True)
        except OSError as e:
            raise self._fail("writing a frame's images", e) from e
        for key, v in row.items():
            buf.setdefault(key, []).append(v)
        buf.setdefault("task", []).append(frame["task"])

    @property
    def frames_in_episode(self) -> int:
        """Frames added since the last ``save_episode``/``discard_episode``."""
        return len(self._buffer.get("task", []))

    def _wait_png_jobs(self, raise_errors: bool = True) -> None:
        """Wait for the staged PNG writes; re-raise the first job's error unless ``raise_errors`` is False.

        Only the jobs' own errors (``Exception``) are collected. A KeyboardInterrupt raised in this thread while it
        waits (Ctrl-C, or SIGTERM through ``tandem-collect``'s handler) always propagates: swallowed here, on the
        path that discards a failed episode, it would let a collection go on after SIGTERM.
        """
        jobs, self._png_jobs = self._png_jobs, []
        first: Exception | None = None
        for job in jobs:
            try:
                job.result()
            except Exception as e:  # noqa: BLE001 - the first error is re-raised below
                first = first or e
        if first is not None and raise_errors:
            raise first

    def _drop_staged_images(self) -> None:
        try:
            self._wait_png_jobs(raise_errors=False)
        finally:  # only one episode is ever staged, so the whole staging folder goes (a PNG write still running
            # after an interrupt may leave a file in it, which the next open removes)
            shutil.rmtree(self.root / TEMP_IMAGE_DIR, ignore_errors=True)
            self._last_image = {}

    def discard_episode(self) -> None:
        """Drop the frames added since the last ``save_episode`` (and their staged PNGs).

        Raises:
            KeyboardInterrupt: raised while it waits for the staged writes; the frames are dropped first.
        """
        try:
            if self._buffer:
                self._drop_staged_images()
        finally:
            self._buffer = {}

    def save_episode(self, record: Mapping[str, Any] | None = None, state: Mapping[str, Any] | None = None) -> int:
        """Save the current episode through ``LeRobotDataset.save_episode``; commit every ``checkpoint_every``.

        Args:
            record: JSON-safe facts about the episode (seed, success, attempts...), kept in the journal.
            state: collector state to store with the next commit (merged into :attr:`state`).

        Returns:
            the episode index.

        Raises:
            DatasetSchemaError: the episode has no frames.
            DatasetWriteError: the write failed; the dataset was rolled back to its last commit.
        """
        n = self.frames_in_episode
        if n == 0:
            raise DatasetSchemaError("save_episode() called on an episode with no frames")
        ds = self._dataset()
        index = self.num_episodes
        # the episode buffer of LeRobot's DatasetWriter.add_frame, built here (LeRobotDataset.save_episode(episode_data))
        episode = {"size": n, "task": self._buffer["task"]}
        for key in ds.meta.features:
            episode[key] = self._buffer.get(key, [])
        if schema.LANGUAGE_PERSISTENT_KEY in ds.meta.features:  # a dataset created before the columns lacks them
            episode[schema.LANGUAGE_PERSISTENT_KEY] = [_object_scalar(self._language_rows(ds))] * n
        if schema.LANGUAGE_EVENTS_KEY in ds.meta.features:
            episode[schema.LANGUAGE_EVENTS_KEY] = [_object_scalar([])] * n
        episode["episode_index"] = index
        episode["frame_index"] = list(range(n))
        episode["timestamp"] = [i / self.fps for i in range(n)]
        _quiet_progress_bars()  # LeRobot's metadata loading re-enables them
        try:
            self._wait_png_jobs()
            ds.save_episode(episode_data=episode)
        except OSError as e:
            raise self._fail(f"saving episode {index}", e) from e
        self._drop_staged_images()
        self._buffer = {}
        rec = {"episode_index": index, **json.loads(json.dumps(dict(record or {}), default=_json_default))}
        self._uncommitted.append(rec)
        if state:
            self._journal["state"] = {**(self._journal.get("state") or {}), **dict(state)}
        if len(self._uncommitted) >= self.checkpoint_every:
            self.commit()
        return index

    def _language_rows(self, ds: Any) -> list[dict[str, Any]]:
        """The staged episode's ``language_persistent`` rows, from its frames' subgoal indices and texts.

        Raises:
            DatasetSchemaError: a frame's ``subgoal.task_index`` is not in the tasks table (the index is named).
        """
        tasks = ds.meta.tasks
        texts = {int(i): str(t) for t, i in zip(tasks.index, tasks["task_index"])} if tasks is not None else {}
        indices = [int(np.asarray(v).reshape(-1)[0]) for v in self._buffer.get(schema.SUBGOAL_TASK_INDEX_KEY, [])]
        unknown = sorted(set(indices) - set(texts))
        if unknown:
            raise DatasetSchemaError(f"{schema.SUBGOAL_TASK_INDEX_KEY} {unknown} not in the tasks table; register "
                                     "subgoal texts with subgoal_task_index()")
        sub = [int(np.asarray(v).reshape(-1)[0]) for v in self._buffer.get(schema.SUBGOAL_INDEX_KEY, [])]
        return schema.language_persistent_rows([texts[i] for i in indices], sub, self.fps)

    def commit(self) -> None:
        """Finalize the open LeRobot writer and record a commit (no-op when nothing is pending).

        Raises:
            DatasetWriteError: finalizing or writing the journal failed (rolled back to the previous commit).
        """
        if not self._uncommitted:
            return
        try:
            if self._ds is not None:
                self._ds.finalize()
                self._ds = None
            self._commit()
        except OSError as e:
            raise self._fail("committing", e) from e

    def update_state(self, state: Mapping[str, Any]) -> None:
        """Record collector state (e.g. the next seed) in a commit now, without saving an episode."""
        self._journal["state"] = {**(self._journal.get("state") or {}), **dict(state)}
        if self._uncommitted:
            self.commit()
        else:
            try:
                _atomic_write_text(self.root / JOURNAL_PATH, json.dumps(self._journal, indent=1))
            except OSError as e:
                raise self._fail("writing the journal", e) from e

    def close(self) -> None:
        """Drop an unsaved episode, commit saved ones and release LeRobot's writer. Idempotent."""
        if self._closed:
            return
        try:
            try:
                self.discard_episode()
            finally:  # a second Ctrl-C while the unsaved episode's PNGs are dropped must not lose the saved ones
                self.commit()
            if self._ds is not None:
                self._ds.finalize()
                self._ds = None
        finally:
            self._closed = True
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def __enter__(self) -> TandemDatasetWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is not None:
            self.discard_episode()
        self.close()


class LeRobotInternalsChanged(TandemError):
    """The installed LeRobot lacks the private writer state :func:`abandon_lerobot_writer` relies on."""


#: LeRobot 0.6.1's private attributes that :func:`abandon_lerobot_writer` sets, by owner: the dataset, its
#: ``DatasetWriter`` (``ds.writer``) and its ``LeRobotDatasetMetadata`` (``ds.meta``).
LEROBOT_PRIVATE_WRITER_STATE: dict[str, tuple[str, ...]] = {
    "dataset": ("_is_finalized",),
    "writer": ("_finalized",),
    "meta": ("_pq_writer", "_metadata_buffer", "_finalized"),
}


def abandon_lerobot_writer(ds: Any) -> None:
    """Make a LeRobotDataset in write mode forget its unwritten state, so that nothing more is ever written.

    The one place in tandem that touches LeRobot's private state. After a write error the dataset is rolled back
    to its last commit, and LeRobot must not write afterwards; but its only public exits (``finalize()``, and
    ``__del__``, which calls it) flush the buffered episode metadata and write parquet footers. So: the data parquet
    writer is closed and the image writer stopped through LeRobot's public ``DatasetWriter.close_writer()`` /
    ``stop_image_writer()``; the metadata parquet writer is closed and its buffer dropped, and the three
    ``finalized`` flags are set (private: :data:`LEROBOT_PRIVATE_WRITER_STATE`, LeRobot 0.6.1).
    ``tests/unit/test_dataset_writer.py`` checks that the state exists and that nothing is written afterwards.

    Raises:
        LeRobotInternalsChanged: an attribute of :data:`LEROBOT_PRIVATE_WRITER_STATE` is missing (checked before
            anything is changed; the caller rolls back from its journal anyway).
    """
    owners = {"dataset": ds, "writer": getattr(ds, "writer", None), "meta": getattr(ds, "meta", None)}
    missing = [f"{owner}.{attr}" for owner, attrs in LEROBOT_PRIVATE_WRITER_STATE.items()
               if owners[owner] is not None for attr in attrs if not hasattr(owners[owner], attr)]
    if missing:
        import lerobot

        raise LeRobotInternalsChanged(
            f"LeRobot {getattr(lerobot, '__version__', '?')} lacks {missing}, which tandem's dataset writer uses to "
            "abandon a failed write (written for LeRobot 0.6.1): a later finalize() may write files after the "
            "roll-back; reopening the dataset rolls them back again")
    w, meta = owners["writer"], owners["meta"]
    if w is not None:
        with contextlib.suppress(Exception):
            w.close_writer()
        with contextlib.suppress(Exception):
            w.stop_image_writer()
        w._finalized = True
    if meta is not None:
        if meta._pq_writer is not None:
            with contextlib.suppress(Exception):
                meta._pq_writer.close()
            meta._pq_writer = None
        meta._metadata_buffer = []
        meta._finalized = True
    ds._is_finalized = True


def _write_png(img: np.ndarray, path: Path, level: int) -> None:
    """Write ``uint8 (H, W, 3)`` as PNG (raises OSError, unlike LeRobot's ``write_image``, which only logs)."""
    from PIL import Image

    Image.fromarray(img).save(path, format="PNG", compress_level=level)


#: Rows per batch of :func:`_embed_images_batched`.
EMBED_BATCH_ROWS = 1024


def _embed_images_batched(dataset: Any) -> Any:
    """LeRobot 0.6.1's ``io_utils.embed_images`` (embed the image files' bytes into an episode's table before it is
    written to parquet) over batches of :data:`EMBED_BATCH_ROWS` rows instead of one row at a time.

    ``datasets.table.embed_table_storage`` works on whole Arrow tables, row by row independently, so the result is
    the same; LeRobot maps it with ``batched=False``, which rebuilds the table's ``Features`` from its schema for
    every frame, even with no image in the table: 8.5 ms a frame, 87% of a low-dimensional episode's save (profiled
    copying a 37,815-frame nut_assembly dataset beside another job). ``tandem-collect`` of 6 low-dimensional
    nut_assembly episodes (4,029 frames; the two runs side by side on the 2 cores): 74.6 s with it, 85.5 s without.
    """
    from datasets.table import embed_table_storage

    fmt = dataset.format
    out = dataset.with_format("arrow").map(embed_table_storage, batched=True, batch_size=EMBED_BATCH_ROWS)
    return out.with_format(**fmt)


def _use_batched_image_embedding() -> None:
    """Make LeRobot's episode writer embed images with :func:`_embed_images_batched` (idempotent).

    Raises:
        LeRobotInternalsChanged: LeRobot's writer no longer calls ``embed_images`` (a LeRobot upgrade).
    """
    from lerobot.datasets import dataset_writer as lerobot_writer

    if getattr(lerobot_writer, "embed_images", None) is None:
        raise LeRobotInternalsChanged("lerobot.datasets.dataset_writer.embed_images is gone: check "
                                      "executor_vla.dataset_writer._embed_images_batched against this LeRobot")
    lerobot_writer.embed_images = _embed_images_batched


def _quiet_progress_bars() -> None:
    """Turn off the per-episode ``datasets`` "Map" progress bars that LeRobot's ``save_episode`` prints."""
    with contextlib.suppress(Exception):
        import datasets

        datasets.disable_progress_bars()


def _object_scalar(value: Any) -> np.ndarray:
    """``value`` in a 0-d object array: LeRobot's ``save_episode`` ``np.stack``-s each feature's per-frame values,
    which keeps a list of row dicts one per frame only when it is wrapped so."""
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _json_default(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return str(x)
