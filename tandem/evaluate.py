"""Long-horizon evaluation harness: suites x seeds x perturbations x stack variants -> one row per episode.

The pieces, in the order a run uses them:

* :func:`expand_suite`: a suite (tasks, seeds, perturbation settings) and the chosen stack variants become a
  deterministic, sorted list of :class:`EpisodeJob` (one per episode). A job's ``key`` names the episode
  (``variant/task/perturbation/seedNNNN``) and its ``config_hash`` fingerprints everything that decides its outcome.
  "Perturbations at random subgoals": an ``after_success`` given as a list is drawn per (task, seed) from
  ``np.random.default_rng([seed, crc32(task)])``, so a rerun draws the same subgoal.
* :func:`run_job`: runs one job in the current process (builds the stack through ``tandem.assembly.build_stack``
  or a variant's ``builder``; keeps the last few built stacks per process) and returns the row. It never raises:
  a build error, an exception outside ``run_episode``, a NaN action or an unstable simulation is a failed row whose
  ``failure_kind`` and ``failure`` say why.
* Backends (:func:`run_jobs`): ``inline`` (this process), ``local`` (``concurrent.futures.ProcessPoolExecutor``,
  spawn context; each worker builds its own env and policy with ``MUJOCO_GL=egl``) and ``ray`` (Ray tasks on
  ``ray.init(num_cpus=..., include_dashboard=False)`` or an existing cluster's ``address``). A worker process that
  dies (segfault, ``os._exit``) is found through its in-flight marker file, re-run alone to confirm, and recorded as
  a ``worker_crash`` row; the run continues.
* :class:`ResultStore`: rows are appended to ``episodes.jsonl`` (flushed and fsync'ed per episode) as they finish;
  a rerun into the same folder skips the keys already there (resume). ``results.parquet`` (sorted by key) and
  ``metrics.json`` are rewritten from the part file at the end.
* :func:`compute_metrics`: success rate with 95% Wilson intervals (Wilson 1927), mean progress
  (``subgoals_done / (2 x goals)``, clipped to 1), recovery rate among episodes where a perturbation fired, failure
  causes, latency percentiles.

Rows are deterministic given (task, seed, perturbation, variant) except for :data:`TIMING_COLUMNS`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
import time
import traceback
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tandem.errors import ConfigError, UnknownNameError

#: Columns that depend on the machine and the schedule, not on (task, seed, perturbation, variant).
TIMING_COLUMNS: tuple[str, ...] = (
    "wall_time_s", "build_time_s", "plan_latency_p50_ms", "plan_latency_p90_ms", "plan_latency_max_ms",
    "action_latency_p50_ms", "action_latency_p90_ms", "action_latency_p99_ms", "worker", "backend", "finished_at",
    "failure_detail",
)
#: Failure kinds a row can carry (``failure_kind``); None on success.
FAILURE_KINDS: tuple[str, ...] = (
    "task_not_achieved", "gave_up", "step_cap", "planner_error", "sim_unstable", "nan_action", "placement",
    "tandem_error", "crash", "build_error", "worker_crash",
)
#: Failure kinds that ``resume.retry_errors=true`` runs again (infrastructure, not the policy).
RETRYABLE_KINDS: tuple[str, ...] = ("build_error", "worker_crash")
BACKENDS: tuple[str, ...] = ("inline", "local", "ray")
#: Stacks kept alive per worker process (an env build costs seconds; memory ~ 0.2 GB each).
STACK_CACHE_SIZE = 2
PART_FILE = "episodes.jsonl"
#: ``failure`` of a ``worker_crash`` row (the same on every backend; ``failure_detail`` says more).
WORKER_CRASH_REASON = "worker process died while running this episode (segfault, os._exit or killed)"
VIDEO_FILE = "videos.jsonl"


# ---------------------------------------------------------------------------------------------- config helpers
def _plain(cfg: Any) -> Any:
    """OmegaConf / nested mapping -> plain JSON-safe dicts and lists (interpolations resolved)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(cfg, (DictConfig, ListConfig)):
            return OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    if isinstance(cfg, Mapping):
        return {str(k): _plain(v) for k, v in cfg.items()}
    if isinstance(cfg, (list, tuple)):
        return [_plain(v) for v in cfg]
    return cfg


