"""Does a learned trace model's grasp and release point stay put when the subgoal starts from somewhere else?

In the demonstrations every pick starts where the expert's last place ended and every carry (place, stack, insert)
at the end of the expert's lift; closed loop, a re-pick starts about 10 cm lower, right above the object, and a
learned lift can end a few centimetres short. The expert's grasp and release points do not depend on where the
gripper starts. This benchmark moves the gripper at the start of each held-out subgoal (and, for a carry, the
carried object with it, keeping the grasp) and measures, against the demonstration's trace:

* **grasp** (a pick's first closed row) and **release** (a carry's first open row) position error per axis, mm;
* the release error of carries whose object is held the other way round (turned by a half turn about the
  gripper: a nut held with its handle ahead instead of behind), against the expert's release moved to put the
  object, not the gripper, where the expert puts it;
* the grasp error from *re-pick* starts, right above the expert's grasp point (:data:`REPICKS`), where no
  demonstrated pick starts;
* how often the decoded yaws turn by a half turn between two consecutive rows that are both within 0.2 rad of the
  last row modulo a half turn (a wrist turned out and back, or turned at the grasp: see
  :func:`planner_vlm.learned.trace_model.coherent_turns`).

Several trace checkpoints are measured in the same run, on the same samples (the dataset's last ``--val-episodes``
episodes, held out of the recipe's training). No simulator runs: the inputs are the dataset's labels.

Usage::

    python benchmarks/trace_start_shift.py --dataset datasets/pick_place_bins_lowdim \\
        --checkpoints checkpoints/trace/pick_place_bins outputs/train_trace/<run>/checkpoint \\
        --out outputs/benchmarks/trace_start_shift.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

#: Start shifts (dx, dz) in m: none, a re-pick's lower start, further down, sideways, both.
SHIFTS = ((0.0, 0.0), (0.0, -0.03), (0.0, -0.1), (0.1, 0.0), (0.2, -0.1))
#: Re-pick starts (dx, dy, dz) in m from the expert's grasp point, where a pick whose grasp closed on nothing starts
#: again (picks only; carries keep their start).
REPICKS = ((0.0, 0.0, 0.05), (0.03, -0.03, 0.1))


def _first_row(rows: np.ndarray, n: int, closed: bool) -> int | None:
    """Index of the first of the ``n`` real rows whose gripper command is closed (``closed``) or open."""
    hit = np.flatnonzero((rows[:n, 4] > 0) == closed)
    hit = hit[hit >= 1]
    return int(hit[0]) if len(hit) else None


def _error_summary(errors: list[np.ndarray]) -> dict[str, Any]:
    """``{"n", "median_mm_xyz", "p90_mm_xyz"}`` of per-axis absolute errors ``errors`` (each ``(3,)`` mm)."""
    e = np.array(errors, np.float64).reshape(-1, 3)
    return {"n": int(len(e)), "median_mm_xyz": np.median(e, 0).round(1).tolist() if len(e) else None,
            "p90_mm_xyz": np.percentile(e, 90, 0).round(1).tolist() if len(e) else None}


def measure(checkpoint: Path, data: Any, index: np.ndarray) -> dict[str, Any]:
    """Grasp/release errors and half-turn flips of one checkpoint under every shift of :data:`SHIFTS`.

    Args:
        checkpoint: a trace model checkpoint directory. data: a
            :class:`~planner_vlm.learned.trace_data.TraceDataset` (its vocabulary is set to the checkpoint's).
        index: ``(N,)`` sample indices of ``data``.

    Returns:
        JSON-safe ``{"checkpoint", "config", "shifts": [{"dx_m", "dz_m", "samples", "half_turn_flips", "grasp":
        {"n", "median_mm_xyz", "p90_mm_xyz"}, "release": {...}}], "repicks": [{"from_grasp_m", "grasp": {...}}],
        "flipped_carries": {"release": {...}}}``
        (errors in mm per world axis).

    Raises:
        CheckpointError: an unreadable checkpoint. UnknownSkillError / UnknownNameError: a dataset subgoal outside
            the checkpoint's vocabulary.
    """
    import torch

    from planner_vlm.learned.trace_model import TraceModel, axial, decode_rows, trace_inputs
    from planner_vlm.learned.trace_train import carried_objects

    model = TraceModel.from_checkpoint(checkpoint)
    data.set_vocabulary(model.cfg.skills, model.cfg.arg_names)
    held = carried_objects(model.cfg, data.rows[index], data.args[index])
    carrying = held >= 0
    out: dict[str, Any] = {"checkpoint": str(checkpoint), "config": model.cfg.to_dict(), "shifts": [],
                           "repicks": []}

    def decode(kp: np.ndarray, proprio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = trace_inputs(model.cfg, kp, proprio, data.skill[index], data.args[index])
        with torch.no_grad():
            net_out = model.net(*(torch.from_numpy(x[k]) for k in ("features", "anchors", "refs")))
        return decode_rows(net_out, x["eef"], x["yaw"], model.cfg, x["turn_matters"])

    grasp_row = [None if carrying[j] else _first_row(data.rows[i], int(data.mask[i].sum()), True)
                 for j, i in enumerate(index)]
    picks = np.array([j for j, g in enumerate(grasp_row) if g is not None], int)
    for offset in REPICKS:
        proprio = data.proprio[index].astype(np.float64).copy()
        for j in picks:
            proprio[j, :3] = data.rows[index[j], grasp_row[j], :3] + np.asarray(offset)
        rows, mask = decode(data.keypoints_3d[index].astype(np.float64), proprio)
        errs = []
        for j in picks:
            p = _first_row(rows[j], int(mask[j].sum()), True)
            got = rows[j, p if p is not None else int(mask[j].sum()) - 1, :3]
            errs.append(np.abs(got - data.rows[index[j], grasp_row[j], :3]) * 1000.0)
        out["repicks"].append({"from_grasp_m": list(offset), "grasp": _error_summary(errs)})
    carries = np.flatnonzero(carrying)
    kp = data.keypoints_3d[index].astype(np.float64).copy()
    eef = data.proprio[index, :2].astype(np.float64)
    obj = kp[carries, held[carries], :, :2]
    kp[carries, held[carries], :, :2] = 2.0 * eef[carries, None] - obj  # turned by a half turn about the gripper
    delta = kp[carries, held[carries], 0, :2] - obj[:, 0]
    rows, mask = decode(kp, data.proprio[index].astype(np.float64))
    errs = []
    for c, j in enumerate(carries):
        i = index[j]
        t, p = _first_row(data.rows[i], int(data.mask[i].sum()), False), _first_row(rows[j], int(mask[j].sum()), False)
        if t is not None:
            target = data.rows[i, t, :3].astype(np.float64) - np.append(delta[c], 0.0)
            got = rows[j, p if p is not None else int(mask[j].sum()) - 1, :3]
            errs.append(np.abs(got - target) * 1000.0)
    out["flipped_carries"] = {"release": _error_summary(errs)}
    for dx, dz in SHIFTS:
        kp = data.keypoints_3d[index].astype(np.float64).copy()
        proprio = data.proprio[index].astype(np.float64).copy()
        proprio[:, 0] += dx
        proprio[:, 2] += dz
        rows_carrying = np.flatnonzero(carrying)  # the carried object moves with the gripper
        kp[rows_carrying, held[rows_carrying], :, 0] += dx
        kp[rows_carrying, held[rows_carrying], :, 2] += dz
        rows, mask = decode(kp, proprio)
        errors: dict[str, list[np.ndarray]] = {"grasp": [], "release": []}
        flips = 0
        for j, i in enumerate(index):
            n_true, n_pred = int(data.mask[i].sum()), int(mask[j].sum())
            kind, closed = ("release", False) if carrying[j] else ("grasp", True)
            t, p = _first_row(data.rows[i], n_true, closed), _first_row(rows[j], n_pred, closed)
            if t is not None:
                target = data.rows[i, t, :3].astype(np.float64)  # the expert's: independent of the start
                got = rows[j, p if p is not None else n_pred - 1, :3]
                errors[kind].append(np.abs(got - target) * 1000.0)
            yaw = rows[j, :n_pred, 3].astype(np.float64)
            settled = np.abs(axial(yaw[1:] - yaw[n_pred - 1])) < 0.2
            jump = np.abs(np.diff(yaw[1:])) > np.pi / 2
            flips += int(np.any(jump & settled[1:] & settled[:-1]))
        row: dict[str, Any] = {"dx_m": dx, "dz_m": dz, "samples": int(len(index)), "half_turn_flips": flips}
        for kind, errs in errors.items():
            row[kind] = _error_summary(errs)
        out["shifts"].append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="a tandem-collect dataset with labels and 3-D traces")
    ap.add_argument("--checkpoints", nargs="+", required=True, type=Path, help="trace model checkpoint dirs")
    ap.add_argument("--val-episodes", type=int, default=20, help="the last this-many episodes (the recipe's held out)")
    ap.add_argument("--out", type=Path, default=Path("outputs/benchmarks/trace_start_shift.json"))
    args = ap.parse_args()

    from planner_vlm.learned.trace_data import TraceDataset

    t0 = time.time()
    data = TraceDataset(args.dataset, val_episodes=args.val_episodes)
    index = np.asarray(data.val_index)
    results = [measure(c, data, index) for c in args.checkpoints]
    doc = {"benchmark": "trace_start_shift", "dataset": args.dataset, "val_episodes": args.val_episodes,
           "wall_s": round(time.time() - t0, 1), "command": " ".join(sys.argv), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    for r in results:
        print(r["checkpoint"])
        for s in r["shifts"]:
            print(f"  start dx {s['dx_m']:+.2f} dz {s['dz_m']:+.2f} m: grasp median {s['grasp']['median_mm_xyz']} "
                  f"p90 {s['grasp']['p90_mm_xyz']} mm; release median {s['release']['median_mm_xyz']} mm; "
                  f"half-turn flips {s['half_turn_flips']}/{s['samples']}")
        f = r["flipped_carries"]["release"]
        print(f"  carries held the other way round: release median {f['median_mm_xyz']} p90 {f['p90_mm_xyz']} mm "
              f"({f['n']} carries)")
        for s in r["repicks"]:
            print(f"  re-pick from {s['from_grasp_m']} m of the grasp: grasp median {s['grasp']['median_mm_xyz']} "
                  f"p90 {s['grasp']['p90_mm_xyz']} mm ({s['grasp']['n']} picks)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
