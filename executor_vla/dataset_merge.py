"""Merge tandem datasets collected in shards (e.g. one ``tandem-collect`` per core) into one LeRobotDataset v3.

The merge is LeRobot's own :func:`lerobot.datasets.aggregate.aggregate_datasets` (it renumbers episodes, frames and
``task_index``, merges the tasks table, the episode metadata and the statistics), plus what it does not know about a
tandem dataset:

* **Subgoal texts.** A frame's subgoal text is a LeRobot task too, referenced by ``subgoal.task_index``
  (:mod:`tandem.core.dataset_schema`). LeRobot remaps only ``task_index``, so after its merge a later shard's
  ``subgoal.task_index`` would point at another text. It is remapped here through the texts (shard's index -> text ->
  merged index).
* **The collector's journal** (:data:`executor_vla.dataset_writer.JOURNAL_PATH`): per-episode records (seed,
  outcome, perturbation) renumbered and tagged with their shard, the collector state (``next_seed``: the largest of
  the shards'), and a commit of the merged files, so that ``tandem-collect`` can resume into the merged dataset and a
  checkpoint trained on it records its seeds.
* **Checks before anything is written.** Every shard is a complete tandem dataset (no collection running in it), the
  shards share one schema (features, ``info.camera`` of the labels, fps) and no seed of a task is in two shards
  (the same demonstration twice).

``concatenate_data=False``: LeRobot 0.6.1's concatenation of data files fails on the tandem array features
(pandas' ``PandasArrayExtensionDtype``), so each shard's data file stays one file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from executor_vla.dataset_writer import (
    JOURNAL_FORMAT,
    features_diff,
    read_info,
    read_journal,
    uncommitted_changes,
    write_commit,
)
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError


@dataclass
class MergeReport:
    """What :func:`merge_datasets` wrote.

    Attributes:
        out: the merged dataset's root.
        episodes: episodes in it (the shards' in order).
        frames: frames in it.
        shard_episodes: ``[(shard root, episodes, first merged episode index)]``.
        seeds: ``{task: number of distinct seeds}`` from the journals.
    """

    out: Path
    episodes: int
    frames: int
    shard_episodes: list[tuple[str, int, int]] = field(default_factory=list)
    seeds: dict[str, int] = field(default_factory=dict)


def check_shards(shards: Sequence[Path]) -> list[dict[str, Any]]:
    """Check that ``shards`` can be merged; return their journals.

    Raises:
        DatasetSchemaError: a shard is not a tandem dataset (no ``meta/info.json`` or no ``tandem-collect`` journal),
            has uncommitted files (a collection is running in it, or was killed: rerun ``tandem-collect`` on it to
            resume or roll back), differs from the first shard's features or fps (every difference named), or shares a
            task's seed with another shard.
        ConfigError: fewer than two shards, or one named twice.
    """
    if len(shards) < 2:
        raise ConfigError(f"merge needs two or more shards, got {len(shards)}")
    resolved = [p.resolve() for p in shards]
    if len(set(resolved)) != len(resolved):
        raise ConfigError(f"a shard is named twice: {[str(p) for p in shards]}")
    infos, journals = [], []
    for p in shards:
        infos.append(read_info(p))
        j = read_journal(p)
        if j is None:
            raise DatasetSchemaError(f"{p}: no {JOURNAL_FORMAT} journal (meta/tandem_collect.json): not written by "
                                     "tandem-collect, so its seeds are unknown and cannot be checked for repeats")
        problems = uncommitted_changes(p)
        if problems:
            raise DatasetSchemaError(f"{p} is not at its last commit ({'; '.join(problems[:4])}): a collection is "
                                     "running in it or was killed; wait for it, or rerun tandem-collect on it to "
                                     "resume (which rolls it back to the commit)")
        journals.append(j)
    first = infos[0]
    for p, info in zip(shards[1:], infos[1:]):
        diff = features_diff(info.get("features", {}), first.get("features", {}))
        if int(info.get("fps", -1)) != int(first.get("fps", -1)):
            diff.append(f"fps {info.get('fps')} != {first.get('fps')}")
        if diff:
            raise DatasetSchemaError(f"{p} differs from {shards[0]}: " + "; ".join(diff))
    owner: dict[tuple[str, int], Path] = {}
    repeats: list[str] = []
    for p, j in zip(shards, journals):
        for r in j.get("episodes", []):
            if r.get("seed") is None:
                continue
            key = (str(r.get("task")), int(r["seed"]))
            if key in owner and owner[key] != p:
                repeats.append(f"{key[0]} seed {key[1]} in {owner[key]} and {p}")
            owner.setdefault(key, p)
    if repeats:
        raise DatasetSchemaError(f"{len(repeats)} seed(s) in two shards (the same demonstration twice): "
                                 + "; ".join(repeats[:5]) + (" ..." if len(repeats) > 5 else ""))
    return journals


def merge_datasets(shards: Sequence[str | Path], out: str | Path, repo_id: str = "tandem/dataset") -> MergeReport:
    """Merge tandem dataset shards into a new dataset at ``out`` (the shards are not modified).

    The merged episodes are the shards' in the given order (shard k's episode e becomes e plus the episodes of the
    shards before it). It is written under ``<out>.merging`` and renamed to ``out`` when complete, so a failed merge
    leaves no half dataset at ``out``.

    Args:
        shards: two or more ``tandem-collect`` datasets of one schema.
        out: the new dataset's root; must not exist.
        repo_id: LeRobot repo id recorded in the merged dataset (offline; any string).

    Returns:
        :class:`MergeReport`.

    Raises:
        ConfigError: ``out`` exists, or a shard is named twice or fewer than two are given.
        DatasetSchemaError: see :func:`check_shards`.
    """
    from lerobot.datasets.aggregate import aggregate_datasets
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata

    shards = [Path(s) for s in shards]
    out = Path(out)
    if out.exists():
        raise ConfigError(f"merge output {out} already exists: name a new directory")
    journals = check_shards(shards)
    tmp = out.with_name(out.name + ".merging")
    if tmp.exists():
        shutil.rmtree(tmp)  # a previous merge's leftover (never a dataset: out is only made by the rename below)
    try:
        aggregate_datasets([repo_id] * len(shards), repo_id, roots=shards, aggr_root=tmp,
                           concatenate_data=False, concatenate_videos=False)
        merged_tasks = LeRobotDatasetMetadata(repo_id, root=tmp).tasks
        offsets, maps, report = [], [], MergeReport(out=out, episodes=0, frames=0)
        first_episode = 0
        for p in shards:
            meta = LeRobotDatasetMetadata(repo_id, root=p)
            n = int(meta.total_episodes)
            offsets.append((first_episode, first_episode + n))
            maps.append({int(i): int(merged_tasks.loc[t, "task_index"]) for t, i in zip(meta.tasks.index,
                                                                                     meta.tasks["task_index"])})
            report.shard_episodes.append((str(p), n, first_episode))
            first_episode += n
        _remap_subgoal_task_index(tmp, offsets, maps)
        records = []
        for p, (start, _), j in zip(shards, offsets, journals):
            for r in j.get("episodes", []):
                rec = dict(r, shard=str(p))
                if isinstance(r.get("episode_index"), int):
                    rec["episode_index"] = int(r["episode_index"]) + start
                records.append(rec)
        next_seeds = [int(j["state"]["next_seed"]) for j in journals
                      if isinstance(j.get("state"), dict) and isinstance(j["state"].get("next_seed"), int)]
        journal = {"format": JOURNAL_FORMAT, "repo_id": repo_id, "commit": -1, "total_episodes": 0,
                   "total_frames": 0, "files": [], "snapshot": None, "episodes": [],
                   "state": {"next_seed": max(next_seeds)} if next_seeds else {},
                   "merged_from": [str(p) for p in shards]}
        journal = write_commit(tmp, journal, records)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report.episodes, report.frames = int(journal["total_episodes"]), int(journal["total_frames"])
    seeds: dict[str, set[int]] = {}
    for r in records:
        if r.get("seed") is not None:
            seeds.setdefault(str(r.get("task")), set()).add(int(r["seed"]))
    report.seeds = {t: len(s) for t, s in sorted(seeds.items())}
    return report


def _remap_subgoal_task_index(root: Path, episode_ranges: list[tuple[int, int]], maps: list[dict[int, int]]) -> None:
    """Rewrite ``subgoal.task_index`` of every data file under ``root``: rows of merged episodes in
    ``episode_ranges[k]`` (``[start, stop)``) map their index through ``maps[k]`` (shard index -> merged index).

    Raises:
        DatasetSchemaError: a row's index is not in its shard's tasks table.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    key = schema.SUBGOAL_TASK_INDEX_KEY
    for f in sorted((root / "data").rglob("*.parquet")):
        table = pq.read_table(f)
        if key not in table.column_names:
            continue
        episodes = table.column("episode_index").to_numpy()
        old = np.asarray(table.column(key).to_pylist(), dtype=np.int64)
        new = old.copy()
        for (start, stop), m in zip(episode_ranges, maps):
            rows = (episodes >= start) & (episodes < stop)
            if not rows.any():
                continue
            missing = sorted(set(old[rows].ravel().tolist()) - set(m))
            if missing:
                raise DatasetSchemaError(f"{f}: {key} values {missing[:5]} are not in their shard's tasks table")
            new[rows] = np.vectorize(m.__getitem__, otypes=[np.int64])(old[rows])
        i = table.column_names.index(key)
        arr = pa.array(new.tolist(), type=table.schema.field(key).type)
        table = table.set_column(i, table.schema.field(key), arr)
        part = f.with_name(f.name + ".tmp")
        pq.write_table(table, part)
        os.replace(part, f)
