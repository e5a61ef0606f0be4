"""The evaluation's schema: suites (tasks x seeds x perturbation settings) and stack variants, expanded into jobs.

:func:`expand_suite` turns a suite and the chosen stack variants into a deterministic, sorted list of
:class:`EpisodeJob` (one per episode). A job's ``key`` names the episode (``variant/task/perturbation/seedNNNN``)
and its ``config_hash`` fingerprints everything that decides its outcome. "Perturbations at random subgoals": an
``after_success`` given as a list is drawn per (task, seed) from ``np.random.default_rng([seed, crc32(task)])``,
so a rerun draws the same subgoal. A setting with ``one_of`` (``configs/suite/surprises.yaml``) draws from the same
generator, first which of its perturbations the episode gets, then that one's subgoal.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tandem.core.errors import ConfigError, UnknownNameError
from tandem.runtime.config import to_dict

#: ``suite.instructions`` -> the stack's ``instructions`` (:class:`tandem.runtime.config.StackConfig`).
SUITE_INSTRUCTIONS: dict[str, str] = {"template": "seed", "paraphrase": "paraphrase"}


def merge_config(base: Mapping[str, Any] | None, over: Mapping[str, Any] | None) -> dict[str, Any]:
    """Recursive dict merge; ``over`` wins."""
    out = dict(base or {})
    for k, v in (over or {}).items():
        out[k] = merge_config(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def config_hash(obj: Any) -> str:
    """12 hex digits of the SHA-1 of ``obj``'s sorted JSON: the fingerprint of a job's configuration."""
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Variant:
    """One stack variant: which planner, verifier, executor and goal producer, plus env/agent overrides.

    Attributes:
        name: short label used in keys, tables and plots, e.g. ``"oracle"``, ``"hierarchical"``, ``"flat"``.
        planner, verifier, executor, goals: config sections as :func:`tandem.runtime.registry.build_stack` reads them
            (``{"name": ..., **options}``).
        env, agent: partial overrides merged over the evaluation's ``env`` / ``agent`` settings.
        builder: optional ``"module:function"``; ``function(cfg) -> tandem.runtime.registry.Stack`` replaces
            ``build_stack`` (a plug-in point for stacks ``tandem.runtime.registry`` does not know yet).
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
        c = dict(to_dict(cfg) or {})
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
        """Check every component section against its schema (names, option names, types and values) and a diffusion
        checkpoint's conditioning against the planner; skipped with a custom builder.

        Raises:
            UnknownNameError: e.g. ``unknown executor 'flat_diffusion'; known executors: diffusion, lerobot, ...``,
                or ``planner 'learned' is not implemented yet``.
            ConfigError: a bad option (named, e.g. ``variants.vlm.planner.max_retries``); a lerobot executor without
                ``checkpoint`` (a diffusion one without it uses the shipped ``checkpoints/<task>_diffusion`` or
                ``<task>_flat``, see :func:`tandem.runtime.registry.resolve_checkpoint`); a diffusion checkpoint
                whose ``conditioning_source`` does not match the planner (flat checkpoint <-> ``planner=instruction``).
        """
        if self.builder:
            if ":" not in self.builder:
                raise ConfigError(f"variant {self.name!r}: builder must be 'module:function', got {self.builder!r}")
            return
        from tandem.runtime import registry
        from tandem.runtime.config import load, schema_of

        for kind in ("planner", "verifier", "executor", "goals"):
            section = getattr(self, kind)
            try:
                load(schema_of(kind, str(section["name"])), section, f"variants.{self.name}.{kind}")
            except ConfigError as e:
                e.args = (f"variant {self.name!r}: {e.args[0]}",)
                raise
        ex = self.executor["name"]
        if ex == "lerobot" and not self.executor.get("checkpoint"):
            raise ConfigError(f"variant {self.name!r}: executor={ex} needs executor.checkpoint=<dir>")
        if ex == "diffusion" and self.executor.get("checkpoint"):
            try:
                registry.check_executor_conditioning(self.planner["name"], self.executor["checkpoint"])
            except ConfigError as e:
                raise ConfigError(f"variant {self.name!r}: {e}") from e

    def label(self) -> dict[str, str]:
        """The variant's component names: ``{"planner", "verifier", "executor", "goals"}``."""
        return {"planner": self.planner["name"], "verifier": self.verifier["name"],
                "executor": self.executor["name"], "goals": self.goals["name"]}


