"""The results folder: rows appended to ``episodes.jsonl`` as episodes finish, ``results.parquet`` at the end.

Rows are appended (flushed and fsync'ed per episode); a rerun into the same folder skips the keys already there
(resume). ``results.parquet`` (sorted by key) and ``metrics.json`` are rewritten from the part file at the end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tandem.core.errors import ConfigError
from tandem.evaluation.rows import NOT_RESULT_KINDS, RETRYABLE_KINDS
from tandem.evaluation.suite import EpisodeJob

PART_FILE = "episodes.jsonl"
VIDEO_FILE = "videos.jsonl"


class ResultStore:
    """The results folder: ``episodes.jsonl`` (append-only part file), ``results.parquet``, ``metrics.json``.

    Args:
        root: the results folder (created).
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.part = self.root / PART_FILE

    def load_rows(self, file: str = PART_FILE) -> dict[str, dict[str, Any]]:
        """Rows by key from the part file; a torn last line (a run killed mid-write) is skipped, the last row of
        a key wins."""
        path = self.root / file
        rows: dict[str, dict[str, Any]] = {}
        if not path.exists():
            return rows
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "key" in row:
                rows[row["key"]] = row
        return rows

    def append(self, row: Mapping[str, Any], file: str = PART_FILE) -> None:
        """Append one row and fsync it, so a killed run loses at most the episode in progress."""
        path = self.root / file
        with path.open("a") as f:
            if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
                f.write("\n")  # a torn line from a killed run stays on its own line
            f.write(json.dumps(row, default=_json_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def plan_resume(self, jobs: Sequence[EpisodeJob], retry_errors: bool = False) -> tuple[list[EpisodeJob], int]:
        """Which jobs still need running: ``(todo, n_already_done)``. A row of a kind in
        :data:`~tandem.evaluation.rows.NOT_RESULT_KINDS` (a build error an older tandem recorded) is run again.

        Raises:
            ConfigError: a key present with a different ``config_hash`` (the folder holds another configuration:
                choose a new ``out_dir`` or delete the folder).
        """
        done = self.load_rows()
        todo, n_done, clash = [], 0, []
        for j in jobs:
            r = done.get(j.key)
            if r is None:
                todo.append(j)
            elif r.get("config_hash") != j.config_hash:
                clash.append(j.key)
            elif r.get("failure_kind") in NOT_RESULT_KINDS or (retry_errors and r.get("failure_kind") in RETRYABLE_KINDS):
                todo.append(j)
            else:
                n_done += 1
        if clash:
            raise ConfigError(f"{self.root} holds {len(clash)} episode(s) run with a different configuration "
                              f"(e.g. {clash[0]}); use another out_dir or delete {self.part}")
        return todo, n_done

    def finalize(self, keys: Iterable[str] | None = None) -> Any:
        """Write ``results.parquet`` (rows of ``keys``, or all, sorted by key) and return the DataFrame."""
        import pandas as pd

        rows = self.load_rows()
        if keys is not None:
            wanted = set(keys)
            rows = {k: v for k, v in rows.items() if k in wanted}
        df = rows_to_frame(list(rows.values()))
        df.to_parquet(self.root / "results.parquet", index=False)
        assert isinstance(df, pd.DataFrame)
        return df


def _json_default(x: Any) -> Any:
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return str(x)


def rows_to_frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Rows -> pandas DataFrame sorted by key, with stable dtypes for parquet."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    if df.empty:
        return df
    df = df.sort_values("key").reset_index(drop=True)
    for c in ("perturb_after_success", "perturb_at_step", "perturb_step", "n_subgoals_ref", "worker"):
        if c in df:
            df[c] = df[c].astype("Int64")
    for c in ("success", "perturbed", "recovered", "agent_claims_success"):
        if c in df:
            df[c] = df[c].astype(bool)
    if "privileged" in df:  # None where the stack was never built (build_error, worker_crash)
        df["privileged"] = df["privileged"].astype("boolean")
    if "traceback" in df:
        df["traceback"] = df["traceback"].astype("string")
    if "agent_outcome" in df:  # None for rows never run, and rows written before the column
        df["agent_outcome"] = df["agent_outcome"].astype("string")
    for c in ("grounding", "judge_goals"):  # nested, or null for rows never run: JSON text keeps the schema fixed
        if c in df:
            df[c] = df[c].map(lambda v: v if isinstance(v, str) or v is None else json.dumps(v, sort_keys=True)
                              ).astype("string")
    if "false_success_claim" in df:
        df["false_success_claim"] = df["false_success_claim"].fillna(False).astype(bool)
    if "skill_results" in df:  # {skill: [ok, n]} with varying skills: JSON text keeps parquet's schema fixed
        df["skill_results"] = df["skill_results"].map(
            lambda d: d if isinstance(d, str) else json.dumps(d or {}, sort_keys=True)).astype("string")
    return df


def load_results(path: str | Path) -> Any:
    """DataFrame of a results folder (``results.parquet``, else ``episodes.jsonl``) or a parquet file.

    Raises:
        ConfigError: nothing readable at ``path``.
    """
    import pandas as pd

    p = Path(path)
    if p.is_file() and p.suffix == ".parquet":
        return pd.read_parquet(p)
    if (p / "results.parquet").exists():
        return pd.read_parquet(p / "results.parquet")
    if (p / PART_FILE).exists():
        return rows_to_frame(list(ResultStore(p).load_rows().values()))
    raise ConfigError(f"no results at {p}: expected results.parquet or {PART_FILE} (run tandem-eval first)")
