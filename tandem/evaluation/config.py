"""The typed ``tandem-eval`` configuration (``configs/eval.yaml`` + ``configs/suite/<name>.yaml``).

Validated as a whole by :func:`tandem.runtime.config.load` before any episode runs; see
:mod:`tandem.runtime.config` for how schemas are checked and how to add an option. The component sections of a
variant are checked against their own schemas by :meth:`tandem.evaluation.suite.Variant.validate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, override

from tandem.runtime.config import AgentConfig, EnvConfig, FieldError, Schema, deferred_checks, load

#: Where episodes run (:mod:`tandem.evaluation.backends`).
BACKENDS: tuple[str, ...] = ("inline", "local", "ray")


@dataclass
class SuiteConfig(Schema):
    """``suite``: tasks x seeds x perturbation settings (``configs/suite/<name>.yaml``).

    Attributes:
        name: ``standard``, ``perturbed``, ``smoke``, ...
        seeds: a count (seeds ``seed_start .. seed_start + n - 1``) or a list of seeds.
        seed_start: first seed when ``seeds`` is a count.
        max_steps: cap on control steps per episode (None: each task's own budget).
        tasks: task names, or ``{name, perturb}`` entries (``perturb``: a name, or ``{name, at_step,
            after_success}`` where ``after_success`` may be a list drawn per (task, seed), or ``{one_of: [such
            entries]}`` drawing one per (task, seed)).
        instructions: ``template`` (each seed's own instruction) or ``paraphrase`` (the seed's goals worded by the
            held-out part of the phrasing grammar; :class:`tandem.evaluation.suite.Suite`).
    """

    name: str = "suite"
    seeds: Any = 1
    seed_start: int = 0
    max_steps: int | None = None
    tasks: list[Any] = field(default_factory=list)
    instructions: str = "template"

    @override
    def check(self) -> None:
        seeds = self.seeds
        if isinstance(seeds, bool) or not isinstance(seeds, (int, list, tuple)):
            raise FieldError("seeds", f"must be a count or a list of seeds, got {seeds!r}")
        if isinstance(seeds, int) and seeds < 1:
            raise FieldError("seeds", f"must be >= 1, got {seeds}")
        if isinstance(seeds, (list, tuple)) and (not seeds or any(
                isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
            raise FieldError("seeds", f"must be a non-empty list of seeds >= 0, got {list(seeds)}")
        if self.seed_start < 0:
            raise FieldError("seed_start", f"must be >= 0, got {self.seed_start}")
        if self.max_steps is not None and self.max_steps < 1:
            raise FieldError("max_steps", f"must be >= 1 or null, got {self.max_steps}")
        if not self.tasks:
            raise FieldError("tasks", "must list at least one task")
        if self.instructions not in ("template", "paraphrase"):
            raise FieldError("instructions", f"must be template or paraphrase, got {self.instructions!r}")


@dataclass
class VariantConfig(Schema):
    """``variants.<name>``: one stack variant. Component sections are a name or ``{name, **options}``; ``env`` and
    ``agent`` are partial overrides of the evaluation-wide settings; ``builder: "module:function"`` replaces
    :func:`tandem.runtime.registry.build_stack`."""

    planner: Any = None
    verifier: Any = None
    executor: Any = None
    goals: Any = None
    env: dict[str, Any] = field(default_factory=dict)
    agent: dict[str, Any] = field(default_factory=dict)
    builder: str | None = None


@dataclass
class RayConfig(Schema):
    """``ray``: where ``backend=ray`` runs, chosen explicitly (never from the environment alone).

    Attributes:
        address: ``local`` (or null): start a private local Ray instance with ``workers`` CPUs, even when
            ``RAY_ADDRESS`` is set (as it is on cluster nodes); ``auto``: connect to the cluster that
            ``RAY_ADDRESS`` (or the latest cluster started on this machine) names; ``ray://host:10001`` or
            ``host:6379``: connect to that cluster. Connecting never passes ``num_cpus`` (the cluster has its own).
    """

    address: str | None = "local"

    @override
    def check(self) -> None:
        if self.address is not None and not self.address.strip():
            raise FieldError("address", "must be local, auto or a cluster address, got ''")


@dataclass
class EvalConfig(Schema):
    """``tandem-eval`` (``configs/eval.yaml``).

    Attributes:
        suite: what to run. run_variants: which entries of ``variants`` to run. variants: the stack variants
            (each a :class:`VariantConfig`, checked as such).
        backend: ``inline`` (this process), ``local`` (a process pool, spawn) or ``ray``.
        workers: processes (local) or CPUs of the local Ray instance, >= 1. ray: where ``backend=ray`` runs.
        env, agent: evaluation-wide env settings and agent budgets (variants may override).
        out_dir: the results folder. resume: skip the episodes already recorded there. retry_errors: with resume,
            run ``build_error`` / ``worker_crash`` rows again.
        video: ``none`` or ``failures`` (re-run failed episodes with rendering and record their videos).
        max_episodes: run at most this many of the remaining episodes (None: all).
        progress: show a progress bar. validate: check task, perturbation and component names first.
        allow_training_seeds: run even where an executor checkpoint was trained on the suite's seeds (refused by
            default: :mod:`tandem.evaluation.held_out`).
    """

    suite: SuiteConfig = field(default_factory=SuiteConfig)
    backend: str = "local"
    workers: int = 1
    ray: RayConfig = field(default_factory=RayConfig)
    run_variants: list[str] = field(default_factory=lambda: ["oracle"])
    variants: dict[str, Any] = field(default_factory=dict)
    env: EnvConfig = field(default_factory=lambda: EnvConfig(render=False))
    agent: AgentConfig = field(default_factory=AgentConfig)
    out_dir: str = "outputs/eval"
    resume: bool = True
    retry_errors: bool = False
    video: str = "none"
    max_episodes: int | None = None
    progress: bool = True
    validate: bool = True
    allow_training_seeds: bool = False

    @override
    def check(self) -> None:
        for name, variant in self.variants.items():  # a dict of any, so that '+variants.new.planner=...' composes
            self.variants[name] = load(VariantConfig, variant, f"variants.{name}")
        if self.backend not in BACKENDS:
            raise FieldError("backend", f"must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.workers < 1:
            raise FieldError("workers", f"must be >= 1, got {self.workers}")
        unknown = [n for n in self.run_variants if n not in self.variants]
        if unknown or not self.run_variants:
            raise FieldError("run_variants", f"must name entries of variants ({', '.join(sorted(self.variants))}), "
                                             f"got {list(self.run_variants)}")
        if self.video not in ("none", "failures"):
            raise FieldError("video", f"must be 'none' or 'failures', got {self.video!r}")
        if self.max_episodes is not None and self.max_episodes < 1:
            raise FieldError("max_episodes", f"must be >= 1 or null, got {self.max_episodes}")


def register_configs() -> None:
    """Store :class:`EvalConfig` in Hydra's ConfigStore as ``eval_schema`` (``configs/eval.yaml`` names it)."""
    from hydra.core.config_store import ConfigStore

    with deferred_checks():
        ConfigStore.instance().store(name="eval_schema", node=EvalConfig)


__all__ = ["BACKENDS", "EvalConfig", "RayConfig", "SuiteConfig", "VariantConfig", "register_configs"]
