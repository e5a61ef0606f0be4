"""What the camera's depth shows at an object's read pixel, with the object there and with it removed: the
measurement behind the learned planner's depth absent check (:func:`planner_vlm.learned.absence.absent_by_depth`).

For each seed the task's scene is reset and read by the shipped state model (its camera, RGB-D), once as drawn and
once per instruction object moved 3 m off the table (the evaluation's own hand, as ``benchmarks/absent_object.py``
does). For every instruction object it records the height (m, world z) of the surface that the depth image shows
along the ray through the object's read origin pixel (:func:`planner_vlm.learned.depth_heights.surface_point`),
above the support surface the checkpoint records (``support_z_m``), with the object's heatmap uncertainty. The
summary counts, per clearance, the present objects whose pixel showed the bare support (a false refusal) and the
removed ones' (a refusal). Choose the clearance on validation seeds (700-999), never on the held-out ones.

Usage::

    MUJOCO_GL=egl python benchmarks/absent_depth_signal.py --task pick_place_bins --seed-start 700 --seeds 300 \\
        --out outputs/benchmarks/absent_depth_signal_ppb_val.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tandem.core.errors import TandemError

os.environ.setdefault("MUJOCO_GL", "egl")

#: Where a removed object goes: 3 m off the table along +x (m, world frame), as benchmarks/absent_object.py.
OFF_TABLE_SHIFT_M = np.array([3.0, 0.0, 0.0])
#: Clearances (m) the summary counts at.
CLEARANCES_M = (0.005, 0.01, 0.015, 0.02)


def run(task: str, seeds: list[int], checkpoint: Path) -> dict[str, Any]:
    """One row per (seed, condition, instruction object) and the summary (see the module docstring).

    Raises:
        ConfigError / CheckpointError: a state checkpoint that cannot be read or records no ``support_z_m``.
    """
    import torch

    from planner_vlm.learned.camera import CameraCalibration
    from planner_vlm.learned.depth_heights import surface_point
    from planner_vlm.learned.state_model import StateModel
    from sim.robosuite_env import RobosuiteEnv
    from tandem.core.errors import ConfigError

    torch.set_num_threads(1)
    model = StateModel.from_checkpoint(checkpoint)
    if model.support_z is None:
        raise ConfigError(f"{checkpoint} records no support_z_m: the depth absent check does not apply to it")
    camera, size = model.cfg.camera, tuple(model.cfg.image_size)
    env = RobosuiteEnv(task, cameras=(camera,), image_size=size, depth_cameras=(camera,))
    rows: list[dict[str, Any]] = []
    try:
        # the simulator camera's calibration, injected as the stack does (tandem.runtime.registry._state_model);
        # the first load above read the camera it needs (a 1 MB checkpoint, loaded twice at start-up)
        model = StateModel.from_checkpoint(checkpoint, CameraCalibration.from_json(env.camera_calibration(camera)))
        for seed in seeds:
            env.reset(seed=seed)
            names = tuple(env.episode.spec.objects)
            drawn = env.save_state()
            for removed in (None, *names):
                env.restore_state(drawn)
                if removed is not None:
                    pose = env.observe().privileged["objects"][removed]  # the benchmark's hand: privileged by design
                    env.teleport({removed: (np.asarray(pose["pos"]) + OFF_TABLE_SHIFT_M, np.asarray(pose["quat"]))})
                obs = env.observe()
                state = model.predict(obs, use_depth=False)
                for name in names:
                    i = state.object_index(name)
                    z = float(surface_point(model.calibration, obs.depth[camera], state.keypoints_px[i, 0])[2])
                    rows.append({"seed": seed, "removed": removed, "object": name, "present": name != removed,
                                 "surface_above_support_m": round(z - model.support_z, 4) if np.isfinite(z) else None,
                                 "uncertainty": round(float(state.object_uncertainty[i]), 3)})
    finally:
        env.close()
    dropped = sum(r["surface_above_support_m"] is None for r in rows)  # no depth return at the read pixel
    present = [r for r in rows if r["present"] and r["surface_above_support_m"] is not None]
    absent = [r for r in rows if r["removed"] == r["object"] and r["surface_above_support_m"] is not None]
    summary = {c: {"present_on_bare_support": sum(r["surface_above_support_m"] <= c for r in present),
                   "present": len(present),
                   "absent_on_bare_support": sum(r["surface_above_support_m"] <= c for r in absent),
                   "absent": len(absent)} for c in CLEARANCES_M}
    return {"task": task, "seeds": [seeds[0], seeds[-1]], "checkpoint": str(checkpoint),
            "support_z_m": model.support_z, "by_clearance_m": summary,
            "rows_without_depth_return": dropped, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    """Run and write the JSON; print the summary. Exit status 2 with one line on bad input."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="pick_place_bins")
    p.add_argument("--seed-start", type=int, default=700)
    p.add_argument("--seeds", type=int, default=60,
                   help="how many consecutive seeds from --seed-start (default 60; the README's choice ran 300)")
    p.add_argument("--checkpoint", type=Path, default=None, help="state checkpoint (default: the shipped one)")
    p.add_argument("--out", type=Path, default=Path("outputs/benchmarks/absent_depth_signal.json"))
    a = p.parse_args(argv)
    if a.seeds < 1:
        print(f"--seeds must be >= 1, got {a.seeds}", file=sys.stderr)
        return 2
    checkpoint = a.checkpoint or Path(__file__).resolve().parents[1] / "checkpoints" / "state" / a.task
    t0 = time.time()
    try:
        result = run(a.task, list(range(a.seed_start, a.seed_start + a.seeds)), checkpoint)
    except TandemError as e:  # bad input (an unknown task, a checkpoint without support_z_m): one line
        print(f"absent_depth_signal: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    result["seconds"] = round(time.time() - t0, 1)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
