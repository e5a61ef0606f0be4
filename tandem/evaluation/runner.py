"""A whole evaluation run: suite x variants -> jobs -> a backend -> the result store -> metrics (and videos).

:func:`evaluate` validates the suite and variants, skips the episodes already recorded (resume), runs the rest on a
backend, writes ``results.parquet`` and ``metrics.json``, and optionally re-runs failed episodes with video.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tandem.core.errors import UnknownNameError
from tandem.evaluation.backends import run_jobs
from tandem.evaluation.config import BACKENDS
from tandem.evaluation.held_out import check_held_out
from tandem.evaluation.rows import RETRYABLE_KINDS
from tandem.evaluation.statistics import write_metrics
from tandem.evaluation.store import PART_FILE, VIDEO_FILE, ResultStore
from tandem.evaluation.suite import EpisodeJob, Suite, Variant, expand_suite, merge_config
from tandem.runtime.config import StackConfig, load, to_dict


@dataclass
class EvalOutcome:
    """What :func:`evaluate` did: the results frame and metrics of this suite, counts of skipped/run rows, and where
    the episodes ran (``ran_on``, e.g. ``"a new local Ray instance with 2 CPU(s)"``)."""

    results: Any
    metrics: dict[str, Any]
    out_dir: Path
    n_skipped: int
    n_run: int
    n_video: int = 0
    ran_on: str = ""


def evaluate(suite: Suite, variants: Sequence[Variant], out_dir: str | Path, backend: str = "local",
             workers: int = 1, env: Mapping[str, Any] | None = None, agent: Mapping[str, Any] | None = None,
             resume: bool = True, retry_errors: bool = False, video_failures: bool = False,
             ray_address: str | None = None, progress: bool = True, max_episodes: int | None = None,
             validate: bool = True, allow_training_seeds: bool = False) -> EvalOutcome:
    """Run a suite for each variant into ``out_dir`` and write ``results.parquet`` and ``metrics.json``.

    Args:
        suite, variants: what to run (see :func:`expand_suite`).
        out_dir: results folder; an existing part file there is resumed (unless ``resume=False``).
        backend, workers, ray_address: see :func:`run_jobs`.
        env, agent: evaluation-wide env settings and agent budgets (variants may override).
        resume: skip episodes already in the part file. With False the part file is moved aside first.
        retry_errors: with resume, run again the rows whose failure kind is in :data:`RETRYABLE_KINDS`.
        video_failures: after the run, re-run each failed episode (not ``build_error``/``worker_crash``) with
            ``env.render=true`` and record ``videos/<key>/episode.mp4``; the re-run's outcome goes to
            ``videos.jsonl`` (episodes are deterministic, so it should fail again the same way; the flag
            ``reproduced`` says whether it did).
        progress: show a tqdm bar with the running success rate (stderr).
        max_episodes: run at most this many of the episodes still to do (a quick look; resume does the rest).
        validate: check task and perturbation names and every variant's stack config (component names and options,
            env and agent overrides) before starting.
        allow_training_seeds: with ``validate``, run even jobs whose executor checkpoint was trained on their seed
            (refused otherwise: :func:`tandem.evaluation.held_out.check_held_out`).

    Raises:
        UnknownNameError / ConfigError: bad suite, variant, backend or a results folder with another config; seeds
            that an executor checkpoint was trained on (unless ``allow_training_seeds``).
    """
    from tqdm import tqdm

    if validate:
        suite.validate()
        for v in variants:
            v.validate()
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    store = ResultStore(out_dir)
    if not resume and store.part.exists():
        store.part.rename(store.root / f"{PART_FILE}.{int(time.time())}.old")
    jobs = expand_suite(suite, variants, env=env, agent=agent)
    if validate:  # each variant's whole stack config (its env and agent overrides merged), before any episode
        checked: set[str] = set()
        for j in jobs:
            if not j.builder and j.variant not in checked:
                checked.add(j.variant)
                load(StackConfig, j.build, f"variants.{j.variant}")
        if not allow_training_seeds:
            check_held_out(jobs)
    todo, n_skipped = store.plan_resume(jobs, retry_errors=retry_errors)
    todo.sort(key=lambda j: (j.seed, j.key))  # seed-major: an interrupted run has covered every task evenly
    todo = [replace(j, memory_db=str(store.root / "memory.sqlite")) for j in todo]  # tandem-replay <out_dir>
    if max_episodes is not None:
        todo = todo[: int(max_episodes)]
    (store.root / "suite.json").write_text(json.dumps({
        "suite": suite.name, "seeds": list(suite.seeds), "variants": [v.name for v in variants],
        "tasks": [{"name": t.name, "perturb": asdict(t.perturb)} for t in suite.tasks], "max_steps": suite.max_steps,
        "env": to_dict(env), "agent": to_dict(agent), "n_episodes": len(jobs)}, indent=2, default=str))

    keys = {j.key for j in jobs}
    prior = [r for k, r in store.load_rows().items() if k in keys and k not in {j.key for j in todo}]
    tally = {"n": len(prior), "ok": sum(bool(r.get("success")) for r in prior)}
    bar = tqdm(total=len(jobs), initial=len(prior), desc=f"{suite.name}", unit="ep", disable=not progress,
               file=sys.stderr, dynamic_ncols=True)

    def on_row(row: dict[str, Any]) -> None:
        store.append(row)
        tally["n"] += 1
        tally["ok"] += int(bool(row.get("success")))
        bar.set_postfix_str(f"success {tally['ok']}/{tally['n']} ({100.0 * tally['ok'] / tally['n']:.1f}%)")
        bar.update(1)

    if tally["n"]:
        bar.set_postfix_str(f"success {tally['ok']}/{tally['n']} ({100.0 * tally['ok'] / tally['n']:.1f}%)")
    try:
        ran_on = run_jobs(todo, on_row, backend=backend, workers=workers, scratch=store.root, ray_address=ray_address)
    finally:
        bar.close()
    info = json.loads((store.root / "suite.json").read_text())
    (store.root / "suite.json").write_text(json.dumps({**info, "backend": backend, "ran_on": ran_on}, indent=2))
    df = store.finalize(keys)
    metrics = write_metrics(df, store.root / "metrics.json")

    n_video = 0
    if video_failures:
        n_video = record_failure_videos(store, jobs, backend=backend, workers=workers, ray_address=ray_address)
    return EvalOutcome(results=df, metrics=metrics, out_dir=store.root, n_skipped=n_skipped, n_run=len(todo),
                       n_video=n_video, ran_on=ran_on)


def video_dir_name(key: str) -> str:
    """Folder name of an episode's video: its key with ``/`` replaced by ``__``."""
    return key.replace("/", "__")