@dataclass(frozen=True)
class PerturbSetting:
    """One task's perturbation setting in a suite.

    Attributes:
        name: perturbation name (``sim.perturbations.PERTURBATIONS``) or ``"none"``; ``"one_of"`` with ``one_of``.
        at_step: fire at the first control step ``>= at_step`` where the condition holds (None = event-based).
        after_success: int, or a list of ints to draw from per (task, seed) ("at random subgoals").
        one_of: settings to draw one from per (task, seed) (each with its own ``at_step`` / ``after_success``);
            empty for a single perturbation.
    """

    name: str = "none"
    at_step: int | None = None
    after_success: int | tuple[int, ...] = 1
    one_of: tuple[PerturbSetting, ...] = ()

    @classmethod
    def from_config(cls, cfg: Any) -> PerturbSetting:
        """From ``"none"``, a name, ``{"name", "at_step", "after_success"}``, or ``{"one_of": [such entries]}``.

        Raises:
            ConfigError: empty choice list, values < 1, or a ``one_of`` that is empty, nested or names ``none``.
        """
        if cfg is None or isinstance(cfg, str):
            return cls(name=cfg or "none")
        c = dict(to_dict(cfg))
        if "one_of" in c:
            return cls._one_of(c["one_of"])
        a = c.get("after_success", 1)
        a = int(a) if not isinstance(a, (list, tuple)) else tuple(int(x) for x in a)
        if isinstance(a, tuple) and (not a or min(a) < 1) or isinstance(a, int) and a < 1:
            raise ConfigError(f"perturb.after_success must be >= 1 or a non-empty list of such, got {a!r}")
        at = c.get("at_step")
        return cls(name=str(c.get("name", "none")), at_step=None if at is None else int(at), after_success=a)

    @classmethod
    def _one_of(cls, entries: Any) -> PerturbSetting:
        """A ``one_of`` setting from its list of entries (see :meth:`from_config`)."""
        if not isinstance(entries, (list, tuple)) or not entries:
            raise ConfigError(f"perturb.one_of must be a non-empty list of perturbations, got {entries!r}")
        choices = tuple(cls.from_config(e) for e in entries)
        bad = [c.name for c in choices if c.one_of or c.name in ("none", "one_of")]
        if bad:
            raise ConfigError(f"perturb.one_of lists perturbations by name, not {bad}")
        return cls(name="one_of", one_of=choices)

    @property
    def names(self) -> tuple[str, ...]:
        """The perturbations this setting may give an episode (``()`` for ``none``)."""
        if self.one_of:
            return tuple(c.name for c in self.one_of)
        return () if self.name == "none" else (self.name,)

    def draw(self, task: str, seed: int) -> dict[str, Any] | None:
        """The concrete perturbation of episode (task, seed): ``{"name", "at_step", "after_success"}`` or None."""
        if self.name == "none":
            return None
        return self._draw(np.random.default_rng([int(seed), zlib.crc32(task.encode())]))

    def _draw(self, rng: np.random.Generator) -> dict[str, Any]:
        """Draw from ``rng``: the ``one_of`` entry (when any), then ``after_success`` from a list."""
        if self.one_of:
            return self.one_of[int(rng.integers(len(self.one_of)))]._draw(rng)
        n = self.after_success
        if isinstance(n, tuple):
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
    """One task of a suite, with the perturbation it runs under."""
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
        instructions: how each episode's instruction is worded: ``template`` (the task's own, as each seed draws
            it) or ``paraphrase`` (the seed's goals worded by the held-out part of the phrasing grammar,
            :func:`tandem.core.phrasing.phrase`; the judge reads its goals back from the words).
    """

    name: str
    tasks: tuple[SuiteTask, ...]
    seeds: tuple[int, ...]
    max_steps: int | None = None
    instructions: str = "template"

    @classmethod
    def from_config(cls, cfg: Any) -> Suite:
        """From ``configs/suite/<name>.yaml``: ``name``, ``seeds`` (count or list), ``seed_start``, ``tasks``
        (list of names or ``{"name", "perturb"}``), ``max_steps``.

        Raises:
            ConfigError: no tasks, no seeds, or a malformed entry (message names it).
        """
        c = dict(to_dict(cfg) or {})
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
        instructions = str(c.get("instructions") or "template")
        if instructions not in SUITE_INSTRUCTIONS:
            raise ConfigError(f"suite.instructions must be one of {list(SUITE_INSTRUCTIONS)}, got {instructions!r}")
        return cls(name=str(c.get("name", "suite")), tasks=tuple(tasks), seeds=seeds,
                   max_steps=None if ms is None else int(ms), instructions=instructions)

    def validate(self) -> None:
        """Check task and perturbation names against ``sim`` (task registry, each task's perturbations).

        Raises:
            UnknownTaskError / UnknownNameError: naming the valid choices.
        """
        from sim.tasks.registry import make_task

        for t in self.tasks:
            task_def = make_task(t.name)
            for name in t.perturb.names:
                if name not in task_def.perturbation_names:
                    raise UnknownNameError("perturbation", name, list(task_def.perturbation_names),
                                           where=f"for task {t.name!r}")


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run (JSON-safe, picklable; sent to workers).

    Attributes:
        key: ``variant/task/perturbation/seedNNNN``; unique within a results folder.
        task, seed, variant: what it is.
        setting: the suite's perturbation setting name (``"none"`` or e.g. ``"knock_top_cube"``); for a ``one_of``
            setting, the name drawn for this episode (so that rows group by surprise).
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
        """JSON-safe dict of every field."""
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
                build: dict[str, Any] = {
                    "task": {"name": t.name},
                    "planner": v.planner, "verifier": v.verifier, "executor": v.executor, "goals": v.goals,
                    "perturb": p or {"name": "none"},
                    "env": merge_config(env, v.env), "agent": merge_config(agent, v.agent),
                }
                words = ""
                if suite.instructions != "template":  # templated jobs keep their keys and hashes from before
                    build["instructions"] = SUITE_INSTRUCTIONS[suite.instructions]
                    words = f"~{suite.instructions}"
                chash = config_hash({"build": build, "builder": v.builder, "max_steps": suite.max_steps, "seed": seed})
                key = f"{v.name}/{t.name}/{perturb_label(p)}{words}/seed{seed:04d}"
                setting = p["name"] if t.perturb.one_of and p else t.perturb.name
                jobs.append(EpisodeJob(key=key, task=t.name, seed=int(seed), variant=v.name, setting=setting,
                                       perturb=p, build=build, builder=v.builder, max_steps=suite.max_steps,
                                       config_hash=chash, labels=v.label()))
    jobs.sort(key=lambda j: j.key)
    return jobs
