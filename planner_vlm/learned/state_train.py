"""Train the learned state model on one CPU core, then calibrate it and measure it on held-out episodes.

Losses per frame (weights in :class:`~planner_vlm.learned.state_config.StateTrainConfig`):

* keypoint pixels: Huber (delta 1 px) between the soft-argmax and the label; the second keypoint of an object with
  a visual rotational symmetry of order ``m`` is scored against the nearest of its ``m`` symmetric positions
  (:func:`planner_vlm.learned.state_data.symmetric_keypoints`; ADD-S, Xiang et al. 2018);
* heatmaps: cross-entropy between each heatmap's softmax and a Gaussian (sigma 1 heatmap cell) at the label, a dense
  signal that locates keypoints in far fewer steps than the soft-argmax alone (the regulariser of DSNT, Nibali et
  al. 2018, as a cross-entropy);
* 3-D: Huber (delta 1 cm) of the lifted point (ray through the predicted pixel at the predicted height,
  :func:`planner_vlm.learned.state_net.lift_to_height`) and of the height itself, in cm;
* predicates: binary cross-entropy over the vocabulary;
* yaw (with ``cfg.yaw_head``): squared error of ``(cos m yaw, sin m yaw)`` against the label yaw (from the label
  keypoint pair, :func:`yaw_targets`), for objects of symmetry order ``m``.

AdamW with a cosine learning rate over the time budget (or ``max_steps``), photometric augmentation (brightness and
contrast), the gripper-opening jitter of frames that hold nothing (:func:`jitter_gripper_opening`: in demonstrations
a closed gripper almost always carries a cube, a shortcut the model must not learn), 1 torch thread. Every
``eval_every`` steps the held-out frames are scored; the best snapshot (lowest held-out loss) is kept. At the end the
predicate temperature is fitted on held-out frames
(:func:`planner_vlm.learned.probability_calibration.fit_temperature`) and the heatmap-entropy reference recorded
(the confidence signal of :mod:`planner_vlm.learned.state_model`), and the objects' rest heights are fitted from the
training frames' labels (:func:`planner_vlm.learned.rest_heights.fit_rest_heights`).
"""

from __future__ import annotations

import copy
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.learned.probability_calibration import f1_score, fit_temperature, reliability
from planner_vlm.learned.proprio import OPENING_FEATURE, PROPRIO_OPENING
from planner_vlm.learned.rest_heights import fit_rest_heights
from planner_vlm.learned.state_config import StateModelConfig, StateTrainConfig
from planner_vlm.learned.state_data import StateDataset, symmetric_keypoints
from planner_vlm.learned.state_model import StateModel, camera_geometry


def symmetric_targets(cfg: StateModelConfig, kp_3d: np.ndarray, calibration: CameraCalibration
                      ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each object with a symmetry order ``m > 1``: its second keypoint's index -> ``(px (B, m, 2), 3-D (B, m,
    3))`` of the symmetric positions, from the labels ``kp_3d (B, K, 3)``."""
    out = {}
    for i, obj in enumerate(cfg.objects):
        m = cfg.symmetry(obj)
        if m > 1:
            alt = symmetric_keypoints(kp_3d[:, 2 * i:2 * i + 2].astype(np.float64), m)
            px = calibration.project(alt.reshape(-1, 3)).reshape(len(kp_3d), m, 2)
            out[2 * i + 1] = (px, alt)
    return out


def nearest_symmetric(target_px: torch.Tensor, target_3d: torch.Tensor, pred_px: torch.Tensor,
                      alternatives: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[torch.Tensor, torch.Tensor]:
    """The targets with each symmetric keypoint replaced by its alternative nearest (in px) to the prediction."""
    if not alternatives:
        return target_px, target_3d
    tp, t3 = target_px.clone(), target_3d.clone()
    rows = torch.arange(len(tp))
    for k, (px, p3) in alternatives.items():
        apx = torch.as_tensor(px, dtype=tp.dtype)
        a3 = torch.as_tensor(p3, dtype=tp.dtype)
        j = ((apx - pred_px[:, k, None, :].detach()) ** 2).sum(-1).argmin(-1)
        tp[:, k] = apx[rows, j]
        t3[:, k] = a3[rows, j]
    return tp, t3


def yaw_targets(cfg: StateModelConfig, kp_3d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(targets (B, O, 2), mask (B, O))`` of the yaw head from label keypoints ``kp_3d (B, K, 3)`` m: ``(cos m yaw,
    sin m yaw)`` of each object's yaw (the direction of its keypoint pair about +z) for its symmetry order ``m``; the
    mask drops objects whose keypoint pair is nearly vertical (under 1 cm apart horizontally: a tipped object's yaw
    is undefined)."""
    d = kp_3d[:, 1::2, :2].astype(np.float64) - kp_3d[:, 0::2, :2].astype(np.float64)
    m = np.array([cfg.symmetry(o) for o in cfg.objects], np.float64)
    theta = np.arctan2(d[..., 1], d[..., 0]) * m
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1), (np.linalg.norm(d, axis=-1) > 0.01)