def _merge(base: Mapping[str, Any] | None, over: Mapping[str, Any] | None) -> dict[str, Any]:
    """Recursive dict merge; ``over`` wins."""
    out = dict(base or {})
    for k, v in (over or {}).items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _hash(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------- variants
@dataclass(frozen=True)
class Variant:
    """One stack variant: which planner, verifier, executor and goal producer, plus env/agent overrides.

    Attributes:
        name: short label used in keys, tables and plots, e.g. ``"oracle"``, ``"hierarchical"``, ``"flat"``.
        planner, verifier, executor, goals: config groups as ``tandem.assembly.build_stack`` reads them
            (``{"name": ..., **options}``).
        env, agent: partial overrides merged over the evaluation's ``env`` / ``agent`` settings.
        builder: optional ``"module:function"``; ``function(cfg) -> tandem.assembly.Stack`` replaces
            ``build_stack`` (a plug-in point for stacks ``tandem.assembly`` does not know yet).
    """

    name: str
    planner: dict[str, Any] = field(default_factory=lambda: {"name": "oracle"})
    verifier: dict[str, Any] = field(default_factory=lambda: {"name": "oracle"})
    executor: dict[str, Any] = field(default_factory=lambda: {"name": "scripted"})
    goals: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    env: dict[str, Any] = field(default_factory=dict)
    agent: dict[str, Any] = field(default_factory=dict)
    builder: str | None = None

    @classmethod
    def from_config(cls, name: str, cfg: Mapping[str, Any] | None) -> Variant:
        """Build from a config mapping (``variants.<name>`` in ``configs/eval.yaml``).

        Raises:
            ConfigError: unknown keys, or a component given without a ``name``.
        """
        c = dict(_plain(cfg) or {})
        known = {"planner", "verifier", "executor", "goals", "env", "agent", "builder"}
        extra = sorted(set(c) - known)
        if extra:
            raise ConfigError(f"variant {name!r}: unknown keys {extra}; known: {sorted(known)}")
        kw: dict[str, Any] = {}
        for part in ("planner", "verifier", "executor", "goals"):
            if part in c and c[part] is not None:
                v = c[part]
                if isinstance(v, str):
                    v = {"name": v}
                if not isinstance(v, Mapping) or "name" not in v:
                    raise ConfigError(f"variant {name!r}: {part} must be a name or a mapping with 'name', got {v!r}")
                kw[part] = dict(v)
        return cls(name=str(name), env=dict(c.get("env") or {}), agent=dict(c.get("agent") or {}),
                   builder=c.get("builder"), **kw)

    def validate(self) -> None:
        """Check component names against what ``tandem.assembly`` can build (skipped with a custom builder).

        Raises:
            UnknownNameError: e.g. ``unknown executor 'flat_diffusion'; known executors: diffusion, lerobot,
                scripted``, or ``planner 'learned' is not implemented yet``.
            ConfigError: a lerobot executor without ``checkpoint`` (a diffusion one without it uses the shipped
                ``checkpoints/<task>_diffusion`` or ``<task>_flat``, see ``tandem.assembly.resolve_checkpoint``); a
                diffusion checkpoint whose
                ``conditioning_source`` does not match the planner (flat checkpoint <-> ``planner=instruction``).
        """
        if self.builder:
            if ":" not in self.builder:
                raise ConfigError(f"variant {self.name!r}: builder must be 'module:function', got {self.builder!r}")
            return
        from tandem import assembly

        for part, known in (("planner", assembly.PLANNERS), ("verifier", assembly.VERIFIERS),
                            ("executor", assembly.EXECUTORS), ("goal producer", assembly.GOAL_PRODUCERS)):
            name = (self.goals if part == "goal producer" else getattr(self, part))["name"]
            if name not in known:
                err = assembly.unknown_component(part, name, known)
                err.args = (f"variant {self.name!r}: {err.args[0]}",)
                raise err
        ex = self.executor["name"]
        if ex == "lerobot" and not self.executor.get("checkpoint"):
            raise ConfigError(f"variant {self.name!r}: executor={ex} needs executor.checkpoint=<dir>")
        if ex == "diffusion" and self.executor.get("checkpoint"):
            try:
                assembly.check_executor_conditioning(self.planner["name"], self.executor["checkpoint"])
            except ConfigError as e:
                raise ConfigError(f"variant {self.name!r}: {e}") from e

    def label(self) -> dict[str, str]:
        return {"planner": self.planner["name"], "verifier": self.verifier["name"],
                "executor": self.executor["name"], "goals": self.goals["name"]}


# ---------------------------------------------------------------------------------------------- suites
@dataclass(frozen=True)
class PerturbSetting:
    """One task's perturbation setting in a suite.

    Attributes:
        name: perturbation name (``sim.perturbations.PERTURBATIONS``) or ``"none"``.
        at_step: fire at the first control step ``>= at_step`` where the condition holds (None = event-based).
        after_success: int, or a list of ints to draw from per (task, seed) ("at random subgoals").
    """

    name: str = "none"
    at_step: int | None = None
    after_success: int | tuple[int, ...] = 1

    @classmethod
    def from_config(cls, cfg: Any) -> PerturbSetting:
        """From ``"none"``, a name, or ``{"name", "at_step", "after_success"}``.

        Raises:
            ConfigError: empty choice list, or values < 1.
        """
        if cfg is None or isinstance(cfg, str):
            return cls(name=cfg or "none")
        c = dict(_plain(cfg))
        a = c.get("after_success", 1)
        a = int(a) if not isinstance(a, (list, tuple)) else tuple(int(x) for x in a)
        if isinstance(a, tuple) and (not a or min(a) < 1) or isinstance(a, int) and a < 1:
            raise ConfigError(f"perturb.after_success must be >= 1 or a non-empty list of such, got {a!r}")
        at = c.get("at_step")
        return cls(name=str(c.get("name", "none")), at_step=None if at is None else int(at), after_success=a)

    def draw(self, task: str, seed: int) -> dict[str, Any] | None:
        """The concrete perturbation of episode (task, seed): ``{"name", "at_step", "after_success"}`` or None."""
        if self.name == "none":
            return None
        n = self.after_success
        if isinstance(n, tuple):
            rng = np.random.default_rng([int(seed), zlib.crc32(task.encode())])
            n = int(n[int(rng.integers(len(n)))])
        return {"name": self.name, "at_step": self.at_step, "after_success": int(n)}


def perturb_label(p: Mapping[str, Any] | None) -> str:
    """``"none"``, ``"knock_top_cube@s2"`` (after the 2nd success) or ``"open_gripper@t150"`` (at step 150)."""
    if not p:
        return "none"
    return f"{p['name']}@t{p['at_step']}" if p.get("at_step") is not None else f"{p['name']}@s{p['after_success']}"


def perturb_setting_label(p: PerturbSetting) -> str:
    """Label of a setting before drawing, e.g. ``"knock_top_cube"`` (used to group rows in metrics)."""
    return p.name


@dataclass(frozen=True)
class SuiteTask:
    name: str
    perturb: PerturbSetting = PerturbSetting()


@dataclass(frozen=True)
class Suite:
    """Tasks x seeds x perturbation settings.

    Attributes:
        name: ``"standard"``, ``"perturbed"``, ``"smoke"``...
        tasks: one entry per (task, perturbation setting); a task may appear with several settings.
        seeds: the episode seeds.
        max_steps: optional cap on control steps per episode (None: the task's own budget).
    """

    name: str
    tasks: tuple[SuiteTask, ...]
    seeds: tuple[int, ...]
    max_steps: int | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> Suite:
        """From ``configs/suite/<name>.yaml``: ``name``, ``seeds`` (count or list), ``seed_start``, ``tasks``
        (list of names or ``{"name", "perturb"}``), ``max_steps``.

        Raises:
            ConfigError: no tasks, no seeds, or a malformed entry (message names it).
        """
        c = dict(_plain(cfg) or {})
        tasks = []
        for t in c.get("tasks") or []:
            if isinstance(t, str):
                tasks.append(SuiteTask(t))
            elif isinstance(t, Mapping) and "name" in t:
                tasks.append(SuiteTask(str(t["name"]), PerturbSetting.from_config(t.get("perturb"))))
            else:
                raise ConfigError(f"suite {c.get('name')!r}: task entries are names or {{name, perturb}}, got {t!r}")
        seeds = c.get("seeds", 1)
        if isinstance(seeds, int):
            if seeds < 1:
                raise ConfigError(f"suite.seeds must be >= 1, got {seeds}")
            seeds = list(range(int(c.get("seed_start", 0) or 0), int(c.get("seed_start", 0) or 0) + seeds))
        seeds = tuple(int(s) for s in seeds)
        if not tasks or not seeds:
            raise ConfigError(f"suite {c.get('name')!r} needs at least one task and one seed")
        ms = c.get("max_steps")
        return cls(name=str(c.get("name", "suite")), tasks=tuple(tasks), seeds=seeds,
                   max_steps=None if ms is None else int(ms))

    def validate(self) -> None:
        """Check task and perturbation names against ``sim`` (task registry, each task's perturbations).

        Raises:
            UnknownTaskError / UnknownNameError: naming the valid choices.
        """
        from sim.tasks.registry import make_task

        for t in self.tasks:
            task_def = make_task(t.name)
            if t.perturb.name != "none" and t.perturb.name not in task_def.perturbation_names:
                raise UnknownNameError(f"perturbation for task {t.name!r}", t.perturb.name,
                                       list(task_def.perturbation_names))


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run (JSON-safe, picklable; sent to workers).

    Attributes:
        key: ``variant/task/perturbation/seedNNNN``; unique within a results folder.
        task, seed, variant: what it is.
        setting: the suite's perturbation setting name (``"none"`` or e.g. ``"knock_top_cube"``).
        perturb: the drawn perturbation (``{"name", "at_step", "after_success"}``) or None.
        build: the nested config given to ``build_stack`` (task, planner, verifier, executor, goals, perturb, env,
            agent).
        builder: optional ``"module:function"`` replacing ``build_stack``.
        max_steps: episode step cap or None.
        config_hash: fingerprint of everything above that decides the outcome.
        video_dir: when set, the episode is recorded (``episode.mp4`` etc.) into this folder.
        memory_db: the memory store the episode's task memory is written to (``<out_dir>/memory.sqlite``, shared by
            all workers; see ``memory.store``); not part of ``config_hash``.
    """

    key: str
    task: str
    seed: int
    variant: str
    setting: str
    perturb: dict[str, Any] | None
    build: dict[str, Any]
    builder: str | None
    max_steps: int | None
    config_hash: str
    labels: dict[str, str]
    video_dir: str | None = None
    memory_db: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def expand_suite(suite: Suite, variants: Sequence[Variant], env: Mapping[str, Any] | None = None,
                 agent: Mapping[str, Any] | None = None) -> list[EpisodeJob]:
    """All episodes of ``suite`` for each variant, sorted by key (the order never depends on the backend).

    Args:
        suite: tasks x seeds x perturbation settings.
        variants: stack variants (names must be unique).
        env: evaluation-wide env settings (``cameras``, ``image_size``, ``control_freq``, ``render``).
        agent: evaluation-wide agent budgets.

    Raises:
        ConfigError: duplicate variant names or duplicate (task, setting) entries.
    """
    names = [v.name for v in variants]
    if len(set(names)) != len(names) or not names:
        raise ConfigError(f"variant names must be unique and non-empty, got {names}")
    seen = set()
    for t in suite.tasks:
        if (t.name, t.perturb.name) in seen:
            raise ConfigError(f"suite {suite.name!r} lists task {t.name!r} with perturbation {t.perturb.name!r} twice")
        seen.add((t.name, t.perturb.name))
    jobs = []
    for v in variants:
        for t in suite.tasks:
            for seed in suite.seeds:
                p = t.perturb.draw(t.name, seed)
                build = {
                    "task": {"name": t.name},
                    "planner": v.planner, "verifier": v.verifier, "executor": v.executor, "goals": v.goals,
                    "perturb": p or {"name": "none"},
                    "env": _merge(env, v.env), "agent": _merge(agent, v.agent),
                }
                chash = _hash({"build": build, "builder": v.builder, "max_steps": suite.max_steps, "seed": seed})
                key = f"{v.name}/{t.name}/{perturb_label(p)}/seed{seed:04d}"
                jobs.append(EpisodeJob(key=key, task=t.name, seed=int(seed), variant=v.name, setting=t.perturb.name,
                                       perturb=p, build=build, builder=v.builder, max_steps=suite.max_steps,
                                       config_hash=chash, labels=v.label()))
    jobs.sort(key=lambda j: j.key)
    return jobs


# ---------------------------------------------------------------------------------------------- one episode
def classify_failure(failure: str | None, success: bool) -> str | None:
    """Map a ``run_episode`` failure string to one of :data:`FAILURE_KINDS` (None on success)."""
    if success:
        return None
    f = failure or ""
    for prefix, kind in (("SimUnstableError", "sim_unstable"), ("NonFiniteActionError", "nan_action"),
                         ("PlacementError", "placement"), ("crash:", "crash"), ("gave up", "gave_up"),
                         ("planner failed", "planner_error"), ("rollout step cap", "step_cap"),
                         ("env step limit", "step_cap")):
        if f.startswith(prefix):
            return kind
    if ":" in f.split(" ")[0] and f.split(":")[0].endswith("Error"):
        return "tandem_error"
    return "task_not_achieved"


def n_reference_subgoals(goals: Sequence[str]) -> int:
    """Subgoals of the reference plan: 2 per goal (pick + stack/place/insert)."""
    return 2 * len(goals)


def _base_row(job: EpisodeJob) -> dict[str, Any]:
    p = job.perturb or {}
    return {
        "key": job.key, "variant": job.variant, "task": job.task, "seed": job.seed, "setting": job.setting,
        "perturb": perturb_label(job.perturb), "perturb_name": p.get("name", "none"),
        "perturb_after_success": p.get("after_success") if p and p.get("at_step") is None else None,
        "perturb_at_step": p.get("at_step"), **job.labels, "config_hash": job.config_hash,
    }


def failed_row(job: EpisodeJob, kind: str, reason: str, **extra: Any) -> dict[str, Any]:
    """A row for an episode that produced no ``run_episode`` summary (build error, dead worker)."""
    row = {**_base_row(job), "success": False, "failure_kind": kind, "failure": reason, "steps": 0,
           "subgoals_done": 0, "n_subgoals_ref": None, "progress": 0.0, "attempts": 0, "replans": 0, "plans": 0,
           "perturbed": False, "perturb_step": None, "recovered": False, "agent_claims_success": False,
           "instruction": None}
    row.update({c: None for c in TIMING_COLUMNS})
    row.update(extra)
    return row


def row_from_result(job: EpisodeJob, summary: Mapping[str, Any], goals: Sequence[str]) -> dict[str, Any]:
    """The results row of one finished episode (see module docstring for the columns)."""
    n_ref = n_reference_subgoals(goals)
    done = int(summary.get("subgoals_done", 0))
    perts = summary.get("perturbations") or []
    pl, al = summary.get("plan_latency") or {}, summary.get("action_latency") or {}
    success = bool(summary.get("success"))
    row = {
        **_base_row(job),
        "success": success,
        "failure_kind": classify_failure(summary.get("failure"), success),
        "failure": None if success else str(summary.get("failure")),
        "steps": int(summary.get("steps", 0)),
        "subgoals_done": done,
        "n_subgoals_ref": n_ref,
        "progress": 1.0 if success else (min(done / n_ref, 1.0) if n_ref else 0.0),
        "attempts": int(summary.get("attempts", 0)),
        "replans": int(summary.get("replans", 0)),
        "plans": int(summary.get("plans", 0)),
        "perturbed": bool(perts),
        "perturb_step": int(perts[0]["step"]) if perts else None,
        "recovered": bool(summary.get("recovered", False)),
        "agent_claims_success": bool(summary.get("agent_claims_success", False)),
        "instruction": summary.get("instruction"),
        "wall_time_s": summary.get("wall_time_s"),
        "build_time_s": None,
        "plan_latency_p50_ms": pl.get("p50_ms"), "plan_latency_p90_ms": pl.get("p90_ms"),
        "plan_latency_max_ms": pl.get("max_ms"),
        "action_latency_p50_ms": al.get("p50_ms"), "action_latency_p90_ms": al.get("p90_ms"),
        "action_latency_p99_ms": al.get("p99_ms"),
        "worker": None, "backend": None, "finished_at": None,
    }
    return row


_STACKS: OrderedDict[str, Any] = OrderedDict()


def _load_builder(spec: str) -> Callable[[Any], Any]:
    import importlib

    module, _, fn = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), fn)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"variant builder {spec!r} cannot be loaded: {e}") from e


def _stack_for(job: EpisodeJob) -> tuple[Any, bool]:
    """(stack, built_now) for ``job`` from this process's cache; evicts the least recently used."""
    ck = _hash({"build": job.build, "builder": job.builder})
    if ck in _STACKS:
        _STACKS.move_to_end(ck)
        return _STACKS[ck], False
    if job.builder:
        stack = _load_builder(job.builder)(job.build)
    else:
        from tandem.assembly import build_stack

        stack = build_stack(job.build)
    _STACKS[ck] = stack
    while len(_STACKS) > STACK_CACHE_SIZE:
        _, old = _STACKS.popitem(last=False)
        _close_quietly(old)
    return stack, True


