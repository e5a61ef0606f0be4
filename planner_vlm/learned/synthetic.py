"""A tiny synthetic tandem dataset for the learned perception models' debug configs and CI: two cubes drawn by a
calibrated pinhole camera, with labels, traces and a collector journal, in the layout ``tandem-collect`` writes.

Every frame is an independent random scene (the models read single frames): each cube on the table at a random
place and yaw, or stacked on the other, or held by the gripper in the air. Ground truth: ``grasped(x)``,
``on(x,y)``, two keypoints per cube (:func:`tandem.core.dataset_schema.object_keypoints`) in m and in px. Each
episode has two subgoal attempts, ``pick(a)`` from its first frame and ``stack(a,b)`` from its middle frame, with a
geometric "expert" trace (above, at, close, lift; above the other cube, lower, release, retreat) whose grasp yaw is
the cube's yaw modulo a quarter turn nearest the gripper's. Images are drawn with OpenCV (cube hulls with a lit top
face, a grey gripper disc): nothing here needs the simulator.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from planner_vlm.learned.camera import CameraCalibration
from tandem.core import dataset_schema as schema

OBJECTS = ("red", "blue")
PREDICATES = ("grasped(red)", "grasped(blue)", "on(red,blue)", "on(blue,red)")
COLOURS = {"red": (220, 40, 40), "blue": (40, 60, 220)}
HALF = 0.025  # cube half size (m)
TABLE_Z = 0.80  # table top (m)
#: Camera pose of robosuite's agentview in these scenes (OpenCV axes): at (0.5, 0, 1.35) looking down at 45 deg.
WORLD_FROM_CAMERA = np.array([[0.0, 0.7061, -0.7081, 0.5], [1.0, 0.0, 0.0, 0.0], [0.0, -0.7081, -0.7061, 1.35],
                              [0.0, 0.0, 0.0, 1.0]])


def synthetic_calibration(image_size: tuple[int, int]) -> CameraCalibration:
    """The synthetic camera at ``image_size = (H, W)``: 45 deg vertical field of view, principal point at the centre."""
    h, w = image_size
    f = 0.5 * h / math.tan(math.radians(45.0) / 2)
    k = np.array([[f, 0.0, w / 2], [0.0, f, h / 2], [0.0, 0.0, 1.0]])
    r = WORLD_FROM_CAMERA[:3, :3]
    u, _, vt = np.linalg.svd(r)  # exact orthonormal rotation
    pose = WORLD_FROM_CAMERA.copy()
    pose[:3, :3] = u @ vt
    return CameraCalibration(k, pose, (h, w), "agentview")


def _down_quat(yaw: float) -> np.ndarray:
    """wxyz quaternion of a gripper pointing down (z axis to world -z) with its finger axis at ``yaw``."""
    # R = Rz(yaw) @ diag(1, -1, -1): a half turn about x, then yaw about z
    return np.array([0.0, math.cos(yaw / 2), math.sin(yaw / 2), 0.0])


def _grasp_yaw(obj_yaw: float, now: float) -> float:
    """``obj_yaw + k pi / 2`` nearest ``now`` (a cube is grasped across either pair of faces)."""
    d = (obj_yaw - now + math.pi / 4) % (math.pi / 2) - math.pi / 4
    return now + d


def _scene(rng: np.random.Generator) -> dict[str, Any]:
    """One random scene: object poses, gripper, predicates."""
    pos = {o: np.array([rng.uniform(-0.1, 0.1), rng.uniform(-0.15, 0.15), TABLE_Z + HALF]) for o in OBJECTS}
    while np.linalg.norm(pos["red"][:2] - pos["blue"][:2]) < 0.09:
        pos["blue"][:2] = [rng.uniform(-0.1, 0.1), rng.uniform(-0.15, 0.15)]
    yaw = {o: rng.uniform(-math.pi, math.pi) for o in OBJECTS}
    eef = np.array([rng.uniform(-0.12, 0.12), rng.uniform(-0.18, 0.18), rng.uniform(0.9, 1.05)])
    eef_yaw, opening = rng.uniform(-math.pi, math.pi), 0.08
    preds = dict.fromkeys(PREDICATES, False)
    mode, top = rng.integers(3), OBJECTS[rng.integers(2)]
    bottom = OBJECTS[1 - OBJECTS.index(top)]
    if mode == 1:  # stacked
        pos[top] = pos[bottom] + np.array([rng.normal(0, 0.003), rng.normal(0, 0.003), 2 * HALF])
        preds[f"on({top},{bottom})"] = True
    elif mode == 2:  # held
        pos[top] = eef.copy()
        yaw[top] = eef_yaw + rng.normal(0, 0.05)
        opening = 2 * HALF
        preds[f"grasped({top})"] = True
    quat = {o: np.array([math.cos(yaw[o] / 2), 0.0, 0.0, math.sin(yaw[o] / 2)]) for o in OBJECTS}
    proprio = np.concatenate([eef, _down_quat(eef_yaw), [opening]])
    return {"pos": pos, "yaw": yaw, "quat": quat, "eef": eef, "eef_yaw": eef_yaw, "proprio": proprio, "preds": preds}


def _draw(scene: dict[str, Any], cal: CameraCalibration) -> np.ndarray:
    import cv2

    h, w = cal.image_size
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = (150, 130, 110)
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], np.float64) * HALF
    order = sorted(OBJECTS, key=lambda o: scene["pos"][o][2])
    for o in order:
        c, s = math.cos(scene["yaw"][o]), math.sin(scene["yaw"][o])
        rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        pts = corners @ rot.T + scene["pos"][o]
        px = cal.project(pts)
        hull = cv2.convexHull(np.round(px * 16).astype(np.int32))
        col = np.array(COLOURS[o])
        cv2.fillConvexPoly(img, hull, tuple(int(v) for v in col * 0.6), lineType=cv2.LINE_AA, shift=4)
        top = cal.project(pts[corners[:, 2] > 0][[0, 1, 3, 2]])
        cv2.fillConvexPoly(img, np.round(top * 16).astype(np.int32), tuple(int(v) for v in col), lineType=cv2.LINE_AA,
                           shift=4)
    g = cal.project(scene["eef"] + np.array([0, 0, 0.04]))[0]
    cv2.circle(img, (int(round(g[0] * 16)), int(round(g[1] * 16))), int(max(w / 24, 1) * 16), (70, 70, 70), -1,
               lineType=cv2.LINE_AA, shift=4)
    return img


def _trace(scene: dict[str, Any], skill: str, args: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    eef, now = scene["eef"], scene["eef_yaw"]
    up = np.array([0.0, 0.0, 1.0])
    if skill == "pick":
        p = scene["pos"][args[0]]
        g = _grasp_yaw(scene["yaw"][args[0]], now)
        pts = [eef, p + 0.10 * up, p, p, p + 0.12 * up]
        yaws, grip = [now, g, g, g, g], [-1.0, -1.0, -1.0, 1.0, 1.0]
    else:
        q = scene["pos"][args[1]] + 2 * HALF * up
        g = _grasp_yaw(scene["yaw"][args[1]], now)
        pts = [eef, q + 0.07 * up, q, q, q + 0.10 * up]
        yaws, grip = [now, g, g, g, g], [1.0, 1.0, 1.0, -1.0, -1.0]
    from tandem.core.types import Trace3D

    return schema.pad_trace_3d(Trace3D(points=np.stack(pts), yaw=np.array(yaws), gripper=np.array(grip)))


def make_synthetic_dataset(root: str | Path, episodes: int = 4, frames: int = 40, image_size: tuple[int, int] = (48, 48),
                           seed: int = 0) -> Path:
    """Write the synthetic dataset to ``root`` (see the module docstring); returns ``root``.

    Args:
        episodes: episodes (>= 1). frames: frames per episode (>= 2). image_size: ``(H, W)`` px. seed: the scenes.

    Raises:
        ValueError: fewer than 1 episode or 2 frames; ``FileExistsError`` if ``root`` holds a dataset already.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if episodes < 1 or frames < 2:
        raise ValueError(f"make_synthetic_dataset needs episodes >= 1 and frames >= 2, got {episodes}, {frames}")
    root = Path(root)
    if (root / "meta" / "info.json").exists():
        raise FileExistsError(f"{root} already holds a dataset")
    rng = np.random.default_rng(seed)
    cal = synthetic_calibration(image_size)
    cols: dict[str, list[Any]] = {k: [] for k in ("img", "state", "pred", "kp3", "kppx", "sub", "task", "tr", "trm", "ep",
                                                  "fr")}
    texts = {"pick up the red cube": 0, "pick up the blue cube": 1, "stack the red cube on the blue cube": 2,
             "stack the blue cube on the red cube": 3}
    journal = []
    import cv2

    for e in range(episodes):
        a = OBJECTS[e % 2]
        b = OBJECTS[1 - e % 2]
        half = frames // 2
        attempts = [("pick", (a,), 0, half, f"pick up the {a} cube"),
                    ("stack", (a, b), half, frames, f"stack the {a} cube on the {b} cube")]
        rec = {"episode_index": e, "seed": seed + e, "task": "synthetic", "success": True, "frames": frames,
               "attempts": []}
        for i, (skill, args, f0, f1, text) in enumerate(attempts):
            trace = None
            for f in range(f0, f1):
                sc = _scene(rng)
                if trace is None:
                    trace = _trace(sc, skill, args)
                kp = np.concatenate([schema.object_keypoints(sc["pos"][o], sc["quat"][o]) for o in OBJECTS])
                ok, png = cv2.imencode(".png", _draw(sc, cal)[:, :, ::-1])
                cols["img"].append({"bytes": png.tobytes(), "path": None})
                cols["state"].append(sc["proprio"].astype(np.float32).tolist())
                cols["pred"].append([float(sc["preds"][p]) for p in PREDICATES])
                cols["kp3"].append(kp.reshape(-1).astype(np.float32).tolist())
                cols["kppx"].append(cal.project(kp).reshape(-1).astype(np.float32).tolist())
                cols["sub"].append(i)
                cols["task"].append(texts[text])
                cols["tr"].append(trace[0].tolist())
                cols["trm"].append(trace[1].tolist())
                cols["ep"].append(e)
                cols["fr"].append(f)
            rec["attempts"].append({"index": i, "id": f"sg{i + 1}", "signature": f"{skill}({','.join(args)})",
                                    "text": text, "task_index": texts[text], "success": True, "verified": True,
                                    "from_frame": f0, "to_frame": f1, "has_trace_3d": True})
        journal.append(rec)
    (root / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
    (root / "meta").mkdir(parents=True, exist_ok=True)
    table = pa.table({
        schema.image_key("agentview"): cols["img"], schema.STATE_KEY: cols["state"],
        schema.LABEL_PREDICATES_KEY: cols["pred"], schema.LABEL_KEYPOINTS_3D_KEY: cols["kp3"],
        schema.LABEL_KEYPOINTS_PX_KEY: cols["kppx"], schema.SUBGOAL_INDEX_KEY: cols["sub"],
        schema.SUBGOAL_TASK_INDEX_KEY: cols["task"], schema.TRACE_3D_KEY: cols["tr"], schema.TRACE_3D_MASK_KEY: cols["trm"],
        "episode_index": cols["ep"], "frame_index": cols["fr"]})
    pq.write_table(table, root / "data" / "chunk-000" / "file-000.parquet")
    feats = schema.dataset_features(image_size=image_size, cameras=("agentview",), goal_image=False,
                                    labels=(OBJECTS, PREDICATES), language=False)
    info = {"fps": schema.FPS, "total_episodes": episodes, "total_frames": episodes * frames,
            "features": {k: {**v, "shape": list(v["shape"])} for k, v in feats.items()}}
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=1))
    (root / "meta" / "tandem_collect.json").write_text(json.dumps({"format": "tandem-collect/1", "episodes": journal},
                                                                  indent=1))
    pq.write_table(pa.table({"task": list(texts), "task_index": list(texts.values())}), root / "meta" / "tasks.parquet")
    return root