def yaw_errors(cfg: StateModelConfig, yaw: np.ndarray, kp_3d: np.ndarray) -> np.ndarray:
    """``|yaw - label yaw|`` ``(B, O)`` rad, modulo each object's symmetry ``2 pi / m``; NaN where the label yaw is
    undefined (:func:`yaw_targets`)."""
    d = kp_3d[:, 1::2, :2].astype(np.float64) - kp_3d[:, 0::2, :2].astype(np.float64)
    period = 2.0 * np.pi / np.array([cfg.symmetry(o) for o in cfg.objects], np.float64)
    e = yaw - np.arctan2(d[..., 1], d[..., 0])
    e = np.abs((e + period / 2) % period - period / 2)
    return np.where(np.linalg.norm(d, axis=-1) > 0.01, e, np.nan)


def state_losses(out: dict[str, torch.Tensor], batch: dict[str, np.ndarray], cfg: StateModelConfig,
                 tcfg: StateTrainConfig, calibration: CameraCalibration) -> dict[str, torch.Tensor]:
    """The training losses of one batch (see the module docstring): ``{"loss", "px", "heatmap", "metric",
    "predicates"}``, and ``"yaw"`` with the yaw head."""
    tpx = torch.from_numpy(batch["keypoints_px"]).float()
    t3d = torch.from_numpy(batch["keypoints_3d"]).float()
    alts = symmetric_targets(cfg, batch["keypoints_3d"], calibration)
    tpx, t3d = nearest_symmetric(tpx, t3d, out["px"], alts)
    px_loss = F.huber_loss(out["px"], tpx, delta=1.0)
    heat = heatmap_loss(out["heatmap"], tpx, cfg.image_size)
    p3d = out["keypoints_3d"]
    metric = (F.huber_loss(p3d * 100.0, t3d * 100.0, delta=1.0)
              + F.huber_loss(out["z"] * 100.0, t3d[..., 2] * 100.0, delta=1.0))
    pred = F.binary_cross_entropy_with_logits(out["predicate_logits"], torch.from_numpy(batch["predicates"]).float())
    loss = (tcfg.px_weight * px_loss + tcfg.heatmap_weight * heat + tcfg.metric_weight * metric
            + tcfg.predicate_weight * pred)
    out_losses = {"px": px_loss, "heatmap": heat, "metric": metric, "predicates": pred}
    if "yaw_vec" in out:
        vec, mask = yaw_targets(cfg, batch["keypoints_3d"])
        mask_t = torch.from_numpy(mask.astype(np.float32))
        err = ((out["yaw_vec"] - torch.from_numpy(vec).float()) ** 2).sum(-1)
        yaw = (err * mask_t).sum() / mask_t.sum().clamp_min(1.0)
        loss = loss + tcfg.yaw_weight * yaw
        out_losses["yaw"] = yaw
    return {"loss": loss, **out_losses}