def record_failure_videos(store: ResultStore, jobs: Sequence[EpisodeJob], backend: str = "local",
                          workers: int = 1, ray_address: str | None = None) -> int:
    """Re-run the failed episodes of ``jobs`` with rendering on and write their videos (see :func:`evaluate`).

    Episodes already in ``videos.jsonl`` are skipped. Returns the number re-run.
    """
    rows = store.load_rows()
    have = store.load_rows(VIDEO_FILE)
    todo = []
    for j in jobs:
        r = rows.get(j.key)
        if r is None or r.get("success") or r.get("failure_kind") in RETRYABLE_KINDS or j.key in have:
            continue
        build = merge_config(j.build, {"env": {"render": True}})
        vdir = store.root / "videos" / video_dir_name(j.key)
        todo.append(EpisodeJob(**{**j.to_json(), "build": build, "video_dir": str(vdir)}))

    def on_row(row: dict[str, Any]) -> None:
        orig = rows[row["key"]]
        store.append({"key": row["key"], "video": row.get("video"), "success": row["success"],
                      "failure": row["failure"], "failure_kind": row["failure_kind"],
                      "reproduced": bool(row["success"] == orig["success"]
                                         and row["subgoals_done"] == orig["subgoals_done"])}, file=VIDEO_FILE)

    run_jobs(todo, on_row, backend=backend, workers=workers, scratch=store.root, ray_address=ray_address)
    return len(todo)