def _close_quietly(stack: Any) -> None:
    with contextlib.suppress(Exception):  # closing a broken env must not fail the next episode
        stack.close()


def _drop_stack(job: EpisodeJob) -> None:
    ck = _hash({"build": job.build, "builder": job.builder})
    stack = _STACKS.pop(ck, None)
    if stack is not None:
        _close_quietly(stack)


def _inflight_path(inflight_dir: str | None) -> Path | None:
    return None if inflight_dir is None else Path(inflight_dir) / f"{os.getpid()}.json"


def run_job(job: EpisodeJob | Mapping[str, Any], inflight_dir: str | None = None) -> dict[str, Any]:
    """Run one episode in this process and return its row. Never raises (see module docstring).

    Args:
        job: the episode (or its ``to_json`` dict).
        inflight_dir: folder where this process writes ``<pid>.json`` with the job's key while it runs, so the
            parent can tell which episode a dead worker was running.

    Returns:
        The row: identification columns, outcome columns and :data:`TIMING_COLUMNS`.
    """
    if isinstance(job, Mapping):
        job = EpisodeJob(**job)
    marker = _inflight_path(inflight_dir)
    if marker is not None:
        marker.write_text(json.dumps({"key": job.key}))
    t0 = time.perf_counter()
    try:
        try:
            stack, built = _stack_for(job)
        except Exception as e:  # noqa: BLE001 - a variant that cannot be built is a failed row, not a dead run
            return failed_row(job, "build_error", f"build failed: {type(e).__name__}: {e}",
                              build_time_s=round(time.perf_counter() - t0, 3), worker=os.getpid())
        build_time = time.perf_counter() - t0 if built else 0.0
        try:
            from tandem.rollout import run_episode

            meta = {"key": job.key, "variant": job.variant, "config_hash": job.config_hash, "config": job.build}
            result = run_episode(stack.env, stack.agent, seed=job.seed, out_dir=job.video_dir,
                                 record_video=job.video_dir is not None, max_steps=job.max_steps, meta=meta,
                                 memory_db=job.memory_db)
        except Exception as e:  # noqa: BLE001 - outside run_episode's own guard
            _drop_stack(job)
            return failed_row(job, "crash", f"crash outside run_episode: {type(e).__name__}: {e}",
                              traceback=traceback.format_exc(limit=6), worker=os.getpid())
        row = row_from_result(job, result.summary, result.log.meta.get("goals") or [])
        row["build_time_s"] = round(build_time, 3)
        row["worker"] = os.getpid()
        if job.video_dir is not None:
            row["video"] = result.paths.get("video")
        if row["failure_kind"] in ("crash", "sim_unstable", "nan_action", "tandem_error"):
            _drop_stack(job)  # never reuse an env that ended in an error: the next episode starts from a fresh one
        return row
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)


