"""Fit a trace checkpoint's grasp prior: each object's demonstrated grasp in its own frame, where demos agree.

For the learned planner's check of a pick's close (:mod:`planner_vlm.learned.grasp_prior`). Reads the successful pick
attempts of ``--dataset`` (a ``tandem-collect`` dataset with labels and 3-D traces: the trace model's training
data, or any demonstrations of the same task; only its ``--episodes`` first episodes with ``--episodes N``), fits
:func:`~planner_vlm.learned.grasp_prior.fit_grasp_prior` with the checkpoint's symmetries, prints the fit, and with
``--write`` stores it as ``model.grasp_prior`` in the checkpoint's ``config.json`` (weights untouched).
``tandem-train-trace`` records the same at training (``model.grasp_prior=true``, the default); this adds it to a
checkpoint trained before.

Usage::

    python scripts/fit_grasp_prior.py --checkpoint checkpoints/trace/nut_assembly \\
        --dataset datasets/nut_assembly_lowdim_sq --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="a tandem-train-trace checkpoint directory")
    p.add_argument("--dataset", required=True, help="demonstrations of the checkpoint's task (labels, 3-D traces)")
    p.add_argument("--episodes", type=int, default=None, help="use only the first N episodes")
    p.add_argument("--write", action="store_true", help="write model.grasp_prior into the checkpoint's config.json")
    args = p.parse_args()
    from planner_vlm.learned.trace_data import dataset_grasp_prior
    from tandem.core.errors import ConfigError, DatasetSchemaError

    cfg_path = Path(args.checkpoint) / "config.json"
    try:
        raw = json.loads(cfg_path.read_text())
        model = raw["model"]
        episodes = list(range(args.episodes)) if args.episodes is not None else None
        prior = dataset_grasp_prior(args.dataset, dict(model.get("symmetries", {})), episodes=episodes)
    except (OSError, KeyError, json.JSONDecodeError) as e:
        sys.exit(f"error: {cfg_path} is not a trace checkpoint's config ({e!r})")
    except (ConfigError, DatasetSchemaError) as e:
        sys.exit(f"error: {e}")
    unknown = sorted(set(prior.objects) - set(model.get("objects", [])))
    if unknown:
        sys.exit(f"error: {args.dataset} picks {unknown}, which the checkpoint's objects {model.get('objects')} lack "
                 "(demonstrations of another task?)")
    fit = prior.to_dict()
    print(json.dumps(fit, indent=2))
    if args.write:
        model["grasp_prior"] = fit
        cfg_path.write_text(json.dumps(raw, indent=2) + "\n")
        print(f"wrote model.grasp_prior into {cfg_path}")


if __name__ == "__main__":
    main()
