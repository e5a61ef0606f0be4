"""Fit a trace checkpoint's grasp prior: each object's demonstrated grasp in its own frame, where demos agree.

For the learned planner's check of a pick's close (:mod:`planner_vlm.learned.grasp_prior`). Reads the successful pick
attempts of ``--dataset`` (a ``tandem-collect`` dataset with labels and 3-D traces of the checkpoint's task: the
trace model's training data, or any demonstrations of it; only its first ``N`` episodes with ``--episodes N``),
fits :func:`~planner_vlm.learned.grasp_prior.fit_grasp_prior` with the checkpoint's symmetries, prints the fit, and
with ``--write`` stores it as ``model.grasp_prior`` in the checkpoint's ``config.json`` (weights untouched).
``tandem-train-trace model.grasp_prior=true`` records the same at training (off by default: README); this adds it
to a checkpoint trained before.

Refused (exit 2, nothing written): a checkpoint directory without a trace model's ``config.json``, a dataset that
cannot be read (named), ``--episodes`` below 1 or above the dataset's episodes, a dataset picking objects the
checkpoint does not know (another task's), and a ``--write`` that would replace a prior with one that keeps fewer
objects (too few or other demonstrations) unless ``--force``.

Usage::

    python scripts/fit_grasp_prior.py --checkpoint checkpoints/trace/nut_assembly \\
        --dataset datasets/nut_assembly_lowdim_sq --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _read_model(checkpoint: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config.json as a dict, its "model" dict)``, validated by :class:`TraceModelConfig`; exits 2 naming what
    is wrong."""
    from planner_vlm.learned.trace_config import TraceModelConfig
    from tandem.core.errors import ConfigError

    path = checkpoint / "config.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        _fail(f"{path}: not a readable trace checkpoint config ({type(e).__name__}: {e})")
    model = raw.get("model") if isinstance(raw, dict) else None
    if not isinstance(model, dict):
        _fail(f"{path}: has no \"model\" mapping (a tandem-train-trace checkpoint has one)")
    try:
        TraceModelConfig(**model)
    except (ConfigError, TypeError, ValueError) as e:
        _fail(f"{path}: its model config is malformed ({e})")
    return raw, model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="a tandem-train-trace checkpoint directory")
    p.add_argument("--dataset", required=True, help="demonstrations of the checkpoint's task (labels, 3-D traces)")
    p.add_argument("--episodes", type=int, default=None, help="use only the first N episodes (N >= 1)")
    p.add_argument("--write", action="store_true", help="write model.grasp_prior into the checkpoint's config.json")
    p.add_argument("--force", action="store_true", help="with --write: replace a prior even by one keeping fewer objects")
    args = p.parse_args()
    from planner_vlm.learned.state_data import read_info
    from planner_vlm.learned.trace_data import dataset_grasp_prior

    checkpoint = Path(args.checkpoint)
    raw, model = _read_model(checkpoint)
    try:
        total = int(read_info(args.dataset).get("total_episodes", 0))
    except Exception as e:  # noqa: BLE001 - any unreadable dataset: name it
        _fail(f"dataset {args.dataset}: cannot read its meta/info.json ({type(e).__name__}: {e})")
    if args.episodes is not None and not 1 <= args.episodes <= total:
        _fail(f"--episodes must be in 1..{total} (the episodes of {args.dataset}), got {args.episodes}")
    episodes = list(range(args.episodes)) if args.episodes is not None else None
    try:
        prior = dataset_grasp_prior(args.dataset, dict(model.get("symmetries", {})), episodes=episodes)
    except Exception as e:  # noqa: BLE001 - a missing label, a damaged file: name the dataset
        _fail(f"dataset {args.dataset}: {type(e).__name__}: {e}")
    unknown = sorted((set(prior.objects) | set(prior.rejected)) - set(model.get("objects", [])))
    if unknown:
        _fail(f"{args.dataset} picks {unknown}, which the checkpoint's objects {model.get('objects')} lack "
              "(demonstrations of another task?)")
    fit = prior.to_dict()
    print(json.dumps(fit, indent=2))
    if not args.write:
        return
    before = set(dict(model.get("grasp_prior") or {}).get("objects", {}))
    lost = sorted(before - set(prior.objects))
    if lost and not args.force:
        _fail(f"{checkpoint / 'config.json'} has a grasp prior for {lost} that this fit does not keep (fewer or other "
              "demonstrations?); nothing written; pass --force to replace it")
    model["grasp_prior"] = fit
    (checkpoint / "config.json").write_text(json.dumps(raw, indent=2) + "\n")
    print(f"wrote model.grasp_prior into {checkpoint / 'config.json'}")


if __name__ == "__main__":
    main()