def heatmap_loss(logits: torch.Tensor, target_px: torch.Tensor, image_size: tuple[int, int],
                 sigma_cells: float = 1.0) -> torch.Tensor:
    """Mean cross-entropy of heatmap softmaxes ``logits (B, K, h, w)`` against Gaussians (``sigma_cells``) centred on
    ``target_px (B, K, 2)`` (input pixels at ``image_size``; cell ``j`` is centred on pixel ``(j + 0.5) s - 0.5``)."""
    _, _, hh, ww = logits.shape
    sx, sy = image_size[1] / ww, image_size[0] / hh
    cx = (target_px[..., 0] + 0.5) / sx - 0.5
    cy = (target_px[..., 1] + 0.5) / sy - 0.5
    gx = torch.arange(ww, dtype=logits.dtype)
    gy = torch.arange(hh, dtype=logits.dtype)
    wx = torch.exp(-0.5 * ((gx - cx[..., None]) / sigma_cells) ** 2)  # (B, K, w)
    wy = torch.exp(-0.5 * ((gy - cy[..., None]) / sigma_cells) ** 2)  # (B, K, h)
    target = wy[..., :, None] * wx[..., None, :]
    target = target / target.sum(dim=(-2, -1), keepdim=True).clamp_min(1e-12)
    logp = logits.flatten(2).log_softmax(-1)
    return -(target.flatten(2) * logp).sum(-1).mean()


def augment(images: torch.Tensor, tcfg: StateTrainConfig, gen: torch.Generator) -> torch.Tensor:
    """Per-image brightness and contrast jitter of ``images (B, 3, H, W)`` in [0, 1]."""
    if tcfg.brightness == 0 and tcfg.contrast == 0:
        return images
    b = len(images)
    bright = 1.0 + (torch.rand(b, 1, 1, 1, generator=gen) * 2 - 1) * tcfg.brightness
    contrast = 1.0 + (torch.rand(b, 1, 1, 1, generator=gen) * 2 - 1) * tcfg.contrast
    mean = images.mean(dim=(1, 2, 3), keepdim=True)
    return ((images - mean) * contrast + mean * bright).clamp(0.0, 1.0)


def grasp_columns(predicates: tuple[str, ...] | list[str]) -> np.ndarray:
    """Indices of the ``grasped(x)`` predicates of a vocabulary, ``int64 (G,)``."""
    return np.array([i for i, name in enumerate(predicates) if name.startswith("grasped(")], np.int64)


def holds_object(labels: np.ndarray, grasp_cols: np.ndarray) -> np.ndarray:
    """``bool (N,)``: some ``grasped(x)`` label (columns ``grasp_cols`` of ``labels (N, P)``, 0/1) holds."""
    return (labels[:, grasp_cols] >= 0.5).any(axis=1)


def closed_on_nothing_range(opening: np.ndarray, holding: np.ndarray) -> tuple[float, float]:
    """``(low, high)`` m: the gripper openings of a gripper closed on nothing, fitted from labelled frames.

    ``low`` is the smallest opening of any frame, ``high`` half the 1st percentile of the openings of frames that
    hold an object (a held object keeps the fingers about its width apart: 44 mm for a stack_three cube).

    Args:
        opening: ``(N,)`` m, the proprio gripper opening. holding: ``bool (N,)``, some ``grasped(x)`` label holds.

    Raises:
        ValueError: no frame holds an object (nothing to tell an empty gripper from), or empty ``opening``.
    """
    opening = np.asarray(opening, np.float64)
    holding = np.asarray(holding, bool)
    if opening.size == 0 or not holding.any():
        raise ValueError("closed_on_nothing_range needs frames that hold an object (a grasped(x) label) to fit from")
    low = float(opening.min())
    return low, max(low, 0.5 * float(np.percentile(opening[holding], 1)))