def _worker_init() -> None:
    """Process-pool initializer: headless EGL rendering, offline hub, quiet robosuite."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import logging

    logging.getLogger("robosuite_logs").setLevel(logging.ERROR)


# ---------------------------------------------------------------------------------------------- backends
def _stamp(row: dict[str, Any], backend: str) -> dict[str, Any]:
    row["backend"] = backend
    row["finished_at"] = round(time.time(), 3)
    return row


def _run_inline(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], **_: Any) -> None:
    _worker_init()
    for j in jobs:
        on_row(_stamp(run_job(j), "inline"))


def _run_local(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], workers: int,
               scratch: Path, **_: Any) -> None:
    """Process pool (spawn). A broken pool is rebuilt; the episodes that were in flight are re-run one by one in a
    single-worker pool, and the one that breaks it again is recorded as ``worker_crash``."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")
    inflight = scratch / "inflight"
    inflight.mkdir(parents=True, exist_ok=True)
    pending = list(jobs)
    suspects: list[EpisodeJob] = []
    while pending or suspects:
        if suspects:  # isolation round: one worker, one suspect at a time
            batch, n, isolated = [suspects.pop(0)], 1, True
        else:
            batch, pending, n, isolated = pending, [], max(1, min(workers, len(pending))), False
        for f in inflight.glob("*.json"):
            f.unlink(missing_ok=True)
        broken: list[EpisodeJob] = []
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_worker_init) as pool:
            futs = {pool.submit(run_job, j, str(inflight)): j for j in batch}
            for fut in as_completed(futs):
                j = futs[fut]
                try:
                    row = fut.result()
                except BrokenProcessPool:
                    broken.append(j)
                    continue
                except Exception as e:  # noqa: BLE001 - e.g. a row that cannot be pickled
                    row = failed_row(j, "crash", f"worker error: {type(e).__name__}: {e}")
                on_row(_stamp(row, "local"))
        if not broken:
            continue
        if isolated:
            j = broken[0]
            on_row(_stamp(failed_row(j, "worker_crash", WORKER_CRASH_REASON,
                                     failure_detail="local: confirmed by re-running it alone"), "local"))
            continue
        dead = set()
        for f in inflight.glob("*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                dead.add(json.loads(f.read_text())["key"])
        for j in broken:
            (suspects if j.key in dead else pending).append(j)
        if not suspects:  # no marker survived (killed between jobs): re-run every broken one alone
            pending = [j for j in pending if j not in broken]
            suspects = list(broken)


def _run_ray(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], workers: int,
             ray_address: str | None = None, **_: Any) -> None:
    """Ray tasks (``max_retries=0``) on a local instance (``num_cpus=workers``) or on ``ray_address``."""
    try:
        import ray
    except ImportError as e:
        raise ConfigError("backend=ray needs the 'ray' extra: pip install 'tandem[ray]'") from e
    started = False
    if not ray.is_initialized():
        env_vars = {"MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "PYOPENGL_PLATFORM": "egl",
                    "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                    "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "runtime_env": {"env_vars": env_vars}}
        if ray_address:
            kw["address"] = ray_address
        else:
            kw["num_cpus"] = int(workers)
        ray.init(**kw)
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_entry)
        refs = {remote.remote(j.to_json()): j for j in jobs}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for r in done:
                j = refs.pop(r)
                try:
                    row = ray.get(r)
                except ray.exceptions.RayTaskError as e:  # an exception escaped run_job (should not happen)
                    row = failed_row(j, "crash", f"ray task error: {str(e).splitlines()[0]}")
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayError) as e:
                    row = failed_row(j, "worker_crash", WORKER_CRASH_REASON,
                                     failure_detail=f"ray: {type(e).__name__}")
                on_row(_stamp(row, "ray"))
    finally:
        if started:
            ray.shutdown()


