"""Bad input: does the learned state model report a scene unlike its training scenes with low confidence?

The scripted expert (privileged: this is an evaluation) runs the task's reference subgoals on held-out seeds; every
``--every`` control steps the agentview image is rendered as trained, and again under each shift, made by editing
the live MuJoCo model and undone right after (the simulation itself never changes):

* ``table_colour``: the table's visual geoms lose their texture and turn dark green;
* ``dim_light``: every light's diffuse and ambient intensity times 0.3;
* ``bright_light``: diffuse times 2.2 (washed out);
* ``cube_colour``: the red cube's material turns yellow-ish (an unseen object colour; stack_three only).

For each condition it reports the state model's scene confidence (mean, 10th percentile, fraction of frames below
the planner's ``min_scene_confidence`` 0.5), how often the learned verifier would be uncertain (confidence below
0.9 for some predicate of the frame, with the scene's lowest object confidence: an upper bound, since the verifier
counts only the objects its subgoal names), and what the model gets wrong against the simulator's truth: predicate
accuracy (per entry and per frame) and keypoint pixel error. A model that reports low confidence where it is wrong,
rather than false certainty, passes.

Usage:
    MUJOCO_GL=egl python benchmarks/state_shift.py --checkpoint outputs/train_state/<run>/checkpoint \\
        --task stack_three --seeds 1000 1001 1002 --out outputs/benchmarks/state_shift.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")


def _table_colour(env: Any) -> Callable[[], None]:
    m = env.rs_env.sim.model._model
    ids = [i for i in range(m.ngeom) if "table" in (m.geom(i).name or "") and "visual" in m.geom(i).name]
    saved = [(i, int(m.geom_matid[i]), m.geom_rgba[i].copy()) for i in ids]
    for i in ids:
        m.geom_matid[i] = -1
        m.geom_rgba[i] = (0.1, 0.35, 0.15, 1.0)

    def undo() -> None:
        for i, mat, rgba in saved:
            m.geom_matid[i] = mat
            m.geom_rgba[i] = rgba

    return undo


def _light(scale_diffuse: float, scale_ambient: float) -> Callable[[Any], Callable[[], None]]:
    def apply(env: Any) -> Callable[[], None]:
        m = env.rs_env.sim.model._model
        d, a = m.light_diffuse.copy(), m.light_ambient.copy()
        m.light_diffuse[:] = np.clip(d * scale_diffuse, 0, 1)
        m.light_ambient[:] = np.clip(a * scale_ambient, 0, 1)

        def undo() -> None:
            m.light_diffuse[:] = d
            m.light_ambient[:] = a

        return undo

    return apply


def _cube_colour(env: Any) -> Callable[[], None]:
    m = env.rs_env.sim.model._model
    ids = [i for i in range(m.nmat) if (m.mat(i).name or "").startswith("red")]
    saved = [(i, m.mat_rgba[i].copy(), int(m.mat_texid[i][0]) if m.mat_texid.ndim > 1 else int(m.mat_texid[i]))
             for i in ids]
    geoms = [i for i in range(m.ngeom) if int(m.geom_matid[i]) in ids]
    geom_saved = [(g, m.geom_rgba[g].copy()) for g in geoms]
    for i, _, _ in saved:
        if m.mat_texid.ndim > 1:
            m.mat_texid[i][:] = -1
        else:
            m.mat_texid[i] = -1
        m.mat_rgba[i] = (0.95, 0.85, 0.1, 1.0)
    for g, _ in geom_saved:
        m.geom_rgba[g] = (0.95, 0.85, 0.1, 1.0)

    def undo() -> None:
        for i, rgba, tex in saved:
            if m.mat_texid.ndim > 1:
                m.mat_texid[i][0] = tex
            else:
                m.mat_texid[i] = tex
            m.mat_rgba[i] = rgba
        for g, rgba in geom_saved:
            m.geom_rgba[g] = rgba

    return undo


SHIFTS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "table_colour": _table_colour, "dim_light": _light(0.3, 0.3), "bright_light": _light(2.2, 1.0),
    "cube_colour": _cube_colour,
}


def run(checkpoint: str, task: str, seeds: list[int], every: int, shifts: list[str], budget: int) -> dict[str, Any]:
    import torch

    from planner_vlm.learned.camera import CameraCalibration
    from planner_vlm.learned.state_model import StateModel
    from sim.experts import ScriptedExecutor
    from sim.robosuite_env import RobosuiteEnv
    from tandem.core import dataset_schema as schema
    from tandem.core.errors import TandemError
    from tandem.core.types import Subgoal

    torch.set_num_threads(1)
    model = StateModel.from_checkpoint(checkpoint)
    env = RobosuiteEnv(task, cameras=(model.cfg.camera,), image_size=model.cfg.image_size, render=True)
    model.set_calibration(CameraCalibration.from_json(env.camera_calibration(model.cfg.camera)))
    ex = ScriptedExecutor(env)
    conds = ["as_trained", *shifts]
    rec: dict[str, dict[str, list]] = {c: {"conf": [], "acc": [], "frame_ok": [], "px": [], "unsure": [], "wrong_conf": []}
                                       for c in conds}
    t0 = time.perf_counter()

    def measure(cond: str, obs: Any) -> None:
        img = env.render_camera(model.cfg.camera)
        state = model.scene_state(model.predict_arrays(img[None], np.asarray(obs.proprio)[None]), 0)
        truth = obs.privileged
        preds = np.array([float(truth["predicates"].get(p, False)) for p in model.cfg.predicates])
        kp = np.concatenate([schema.object_keypoints(truth["objects"][o]["pos"], truth["objects"][o]["quat"])
                             for o in model.cfg.objects])
        px_true = model.calibration.project(kp)
        err = np.linalg.norm(state.keypoints_px.reshape(-1, 2) - px_true, axis=-1)[0::2]  # origins (no symmetry)
        p, scene = state.probabilities, state.scene_confidence
        right = (p >= 0.5) == (preds >= 0.5)
        r = rec[cond]
        r["conf"].append(scene)
        r["acc"].append(float(right.mean()))
        r["frame_ok"].append(bool(right.all()))
        r["px"].append(float(np.median(err)))
        r["unsure"].append(bool(np.any(np.maximum(p, 1 - p) * scene < 0.9)))
        if not right.all():
            r["wrong_conf"].append(scene)

    for seed in seeds:
        try:
            obs, _ = env.reset(seed)
            step = 0
            for i, (skill, args) in enumerate(env.task_def.reference_subgoals(env.episode)):
                ex.set_subgoal(Subgoal(id=f"sg{i}", skill=skill, args=args, text=skill), env.spec)
                n = 0
                while not ex.subgoal_done() and n < budget:
                    if step % every == 0:
                        measure("as_trained", obs)
                        for name in shifts:
                            undo = SHIFTS[name](env)
                            try:
                                measure(name, obs)
                            finally:
                                undo()
                    obs, _, _, _, _ = env.step(ex.select_action(obs))
                    n += 1
                    step += 1
        except TandemError as e:
            print(f"seed {seed}: {type(e).__name__}: {e}", file=sys.stderr)
    env.close()

    def summ(r: dict[str, list]) -> dict[str, Any]:
        c = np.asarray(r["conf"])
        return {"frames": len(c), "scene_confidence_mean": float(c.mean()) if len(c) else None,
                "scene_confidence_p10": float(np.percentile(c, 10)) if len(c) else None,
                "fraction_low_confidence": float(np.mean(c < 0.5)) if len(c) else None,
                "verifier_uncertain_rate": float(np.mean(r["unsure"])) if len(c) else None,
                "predicate_accuracy": float(np.mean(r["acc"])) if len(c) else None,
                "frame_accuracy": float(np.mean(r["frame_ok"])) if len(c) else None,
                "origin_px_error_median": float(np.median(r["px"])) if len(c) else None,
                "scene_confidence_on_wrong_frames_mean": float(np.mean(r["wrong_conf"])) if r["wrong_conf"] else None}

    return {"checkpoint": checkpoint, "task": task, "seeds": seeds, "every": every,
            "conditions": {c: summ(rec[c]) for c in conds}, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--task", default="stack_three")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1000, 1001, 1002])
    ap.add_argument("--every", type=int, default=20, help="measure every N control steps")
    ap.add_argument("--shifts", nargs="+", default=["table_colour", "dim_light", "bright_light", "cube_colour"],
                    choices=sorted(SHIFTS))
    ap.add_argument("--subgoal-budget", type=int, default=300)
    ap.add_argument("--out", default="outputs/benchmarks/state_shift.json")
    a = ap.parse_args(argv)
    r = run(a.checkpoint, a.task, a.seeds, a.every, a.shifts, a.subgoal_budget)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(r, indent=2))
    print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