def jitter_gripper_opening(proprio_features: torch.Tensor, predicates: np.ndarray, grasp_cols: np.ndarray,
                           opening_range: tuple[float, float], probability: float,
                           gen: torch.Generator) -> torch.Tensor:
    """``proprio_features (B, 10)`` with the gripper opening (column :data:`OPENING_FEATURE`, m) of some frames redrawn
    (:attr:`StateTrainConfig.gripper_jitter`): each frame whose labels ``predicates (B, P)`` hold no
    ``grasped(x)`` (columns ``grasp_cols``) is picked with ``probability`` and gets a uniform draw in
    ``opening_range`` (m; :func:`closed_on_nothing_range`). Returns a new tensor; frames holding an object keep
    their opening."""
    if probability <= 0 or len(proprio_features) == 0:
        return proprio_features
    empty = torch.from_numpy(~holds_object(predicates, grasp_cols))
    pick = empty & (torch.rand(len(proprio_features), generator=gen) < probability)
    lo, hi = opening_range
    draw = lo + (hi - lo) * torch.rand(len(proprio_features), generator=gen)
    out = proprio_features.clone()
    out[:, OPENING_FEATURE] = torch.where(pick, draw.to(out.dtype), out[:, OPENING_FEATURE])
    return out


def to_tensors(batch: dict[str, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(images float (B, 3, H, W) in [0, 1], proprio features (B, 10))`` of a numpy batch."""
    x = torch.from_numpy(batch["image"]).permute(0, 3, 1, 2).float().div_(255.0)
    return x, torch.from_numpy(batch["proprio_features"]).float()


def keypoint_errors(model: StateModel, pred: dict[str, np.ndarray], batch: dict[str, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(pixel errors (B, K) px, 3-D errors (B, K) m)``, each symmetric keypoint against its nearest position."""
    tpx, t3d = torch.from_numpy(batch["keypoints_px"]).double(), torch.from_numpy(batch["keypoints_3d"]).double()
    alts = symmetric_targets(model.cfg, batch["keypoints_3d"], model.calibration)
    tpx, t3d = nearest_symmetric(tpx, t3d, torch.from_numpy(pred["px"]), alts)
    return (np.linalg.norm(pred["px"] - tpx.numpy(), axis=-1), np.linalg.norm(pred["keypoints_3d"] - t3d.numpy(), axis=-1))


def evaluate(model: StateModel, data: StateDataset, index: np.ndarray, batch_size: int = 64) -> dict[str, Any]:
    """Held-out metrics of ``model`` on frames ``index`` of ``data``.

    Returns:
        JSON-safe ``{"frames", "px_median", "px_p90", "px_origin_median", "m3d_median", "m3d_origin_median",
        "z_median", "yaw_error_deg_median", "yaw_error_deg_p90" (modulo each object's symmetry), "predicate_accuracy"
        (per entry), "frame_accuracy" (all predicates of a frame right),
        "predicate_f1", "ece", "per_predicate_accuracy"}`` (px at the model's image size, m).
    """
    preds: dict[str, list[np.ndarray]] = {k: [] for k in ("px_err", "m_err", "z_err", "logits", "labels", "yaw_err")}
    for s in range(0, len(index), batch_size):
        batch = data.batch(index[s:s + batch_size])
        out = model.predict_arrays(batch["image"], data.proprio[index[s:s + batch_size]])
        px_err, m_err = keypoint_errors(model, out, batch)
        preds["px_err"].append(px_err)
        preds["m_err"].append(m_err)
        preds["z_err"].append(np.abs(out["z"] - batch["keypoints_3d"][..., 2]))
        preds["logits"].append(out["logits"])
        preds["labels"].append(batch["predicates"])
        kp = out["keypoints_3d"]
        yaw = out["yaw"] if out.get("yaw") is not None else np.arctan2(kp[:, 1::2, 1] - kp[:, 0::2, 1],
                                                                       kp[:, 1::2, 0] - kp[:, 0::2, 0])
        preds["yaw_err"].append(yaw_errors(model.cfg, yaw, batch["keypoints_3d"]))
    cat = {k: np.concatenate(v) for k, v in preds.items()}
    empty = index[~holds_object(data.predicate_labels[index], grasp_columns(model.cfg.predicates))]
    closed = float(np.min(data.proprio[:, PROPRIO_OPENING]))  # m: the dataset's smallest opening, closed on nothing
    closed_right = []
    for s in range(0, len(empty), batch_size):
        rows = empty[s:s + batch_size]
        prop = np.array(data.proprio[rows], np.float64)
        prop[:, PROPRIO_OPENING] = closed
        out = model.predict_arrays(data.images[rows], prop)
        closed_right.append((out["probabilities"] >= 0.5) == (data.predicate_labels[rows] >= 0.5))
    yaw_deg = np.degrees(cat["yaw_err"][np.isfinite(cat["yaw_err"])])
    probs = 1.0 / (1.0 + np.exp(-cat["logits"] / model.temperature))
    decided = probs >= 0.5
    right = decided == (cat["labels"] >= 0.5)
    return {
        "frames": int(len(index)),
        "px_median": float(np.median(cat["px_err"])), "px_p90": float(np.percentile(cat["px_err"], 90)),
        "px_origin_median": float(np.median(cat["px_err"][:, 0::2])),
        "m3d_median": float(np.median(cat["m_err"])), "m3d_origin_median": float(np.median(cat["m_err"][:, 0::2])),
        "z_median": float(np.median(cat["z_err"])),
        "yaw_error_deg_median": float(np.median(yaw_deg)) if len(yaw_deg) else None,
        "yaw_error_deg_p90": float(np.percentile(yaw_deg, 90)) if len(yaw_deg) else None,
        "predicate_accuracy": float(right.mean()), "frame_accuracy": float(right.all(axis=1).mean()),
        "predicate_f1": f1_score(decided, cat["labels"]),
        "ece": reliability(probs, cat["labels"]).ece,
        "per_predicate_accuracy": {p: round(float(a), 5) for p, a in zip(model.cfg.predicates, right.mean(axis=0))},
        "empty_closed_accuracy": float(np.concatenate(closed_right).mean()) if closed_right else None,
    }


def held_out_logits(model: StateModel, data: StateDataset, index: np.ndarray, batch_size: int = 64
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(logits (N, P), labels (N, P), entropy (N, K))`` of frames ``index``."""
    lg, lb, en = [], [], []
    for s in range(0, len(index), batch_size):
        rows = index[s:s + batch_size]
        out = model.predict_arrays(data.images[rows], data.proprio[rows])
        lg.append(out["logits"])
        lb.append(data.predicate_labels[rows])
        en.append(out["entropy"])
    return np.concatenate(lg), np.concatenate(lb), np.concatenate(en)


def _lr_factor(frac: float) -> float:
    """Warm-up over the first 2%, then cosine decay to 10%."""
    if frac < 0.02:
        return max(frac / 0.02, 0.05)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(frac, 1.0)))


def _load_initial_weights(net: torch.nn.Module, cfg: StateModelConfig, path: str | Path) -> None:
    """Copy a checkpoint's weights and normalisers into ``net`` (``StateTrainConfig.init_from``).

    Raises:
        CheckpointError: an unreadable checkpoint (see ``StateModel.from_checkpoint``).
        ConfigError: a checkpoint whose network config differs from ``cfg`` (named field by field).
    """
    from tandem.core.errors import ConfigError

    start = StateModel.from_checkpoint(path)
    theirs, ours = start.cfg.to_dict(), cfg.to_dict()
    differ = {k: (theirs.get(k), ours.get(k)) for k in sorted(set(theirs) | set(ours)) if theirs.get(k) != ours.get(k)}
    if differ:
        raise ConfigError(f"train.init_from={path}: its state model config differs from this run's "
                          f"(checkpoint, run): {differ}")
    net.load_state_dict(start.net.state_dict())


def train_state_model(data: StateDataset, cfg: StateModelConfig, tcfg: StateTrainConfig, out_dir: str | Path,
                      command: str = "", calibration: CameraCalibration | None = None,
                      log: Any = print, support_z: float | None = None) -> tuple[StateModel, dict[str, Any]]:
    """Train, calibrate and measure a state model; write ``<out_dir>/checkpoint`` and return ``(model, summary)``.

    Args:
        data: the frames (its vocabulary must be ``cfg``'s).
        cfg: the network config. tcfg: the training config.
        out_dir: output directory. command: recorded with the checkpoint.
        calibration: the camera calibration (None: the one fitted from the dataset's labels).
        log: called with one line of progress per evaluation.
        support_z: the surface the task's objects rest on (m, world z; ``StateModel.support_z``), recorded with the
            checkpoint; None: none.

    Returns:
        the model (best held-out snapshot, temperature fitted) and a JSON-safe summary: steps, minutes, samples/s,
        first/last loss, held-out metrics before and after the temperature, the checkpoint path.

    Raises:
        ConfigError: a vocabulary that differs from the dataset's.
    """
    from tandem.core.errors import ConfigError

    if cfg.objects != data.objects or cfg.predicates != data.predicates:
        raise ConfigError(f"state model vocabulary {list(cfg.objects)} / {len(cfg.predicates)} predicates differs from "
                          f"the dataset's {list(data.objects)} / {len(data.predicates)}")
    torch.manual_seed(tcfg.seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cal = (calibration or data.calibration).resized(cfg.image_size)
    model = StateModel(cfg, cal, support_z=support_z)
    net = model.net
    tr = data.train_index
    if tcfg.init_from:
        _load_initial_weights(net, cfg, tcfg.init_from)
    else:
        z = data.keypoints_3d[tr][..., 2]
        net.z_mean.fill_(float(z.mean()))
        net.z_std.fill_(float(max(z.std(), 0.01)))
        pf = data.proprio_features[tr]
        net.proprio_mean.copy_(torch.from_numpy(pf.mean(0)))
        net.proprio_std.copy_(torch.from_numpy(np.maximum(pf.std(0), 1e-2)))
    geo = camera_geometry(cal)
    opt = torch.optim.AdamW(net.parameters(), lr=tcfg.lr, weight_decay=tcfg.weight_decay)
    gen = torch.Generator().manual_seed(tcfg.seed)
    val = data.val_index if len(data.val_index) else data.train_index
    val = val[np.linspace(0, len(val) - 1, min(tcfg.val_frames, len(val))).round().astype(np.int64)]
    budget_s = tcfg.max_minutes * 60.0
    clock = time.process_time if tcfg.clock == "cpu" else time.perf_counter
    t0, c0 = time.perf_counter(), clock()
    cpu0 = time.process_time()
    step, first_loss, last = 0, None, {}
    best: tuple[float, dict[str, torch.Tensor], int] | None = None
    history = []
    batches = data.batches(tcfg.batch_size, seed=tcfg.seed)
    grasp_cols = grasp_columns(cfg.predicates)
    opening_range = (closed_on_nothing_range(data.proprio_features[tr][:, OPENING_FEATURE],
                                             holds_object(data.predicate_labels[tr], grasp_cols))
                     if tcfg.gripper_jitter > 0 else (0.0, 0.0))
    while True:
        elapsed = clock() - c0
        frac = max(elapsed / budget_s, step / tcfg.max_steps if tcfg.max_steps else 0.0)
        if frac >= 1.0:
            break
        for g in opt.param_groups:
            g["lr"] = tcfg.lr * _lr_factor(frac)
        net.train()
        batch = next(batches)
        x, p = to_tensors(batch)
        p = jitter_gripper_opening(p, batch["predicates"], grasp_cols, opening_range, tcfg.gripper_jitter, gen)
        losses = state_losses(net(augment(x, tcfg, gen), p, geo), batch, cfg, tcfg, cal)
        opt.zero_grad(set_to_none=True)
        losses["loss"].backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        step += 1
        last = {k: float(v.detach()) for k, v in losses.items()}
        first_loss = last["loss"] if first_loss is None else first_loss
        if step % tcfg.eval_every == 0:
            net.eval()
            vloss = _val_loss(net, data, val, cfg, tcfg, geo, cal)
            history.append({"step": step, "minutes": round((time.perf_counter() - t0) / 60, 2),
                            "cpu_minutes": round((time.process_time() - cpu0) / 60, 2), "loss": last["loss"],
                            "val_loss": vloss})
            log(f"step {step} ({history[-1]['minutes']} min): loss {last['loss']:.4f} (px {last['px']:.3f}, heatmap "
                f"{last['heatmap']:.3f}, 3-D "
                f"{last['metric']:.3f}, predicates {last['predicates']:.4f}, yaw {last.get('yaw', 0.0):.4f}), "
                f"held-out {vloss:.4f}")
            if best is None or vloss < best[0]:
                best = (vloss, copy.deepcopy(net.state_dict()), step)
    minutes = (time.perf_counter() - t0) / 60.0
    cpu_minutes = (time.process_time() - cpu0) / 60.0
    net.eval()
    final_val = _val_loss(net, data, val, cfg, tcfg, geo, cal)
    if best is not None and best[0] < final_val:
        net.load_state_dict(best[1])
        best_step = best[2]
    else:
        best_step = step
    model.set_rest_heights(fit_rest_heights(cfg.objects, cfg.predicates, data.keypoints_3d[data.train_index],
                                            data.predicate_labels[data.train_index]))
    logits, labels, entropy = held_out_logits(model, data, val)
    before = evaluate(model, data, val)
    model.temperature = fit_temperature(logits, labels)
    model.entropy_p50 = np.percentile(entropy, 50, axis=0)
    model.entropy_p99 = np.percentile(entropy, 99, axis=0)
    after = evaluate(model, data, val)
    model.metrics = {"held_out": after, "held_out_before_temperature": {"ece": before["ece"]},
                     "split": "val" if len(data.val_index) else "train (no held-out episodes)"}
    summary = {"steps": step, "best_step": best_step, "train_minutes": round(minutes, 2),
               "train_cpu_minutes": round(cpu_minutes, 2), "budget_clock": tcfg.clock,
               "samples_per_s": round(step * tcfg.batch_size / max(minutes * 60, 1e-9), 1),
               "first_loss": first_loss, "last_loss": last.get("loss"), "temperature": model.temperature,
               "calibration_rms_px": data.calibration_rms_px, "held_out": after,
               "ece_before_temperature": before["ece"], "history": history,
               "frames": {"train": int(len(data.train_index)), "val": int(len(data.val_index))},
               "seeds": {"train": data.seeds(data.train_index), "val": data.seeds(data.val_index)},
               "parameters": int(sum(p.numel() for p in net.parameters()))}
    ckpt = model.save(out_dir / "checkpoint", command=command, extra={"summary": {k: v for k, v in summary.items()
                                                                                   if k != "history"}})
    summary["checkpoint"] = str(ckpt)
    return model, summary


@torch.no_grad()
def _val_loss(net, data: StateDataset, val: np.ndarray, cfg: StateModelConfig, tcfg: StateTrainConfig,
              geo: tuple[torch.Tensor, ...], cal: CameraCalibration, batch_size: int = 64) -> float:
    total, n = 0.0, 0
    for s in range(0, len(val), batch_size):
        batch = data.batch(val[s:s + batch_size])
        x, p = to_tensors(batch)
        total += float(state_losses(net(x, p, geo), batch, cfg, tcfg, cal)["loss"]) * len(x)
        n += len(x)
    return total / max(n, 1)