def _ray_entry(job: dict[str, Any]) -> dict[str, Any]:
    _worker_init()
    return run_job(job)


def run_jobs(jobs: Sequence[EpisodeJob], on_row: Callable[[dict[str, Any]], None], backend: str = "local",
             workers: int = 1, scratch: str | Path | None = None, ray_address: str | None = None) -> None:
    """Run ``jobs`` on ``backend``, calling ``on_row(row)`` in this process as each episode finishes.

    Raises:
        UnknownNameError: unknown backend. ConfigError: ``workers < 1``, ray not installed.
    """
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    if int(workers) < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if not jobs:
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tandem-eval-", dir=scratch) as tmp:
        fn = {"inline": _run_inline, "local": _run_local, "ray": _run_ray}[backend]
        fn(jobs, on_row, workers=int(workers), scratch=Path(tmp), ray_address=ray_address)


# ---------------------------------------------------------------------------------------------- result store
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
        """Which jobs still need running: ``(todo, n_already_done)``.

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
            elif retry_errors and r.get("failure_kind") in RETRYABLE_KINDS:
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
    if "traceback" in df:
        df["traceback"] = df["traceback"].astype("string")
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


# ---------------------------------------------------------------------------------------------- metrics
def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (Wilson 1927); 95% for the default ``z``.

    Returns:
        ``(low, high)`` in [0, 1]; ``(nan, nan)`` when ``n == 0``.

    Raises:
        ValueError: ``successes`` outside ``[0, n]``.
    """
    if n == 0:
        return (math.nan, math.nan)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = max(0.0, center - half), min(1.0, center + half)
    if successes == n:  # exact bounds where rounding would leave 1 - 1e-16
        hi = 1.0
    if successes == 0:
        lo = 0.0
    return (lo, hi)


