"""Training data of the trace model: one sample per subgoal attempt of a tandem dataset, read at its first frame.

A sample is what the planner knows when it hands the subgoal over: the objects' keypoints in 3-D
(``labels.keypoints_3d``), the proprio (``observation.state``) and the subgoal (skill and arguments, from the
attempt's signature in the collector's journal ``meta/tandem_collect.json``), with the attempt's trace
(``subgoal.trace_3d`` and its mask) as the target. Low-dimensional datasets (no cameras) are enough: the columns are
read with pyarrow, no image is decoded. The dataset's ``labels.*`` features name the object vocabulary.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from planner_vlm.learned.grasp_prior import GraspPrior, close_rows, fit_grasp_prior
from planner_vlm.learned.state_data import data_files, journal_seeds, read_columns, read_info, seeds_of
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError
from tandem.core.types import Trace3D

JOURNAL = Path("meta") / "tandem_collect.json"


def parse_signature(signature: str) -> tuple[str, tuple[str, ...]]:
    """``"stack(red,green)"`` -> ``("stack", ("red", "green"))``.

    Raises:
        DatasetSchemaError: not of the form ``skill(arg, ...)``.
    """
    skill, paren, rest = str(signature).partition("(")
    if not paren or not rest.endswith(")") or not skill:
        raise DatasetSchemaError(f"subgoal signature {signature!r} is not skill(arg, ...)")
    return skill.strip(), tuple(a.strip() for a in rest[:-1].split(",") if a.strip())


class TraceDataset:
    """Subgoal starts of a tandem dataset (see the module docstring).

    Args:
        root: a ``tandem-collect`` dataset with ``labels.*`` and ``subgoal.trace_3d`` features and its journal.
        episodes: episode indices to use (default all). val_episodes: hold out the last this-many.
        only_successful: keep only attempts that succeeded (the traces the expert completed).

    Attributes:
        objects: the label objects (O). skills, arg_names: the vocabulary seen in the journal (sorted).
        keypoints_3d ``float32 (N, O, 2, 3)`` m; proprio ``float32 (N, 8)``; skill ``int64 (N,)`` and args ``int64 (N,
        2)`` (indices into skills / arg_names, -1 for none); rows ``float32 (N, K3, 5)``; mask ``float32 (N, K3)``;
        episode ``int64 (N,)``; signature ``list[str]``.
        train_index, val_index: sample indices of the two splits.

    Raises:
        DatasetSchemaError: missing labels, traces or journal (named), or no usable attempt.
    """

    def __init__(self, root: str | Path, episodes: list[int] | None = None, val_episodes: int = 0,
                 only_successful: bool = False):
        self.root = Path(root)
        info = read_info(root)
        vocab = schema.label_vocabulary_of(info.get("features", {}))
        if vocab is None or schema.TRACE_3D_KEY not in info.get("features", {}):
            raise DatasetSchemaError(f"{root}: the trace model needs labels.* and {schema.TRACE_3D_KEY} features; "
                                     "collect with tandem-collect (dataset.labels=true, goals.trace_3d=true)")
        if not (self.root / JOURNAL).is_file():
            raise DatasetSchemaError(f"{root}: no collector journal {JOURNAL} (subgoal signatures are read from it)")
        journal = json.loads((self.root / JOURNAL).read_text())
        self.objects = vocab[0]
        col = read_columns(data_files(root), [schema.STATE_KEY, schema.LABEL_KEYPOINTS_3D_KEY, schema.TRACE_3D_KEY,
                                              schema.TRACE_3D_MASK_KEY, "episode_index", "frame_index"])
        ep, fr = col["episode_index"].reshape(-1), col["frame_index"].reshape(-1)
        row_of = {(int(e), int(f)): i for i, (e, f) in enumerate(zip(ep, fr))}
        picks, sigs, eps = [], [], []
        for rec in journal.get("episodes", []):
            e = int(rec.get("episode_index", -1))
            if episodes is not None and e not in episodes:
                continue
            for att in rec.get("attempts", []):
                if not att.get("has_trace_3d", True) or (only_successful and not att.get("success")):
                    continue
                r = row_of.get((e, int(att.get("from_frame", -1))))
                if r is None:
                    continue
                picks.append(r)
                sigs.append(str(att["signature"]))
                eps.append(e)
        if not picks:
            raise DatasetSchemaError(f"{root}: no subgoal attempt with a 3-D trace in episodes {episodes or 'all'}")
        parsed = [parse_signature(s) for s in sigs]
        self.skills = tuple(sorted({p[0] for p in parsed}))
        self.arg_names = tuple(sorted({a for p in parsed for a in p[1]} | set(self.objects)))
        rows = np.asarray(picks)
        o = len(self.objects)
        self.keypoints_3d = col[schema.LABEL_KEYPOINTS_3D_KEY][rows].astype(np.float32).reshape(-1, o, 2, 3)
        self.proprio = col[schema.STATE_KEY][rows].astype(np.float32)
        self.rows = col[schema.TRACE_3D_KEY][rows].astype(np.float32).reshape(len(rows), -1, 5)
        self.mask = col[schema.TRACE_3D_MASK_KEY][rows].astype(np.float32)
        self.episode = np.asarray(eps, np.int64)
        self.signature = sigs
        self.set_vocabulary(self.skills, self.arg_names)
        used = np.unique(self.episode)
        n_val = min(int(val_episodes), max(len(used) - 1, 0))
        is_val = np.isin(self.episode, used[len(used) - n_val:]) if n_val else np.zeros(len(rows), bool)
        self.train_index, self.val_index = np.flatnonzero(~is_val), np.flatnonzero(is_val)
        self.episode_seeds = journal_seeds(self.root)

    def seeds(self, index: np.ndarray) -> list[int] | None:
        """The simulator seeds of the episodes of samples ``index`` (:func:`~planner_vlm.learned.state_data.seeds_of`)."""
        return seeds_of(self.episode_seeds, self.episode[np.asarray(index, np.int64)])

    def set_vocabulary(self, skills: tuple[str, ...], arg_names: tuple[str, ...]) -> None:
        """Index the subgoals by another vocabulary (a checkpoint's, which must contain every name seen here).

        Raises:
            DatasetSchemaError: a skill or argument of the data outside ``skills`` / ``arg_names``.
        """
        skill, args = np.zeros(len(self.signature), np.int64), np.full((len(self.signature), 2), -1, np.int64)
        for i, sig in enumerate(self.signature):
            s, a = parse_signature(sig)
            if s not in skills or any(x not in arg_names for x in a):
                raise DatasetSchemaError(f"{self.root}: subgoal {sig} is outside the vocabulary {list(skills)} / "
                                         f"{list(arg_names)}")
            skill[i] = skills.index(s)
            for j, x in enumerate(a[:2]):
                args[i, j] = arg_names.index(x)
        self.skill, self.args = skill, args
        self.skills, self.arg_names = tuple(skills), tuple(arg_names)

    def __len__(self) -> int:
        return len(self.rows)


def pick_closes(ds: TraceDataset, grasp_skill: str = "pick") -> tuple[list[str], np.ndarray, np.ndarray]:
    """The expert's grasps in ``ds``: for every ``grasp_skill`` attempt whose trace closes an open gripper, the
    picked object, its keypoints at the attempt's first frame ``float64 (N, 2, 3)`` m (world frame) and the close
    ``float64 (N, 4)``: point (m, world frame) and finger yaw (rad), for
    :func:`~planner_vlm.learned.grasp_prior.fit_grasp_prior`. Use a dataset read with ``only_successful=True``.

    Raises:
        DatasetSchemaError: a picked object outside the dataset's label objects.
    """
    names, kps, closes = [], [], []
    for i, sig in enumerate(ds.signature):
        skill, args = parse_signature(sig)
        if skill != grasp_skill or not args:
            continue
        if args[0] not in ds.objects:
            raise DatasetSchemaError(f"{ds.root}: {sig} picks {args[0]!r}, not a label object {list(ds.objects)}")
        n = int(ds.mask[i].sum())
        if n < 2:
            continue
        rows = ds.rows[i, :n].astype(np.float64)
        event = close_rows(Trace3D(points=rows[:, :3], yaw=rows[:, 3], gripper=rows[:, 4]))
        if not len(event):
            continue
        names.append(args[0])
        kps.append(ds.keypoints_3d[i, ds.objects.index(args[0])].astype(np.float64))
        closes.append(rows[int(event[0]), :4])
    return names, np.asarray(kps, np.float64).reshape(-1, 2, 3), np.asarray(closes, np.float64).reshape(-1, 4)


def dataset_grasp_prior(root: str | Path, symmetries: dict[str, int], episodes: list[int] | None = None,
                        grasp_skill: str = "pick") -> GraspPrior:
    """The demonstrated grasps of ``root``'s successful ``grasp_skill`` attempts (of ``episodes``, default all),
    fitted by :func:`~planner_vlm.learned.grasp_prior.fit_grasp_prior` with its default limits; ``symmetries``:
    object -> order.

    Raises:
        DatasetSchemaError: as :class:`TraceDataset`.
    """
    names, keypoints, closes = pick_closes(TraceDataset(root, episodes=episodes, only_successful=True), grasp_skill)
    return fit_grasp_prior(names, keypoints, closes, symmetries)
