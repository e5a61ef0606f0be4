"""Train the presence model on rendered scenes, fit its refusal thresholds on validation scenes, write a checkpoint.

The training scenes come from ``scripts/render_presence_scenes.py`` (seeds 2000..), the validation scenes from the
same script on seeds 700-999 with ``--random-subsets 0`` (each scene as drawn and with each object removed in turn:
the cases the planner's first plan meets). Per object, the threshold is fitted by
:func:`planner_vlm.learned.presence_model.fit_absent_below` on the validation reads; the held-out measure is
``benchmarks/absent_object.py`` on seeds 1000-1199.

Usage::

    python scripts/train_presence.py --train datasets/presence/pick_place_bins_train.npz \\
        --val datasets/presence/pick_place_bins_val.npz --minutes 10 --out checkpoints/presence/pick_place_bins
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np


def load_scenes(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a ``render_presence_scenes.py`` ``.npz``.

    Raises:
        ValueError: a missing file, not an ``.npz``, a missing array, or arrays whose shapes disagree (named).
    """
    if not Path(path).is_file():
        raise ValueError(f"no scenes file {path}")
    keys = ("images", "present", "objects", "cameras", "seeds")
    try:
        with np.load(path, allow_pickle=False) as d:
            out = {k: d[k] for k in keys if k in d.files}
    except (OSError, EOFError, AttributeError, ValueError) as e:
        raise ValueError(f"{path} is not an .npz of scenes (write it with scripts/render_presence_scenes.py): "
                         f"{type(e).__name__}") from e
    missing = [k for k in keys if k not in out]
    if missing:
        raise ValueError(f"{path} lacks arrays {missing} (write it with scripts/render_presence_scenes.py)")
    n, n_obj, n_cam = len(out["images"]), out["objects"].size, out["cameras"].size
    if out["images"].ndim != 5 or out["images"].shape[1] != n_cam or out["images"].shape[-1] != 3:
        raise ValueError(f"{path}: images must be (N, V={n_cam} cameras, H, W, 3), got {out['images'].shape}")
    if out["present"].dtype != bool or out["present"].shape != (n, n_obj):
        raise ValueError(f"{path}: present must be bool (N={n}, O={n_obj}), got {out['present'].dtype} "
                         f"{out['present'].shape}")
    if len(out["seeds"]) != n or not n:
        raise ValueError(f"{path}: images and seeds must have the same non-zero length, got {n}, {len(out['seeds'])}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Train, fit, write; print the checkpoint's metrics. Exit status 2 with one line on bad input."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=Path, required=True)
    p.add_argument("--val", type=Path, required=True)
    p.add_argument("--minutes", type=float, default=10.0, help="wall-clock training budget on one core")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="the checkpoint directory to write")
    p.add_argument("--overwrite", action="store_true", help="replace a checkpoint already in --out")
    a = p.parse_args(argv)
    import torch

    from planner_vlm.learned.presence_model import PresenceModel, PresenceModelConfig, fit_absent_below
    from planner_vlm.learned.presence_train import presence_accuracy, presence_logits, train_presence
    from tandem.core.errors import ConfigError

    torch.set_num_threads(1)
    try:
        train, val = load_scenes(a.train), load_scenes(a.val)
        objects = tuple(str(o) for o in train["objects"])
        cameras = tuple(str(c) for c in train["cameras"])
        val_objects, val_cameras = tuple(str(o) for o in val["objects"]), tuple(str(c) for c in val["cameras"])
        if val_objects != objects or val_cameras != cameras:
            raise ValueError(f"validation scenes ({list(val_objects)}, {list(val_cameras)}) differ from the "
                             f"training scenes ({list(objects)}, {list(cameras)})")
        never = [o for i, o in enumerate(objects) if not val["present"][:, i].any()]
        if never:
            raise ValueError(f"{a.val}: objects {never} are never present, so no threshold can be fitted for them")
        if any(q.exists() and not q.is_dir() for q in (a.out, *a.out.parents)):
            raise ValueError(f"--out {a.out} is, or lies under, a file; give a checkpoint directory")
        if (a.out / "config.json").exists() and not a.overwrite:
            raise ValueError(f"--out {a.out} already holds a checkpoint; pass --overwrite to replace it")
        overlap = sorted(set(train["seeds"].tolist()) & set(val["seeds"].tolist()))
        if overlap:
            raise ValueError(f"training and validation scenes share seeds {overlap[:5]}")
        cfg = PresenceModelConfig(objects=objects, cameras=cameras, image_size=tuple(train["images"].shape[2:4]))
        t0 = time.process_time()
        net, log = train_presence(train["images"], train["present"], cfg, a.minutes, a.max_steps, seed=a.seed)
        cpu_minutes = (time.process_time() - t0) / 60.0
    except (ValueError, ConfigError) as e:
        print(f"train_presence: {e}", file=sys.stderr)
        return 2
    logits = presence_logits(net, val["images"])
    present = val["present"]
    below, fits = {}, {}
    for i, o in enumerate(objects):
        below[o], fits[o] = fit_absent_below(logits[present[:, i], i], logits[~present[:, i], i])
    unseen = [o for o, fit in fits.items() if not fit["absent_reads"]]
    if unseen:
        print(f"train_presence: warning: the validation scenes never show {unseen} absent; their thresholds come from "
              f"the present reads alone and how many absent ones they catch is unknown (absent_caught: null); "
              f"render validation scenes with objects removed", file=sys.stderr)
    metrics = {"train": {**log, "cpu_minutes": round(cpu_minutes, 2), "frames": int(len(train["images"])),
                         "seeds": [int(train["seeds"].min()), int(train["seeds"].max())]},
               "validation": {**presence_accuracy(logits, present, objects), "frames": int(len(val["images"])),
                              "seeds": [int(val["seeds"].min()), int(val["seeds"].max())], "fit": fits}}
    model = PresenceModel(cfg, net, absent_below=below, metrics=metrics)
    model.save(a.out, command=" ".join(["python scripts/train_presence.py", *map(shlex.quote, sys.argv[1:] if argv is None else argv)]))
    print(json.dumps({"out": str(a.out), "absent_below": {o: round(v, 5) for o, v in below.items()}, **metrics},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