def ratio_interval(a: int, n_a: int, b: int, n_b: int, z: float = 1.959964) -> tuple[float, float, float]:
    """Ratio of two success rates ``(a/n_a) / (b/n_b)`` with its 95% interval (Katz et al. 1978, log method).

    A zero count gets the usual 0.5 continuity correction on both cells of that arm, so the interval stays finite.

    Returns:
        ``(ratio, low, high)``; ratio is ``inf`` when b == 0 < a, nan when both are 0.

    Raises:
        ValueError: a count outside ``[0, n]`` or ``n == 0``.
    """
    for s, n in ((a, n_a), (b, n_b)):
        if n <= 0 or not 0 <= s <= n:
            raise ValueError(f"need 0 <= successes <= n and n > 0, got {s}/{n}")
    ratio = (a / n_a) / (b / n_b) if b > 0 else (math.inf if a > 0 else math.nan)
    a_c, na_c, b_c, nb_c = float(a), float(n_a), float(b), float(n_b)
    if a == 0 or b == 0:
        a_c, na_c, b_c, nb_c = a + 0.5, n_a + 0.5, b + 0.5, n_b + 0.5
    rr = (a_c / na_c) / (b_c / nb_c)
    se = math.sqrt(max(1 / a_c - 1 / na_c + 1 / b_c - 1 / nb_c, 0.0))
    return ratio, math.exp(math.log(rr) - z * se), math.exp(math.log(rr) + z * se)


