"""Fit the objects' rest heights of an already trained state model from a labelled dataset, and save them with it.

``tandem-train-state`` fits them at the end of training (:mod:`planner_vlm.learned.rest_heights`); this script adds
them to a checkpoint trained before that, without touching its weights, temperature or confidence reference.

Usage::

    python scripts/fit_rest_heights.py --checkpoint checkpoints/state/stack_three \\
        --dataset datasets/stack_three_agentview84 --val-episodes 10

Prints the fitted resting modes as JSON: per object, a list of ``[z_origin, z_second]`` (m, world z; the second null
where its heights in the mode spread), empty where the free frames rest anywhere.
Raises CheckpointError / DatasetError through the loaders for a missing or mismatched checkpoint or dataset, and
ConfigError when the dataset's objects or predicates differ from the checkpoint's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from planner_vlm.learned.rest_heights import fit_rest_heights, rest_heights_to_json
from planner_vlm.learned.state_data import StateDataset
from planner_vlm.learned.state_model import StateModel
from tandem.core.errors import ConfigError


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True, help="state model checkpoint directory (updated in place)")
    p.add_argument("--dataset", required=True, help="the tandem dataset with labels it was trained on")
    p.add_argument("--val-episodes", type=int, default=10, help="the last N episodes are held out (not used)")
    args = p.parse_args()
    model = StateModel.from_checkpoint(args.checkpoint)
    data = StateDataset(args.dataset, camera=model.cfg.camera, val_episodes=args.val_episodes)
    if tuple(data.objects) != tuple(model.cfg.objects) or tuple(data.predicates) != tuple(model.cfg.predicates):
        raise ConfigError(f"{args.dataset} has objects {data.objects} and predicates {data.predicates}, the "
                          f"checkpoint {model.cfg.objects} and {model.cfg.predicates}")
    rest = fit_rest_heights(model.cfg.objects, model.cfg.predicates, data.keypoints_3d[data.train_index],
                            data.predicate_labels[data.train_index])
    model.set_rest_heights(rest)
    cfg_path = Path(args.checkpoint) / "config.json"
    raw = json.loads(cfg_path.read_text())
    raw["rest_heights"] = rest_heights_to_json(rest)
    cfg_path.write_text(json.dumps(raw, indent=2))
    print(json.dumps(dict(zip(model.cfg.objects, raw["rest_heights"])), indent=2))


if __name__ == "__main__":
    main()