def _rate(s: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(s, n)
    return {"n": int(n), "successes": int(s), "rate": (s / n) if n else math.nan, "ci95": [lo, hi]}


def _pct(values: Any) -> dict[str, float] | None:
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], float)
    if v.size == 0:
        return None
    return {"p50": float(np.percentile(v, 50)), "p90": float(np.percentile(v, 90)),
            "p99": float(np.percentile(v, 99)), "n_episodes": int(v.size)}


def _group_metrics(df: Any) -> dict[str, Any]:
    succ = int(df["success"].sum())
    pert = df[df["perturbed"]]
    causes = df.loc[~df["success"], "failure_kind"].fillna("unknown").value_counts().to_dict()
    return {
        "success": _rate(succ, len(df)),
        "mean_progress": float(df["progress"].mean()) if len(df) else math.nan,
        "mean_steps": float(df["steps"].mean()) if len(df) else math.nan,
        "mean_replans": float(df["replans"].mean()) if len(df) else math.nan,
        "recovery": _rate(int(pert["success"].sum()), len(pert)) if len(pert) else None,
        "perturbation_fired": int(len(pert)),
        "failure_causes": {str(k): int(v) for k, v in causes.items()},
        "latency_ms": {
            "plan_p50_per_episode": _pct(df.get("plan_latency_p50_ms", [])),
            "plan_p90_per_episode": _pct(df.get("plan_latency_p90_ms", [])),
            "action_p50_per_episode": _pct(df.get("action_latency_p50_ms", [])),
            "action_p99_per_episode": _pct(df.get("action_latency_p99_ms", [])),
        },
        "wall_time_s_total": float(np.nansum(np.asarray(df["wall_time_s"], dtype=float))) if "wall_time_s" in df else None,
    }


def compute_metrics(df: Any) -> dict[str, Any]:
    """Metrics of a results DataFrame: per variant (everything pooled: e.g. the whole ``perturbed`` suite), per
    variant x setting (all tasks pooled) and per variant x setting x task.

    * ``success``: ``{"n", "successes", "rate", "ci95": [low, high]}`` (Wilson 95%).
    * ``mean_progress``: mean of ``subgoals_done / (2 x goals)`` clipped to 1 (1 on task success).
    * ``recovery``: success rate among episodes where the perturbation fired (Wilson 95%), None if none fired.
    * ``latency_ms``: percentiles over episodes of each episode's own p50/p90/p99 planner and executor latency.
    * ``failure_causes``: failure kind -> count.
    """
    out: dict[str, Any] = {"n_episodes": int(len(df)), "variants": [], "groups": []}
    if df.empty:
        return out
    for variant, g in df.groupby("variant", sort=True):  # everything in this result set, pooled
        out["variants"].append({"variant": variant, "setting": "all", "task": "all", **_group_metrics(g)})
    for (variant, setting), g in df.groupby(["variant", "setting"], sort=True):
        entry = {"variant": variant, "setting": setting, "task": "all", **_group_metrics(g), "per_task": []}
        for task, gt in g.groupby("task", sort=True):
            entry["per_task"].append({"variant": variant, "setting": setting, "task": task, **_group_metrics(gt)})
        out["groups"].append(entry)
    return out


def write_metrics(df: Any, path: str | Path) -> dict[str, Any]:
    """``compute_metrics`` -> JSON file (NaN written as null). Returns the metrics."""
    m = compute_metrics(df)
    Path(path).write_text(json.dumps(_nan_to_none(m), indent=2))
    return m


def _nan_to_none(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


def deterministic_view(df: Any) -> Any:
    """``df`` without :data:`TIMING_COLUMNS`, sorted by key: what two backends must agree on exactly."""
    drop = [c for c in (*TIMING_COLUMNS, "traceback") if c in df.columns]
    return df.drop(columns=drop).sort_values("key").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------- whole run
@dataclass
class EvalOutcome:
    """What :func:`evaluate` did: the results frame and metrics of this suite, counts of skipped/run rows."""

    results: Any
    metrics: dict[str, Any]
    out_dir: Path
    n_skipped: int
    n_run: int
    n_video: int = 0


def evaluate(suite: Suite, variants: Sequence[Variant], out_dir: str | Path, backend: str = "local",
             workers: int = 1, env: Mapping[str, Any] | None = None, agent: Mapping[str, Any] | None = None,
             resume: bool = True, retry_errors: bool = False, video_failures: bool = False,
             ray_address: str | None = None, progress: bool = True, max_episodes: int | None = None,
             validate: bool = True) -> EvalOutcome:
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
        validate: check task, perturbation and component names before starting.

    Raises:
        UnknownNameError / ConfigError: bad suite, variant, backend or a results folder with another config.
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
    todo, n_skipped = store.plan_resume(jobs, retry_errors=retry_errors)
    todo.sort(key=lambda j: (j.seed, j.key))  # seed-major: an interrupted run has covered every task evenly
    todo = [replace(j, memory_db=str(store.root / "memory.sqlite")) for j in todo]  # tandem-replay <out_dir>
    if max_episodes is not None:
        todo = todo[: int(max_episodes)]
    (store.root / "suite.json").write_text(json.dumps({
        "suite": suite.name, "seeds": list(suite.seeds), "variants": [v.name for v in variants],
        "tasks": [{"name": t.name, "perturb": asdict(t.perturb)} for t in suite.tasks], "max_steps": suite.max_steps,
        "env": _plain(env), "agent": _plain(agent), "n_episodes": len(jobs)}, indent=2, default=str))

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
        run_jobs(todo, on_row, backend=backend, workers=workers, scratch=store.root, ray_address=ray_address)
    finally:
        bar.close()
    df = store.finalize(keys)
    metrics = write_metrics(df, store.root / "metrics.json")

    n_video = 0
    if video_failures:
        n_video = record_failure_videos(store, jobs, backend=backend, workers=workers, ray_address=ray_address)
    return EvalOutcome(results=df, metrics=metrics, out_dir=store.root, n_skipped=n_skipped, n_run=len(todo),
                       n_video=n_video)


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
        build = _merge(j.build, {"env": {"render": True}})
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


__all__ = [
    "BACKENDS", "FAILURE_KINDS", "TIMING_COLUMNS", "EpisodeJob", "EvalOutcome", "PerturbSetting", "ResultStore",
    "Suite", "SuiteTask", "Variant", "classify_failure", "compute_metrics", "deterministic_view", "evaluate",
    "expand_suite", "failed_row", "load_results", "n_reference_subgoals", "perturb_label", "ratio_interval",
    "record_failure_videos", "row_from_result", "rows_to_frame", "run_job", "run_jobs", "wilson_interval",
    "write_metrics",
]
