"""Train the learned trace model on subgoal starts (:class:`~planner_vlm.learned.trace_data.TraceDataset`).

Losses per real trace point (the mask of ``subgoal.trace_3d``): Huber (delta 1 cm) on the point relative to the
gripper; for the yaw modulo a half turn, cross-entropy of the candidate nearest the target (winner takes all) and
Huber of that candidate's correction (delta 1 deg); cross-entropy of the whole turns, binary cross-entropy of the
gripper command; and, over all K3 rows, binary cross-entropy of the mask (how many points the
trace has). Inputs get Gaussian keypoint noise (``keypoint_noise_m``) every step, as large as the state model's
errors, and the gripper a random start and the carried object a random hold (``carry_height_jitter_m``,
``carry_offset_jitter_m``, ``carry_flip_fraction``, ``start_jitter_m``, ``repick_fraction``: :func:`start_jitter`).
AdamW, cosine learning rate, 1 torch thread: a minute or two on one core.
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

from planner_vlm.learned.trace_config import TraceModelConfig, TraceTrainConfig
from planner_vlm.learned.trace_data import TraceDataset
from planner_vlm.learned.trace_model import (
    TraceEnsembleNet,
    TraceModel,
    TraceNet,
    argument_objects,
    axial,
    decode_rows,
    event_row,
    event_slots,
    reorder_slots,
    trace_inputs,
)
from tandem.core.errors import ConfigError


def trace_targets(rows: np.ndarray, mask: np.ndarray, eef: np.ndarray, yaw: np.ndarray, refs: np.ndarray
                  ) -> dict[str, torch.Tensor]:
    """Training targets of traces ``rows (B, K, 5)`` / ``mask (B, K)`` seen from grippers at ``eef (B, 3)``, ``yaw
    (B,)`` with yaw references ``refs (B, 3)``: ``{"rel" (B, K, 3) m, "yaw_class" (B, K) the nearest candidate
    modulo a half turn, "yaw_correction" (B, K) rad from it, "turn" (B, K) in {0, 1, 2} (= -1, 0, +1 half turns),
    "grip" (B, K) 0/1, "mask" (B, K)}``."""
    d = rows[..., 3] - yaw[:, None]
    d_axial = axial(d)
    turn = np.clip(np.round((d - d_axial) / np.pi), -1, 1) + 1
    cand = np.concatenate([refs, refs + np.pi / 2], axis=1)  # (B, 6)
    gap = axial(d[..., None] - cand[:, None, :])  # (B, K, 6)
    cls = np.abs(gap).argmin(-1)
    t = lambda a, dt=torch.float32: torch.as_tensor(np.asarray(a), dtype=dt)  # noqa: E731
    return {"rel": t(rows[..., :3] - eef[:, None]), "yaw_class": t(cls, torch.int64),
            "yaw_correction": t(np.take_along_axis(gap, cls[..., None], -1)[..., 0]),
            "turn": t(turn, torch.int64), "grip": t(rows[..., 4] > 0), "mask": t(mask)}


def trace_losses(out: dict[str, torch.Tensor], tgt: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``{"loss", "points", "yaw", "turn", "gripper", "mask"}`` of one batch (see the module docstring)."""
    m = tgt["mask"]
    n = m.sum().clamp_min(1.0)
    pts = (F.huber_loss(out["rel"] * 100, tgt["rel"] * 100, delta=1.0, reduction="none").mean(-1) * m).sum() / n
    cls = F.cross_entropy(out["yaw_logits"].flatten(0, 1), tgt["yaw_class"].flatten(), reduction="none")
    corr = torch.take_along_dim(out["yaw_corrections"], tgt["yaw_class"][..., None], dim=-1)[..., 0]
    yaw = ((cls.view_as(m) + F.huber_loss(torch.rad2deg(corr), torch.rad2deg(tgt["yaw_correction"]), delta=1.0,
                                         reduction="none") * 0.1) * m).sum() / n
    turn = (F.cross_entropy(out["turn_logits"].flatten(0, 1), tgt["turn"].flatten(), reduction="none")
            * m.flatten()).sum() / n
    grip = (F.binary_cross_entropy_with_logits(out["gripper_logit"], tgt["grip"], reduction="none") * m).sum() / n
    mask = F.binary_cross_entropy_with_logits(out["mask_logit"], m)
    loss = pts + yaw + 0.2 * turn + 0.5 * grip + 0.5 * mask
    return {"loss": loss, "points": pts, "yaw": yaw, "turn": turn, "gripper": grip, "mask": mask}


def carried_objects(cfg: TraceModelConfig, rows: np.ndarray, args: np.ndarray) -> np.ndarray:
    """``int64 (B,)``: the index in ``cfg.objects`` of the object each subgoal start carries, -1 for none.

    A start carries when its trace's row 0 is closed (gripper command > 0: place, stack, insert) and its first
    argument is an object with keypoints.

    Args:
        rows: ``(B, K, 5)`` trace rows. args: ``(B, 2)`` argument indices into ``cfg.arg_names``, -1 for none.
    """
    held = argument_objects(cfg)[np.where(args[:, 0] >= 0, args[:, 0], len(cfg.arg_names))]
    return np.where(np.asarray(rows)[:, 0, 4] > 0, held, -1)


def start_jitter(cfg: TraceModelConfig, keypoints_3d: np.ndarray, proprio: np.ndarray, rows: np.ndarray,
                 mask: np.ndarray, args: np.ndarray, tcfg: TraceTrainConfig, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move the gripper at a subgoal's start, and what is tied to it, by a random offset (training augmentation).

    * A *carrying* sample (:func:`carried_objects`) moves up or down by ``U(-carry_height_jitter_m,
      carry_height_jitter_m)`` m together with the carried object's keypoints; the trace's row 0 moves with it, its
      other rows stay (an expert's release point does not depend on the height the carry starts from).
    * A share ``carry_flip_fraction`` of the carrying samples hold their object turned by a half turn about the
      gripper's vertical axis, and every carrying sample's object sits ``U(-carry_offset_jitter_m,
      carry_offset_jitter_m)`` m off in x and y in the fingers. The expert releases the object, not the gripper, over
      its target (a nut over its peg, a box over its cell, a cube over the one below): when the object's origin moves
      by ``delta`` against the gripper, the rows over the target move by ``-delta``; row 0 and the rows tied to it
      (within 1 mm of it in xy: a rise at the start) stay.
    * Any other sample (an open gripper: pick) moves by ``U(-start_jitter_m, start_jitter_m)`` m on each axis,
      objects unmoved; row 0 moves, and so do the rows tied to the start: those within 1 mm of row 0 in xy (a rise
      or a wrist turn above the start) move in xy, and in z too when they were within 1 mm of its height. The rows
      at the object stay.
    * A share ``repick_fraction`` of those free samples that have a grasp (a closed row after row 0) instead starts
      where a re-pick does, right above the grasp point: ``U(-repick_radius_m, repick_radius_m)`` in x and y and
      ``U(0, repick_height_m)`` above it. Rows tied to the start move in xy only (the expert turns the wrist after
      rising to its transit height).

    In the demonstrations every carry starts at the end of the expert's lift, with the object where the expert
    grasps it, and every pick where the last place ended; closed loop, a lift can end 3 cm short, a re-pick starts
    10 cm lower, right above the object, and a learned pick can turn a nut by a half turn more than the expert (9-13%
    of nut_assembly's held-out picks). Without the shifts, a 3 cm lower start put pick_place_bins' release points
    15-20 mm too low, a 10 cm lower start its grasp points 4 cm off in height (``benchmarks/trace_start_shift.py``),
    and a nut held the other way round was released with the gripper, not the nut, over the peg (nut_assembly,
    held-out seeds: every failed insert with the oracle verifier).

    Args:
        keypoints_3d: ``(B, O, 2, 3)`` m. proprio: ``(B, 8)``. rows: ``(B, K, 5)`` in the trace's order, with masks
            ``mask (B, K)``. args: ``(B, 2)`` argument indices into ``cfg.arg_names``, -1 for none. tcfg: the
            half-widths and shares above (:class:`~planner_vlm.learned.trace_config.TraceTrainConfig`).

    Returns:
        new ``(keypoints_3d, proprio, rows)`` (float64 copies).
    """
    kp, p, r = (np.array(a, np.float64, copy=True) for a in (keypoints_3d, proprio, rows))
    real_all = np.asarray(mask) > 0
    held = carried_objects(cfg, r, args)
    carrying = held >= 0
    carry = np.flatnonzero(carrying)
    dz = rng.uniform(-tcfg.carry_height_jitter_m, tcfg.carry_height_jitter_m, len(carry))
    p[carry, 2] += dz
    r[carry, 0, 2] += dz
    kp[carry, held[carry], :, 2] += dz[:, None]
    if len(carry) and (tcfg.carry_flip_fraction > 0 or tcfg.carry_offset_jitter_m > 0):
        eef_xy = p[carry, None, :2]  # (C, 1, 2)
        obj_xy = kp[carry, held[carry], :, :2]  # (C, 2, 2): origin and second keypoint
        flip = rng.random(len(carry)) < tcfg.carry_flip_fraction
        moved = np.where(flip[:, None, None], 2.0 * eef_xy - obj_xy, obj_xy)
        moved = moved + rng.uniform(-tcfg.carry_offset_jitter_m, tcfg.carry_offset_jitter_m, (len(carry), 1, 2))
        delta = moved[:, 0] - obj_xy[:, 0]  # (C, 2): the origin's move
        kp[carry, held[carry], :, :2] = moved
        tied = np.linalg.norm(r[carry, :, :2] - r[carry, :1, :2], axis=-1) < 1e-3  # (C, K), row 0 included
        shift = real_all[carry] & ~tied
        r[carry, :, :2] -= np.where(shift[..., None], delta[:, None], 0.0)
    free = np.flatnonzero(~carrying)
    d = rng.uniform(-tcfg.start_jitter_m, tcfg.start_jitter_m, (len(free), 3))
    start = r[free, :1, :3]  # (F, 1, 3)
    real = real_all[free]
    tied_xy = (np.linalg.norm(r[free, :, :2] - start[..., :2], axis=-1) < 1e-3) & real  # (F, K), row 0 included
    tied_z = tied_xy & (np.abs(r[free, :, 2] - start[..., 2]) < 1e-3)
    if tcfg.repick_fraction > 0 and len(free):
        closed = (r[free, 1:, 4] > 0) & real[:, 1:]
        repick = closed.any(1) & (rng.random(len(free)) < tcfg.repick_fraction)
        grasp = r[free, 1 + closed.argmax(1), :3]  # (F, 3): the first closed row
        above = np.stack([rng.uniform(-tcfg.repick_radius_m, tcfg.repick_radius_m, len(free)),
                          rng.uniform(-tcfg.repick_radius_m, tcfg.repick_radius_m, len(free)),
                          rng.uniform(0.0, tcfg.repick_height_m, len(free))], axis=1)
        d = np.where(repick[:, None], grasp + above - start[:, 0], d)
        tied_z &= ~repick[:, None]
    r[free, :, :2] += np.where(tied_xy[..., None], d[:, None, :2], 0.0)
    r[free, :, 2] += np.where(tied_z, d[:, None, 2], 0.0)
    r[free, 0, :3] = start[:, 0] + d
    p[free, :3] += d
    return kp, p, r


def _inputs(cfg: TraceModelConfig, data: TraceDataset, idx: np.ndarray, noise: float, rng: np.random.Generator,
            tcfg: TraceTrainConfig | None = None) -> tuple[dict[str, np.ndarray], dict[str, torch.Tensor]]:
    kp = data.keypoints_3d[idx].astype(np.float64)
    proprio, rows = data.proprio[idx].astype(np.float64), data.rows[idx].astype(np.float64)
    if tcfg is not None and tcfg.augments_starts:
        kp, proprio, rows = start_jitter(cfg, kp, proprio, rows, data.mask[idx], data.args[idx], tcfg, rng)
    if noise > 0:
        kp = kp + rng.normal(0.0, noise, kp.shape)
    x = trace_inputs(cfg, kp, proprio, data.skill[idx], data.args[idx])
    mask = data.mask[idx]
    if cfg.slot_order == "end":
        rows = reorder_slots(rows, mask)
    elif cfg.slot_order == "event":
        rows, mask = event_slots(rows, mask)
    return x, trace_targets(rows, mask, x["eef"].astype(np.float64),
                            x["yaw"].astype(np.float64), x["refs"].astype(np.float64))


def _forward(model: TraceModel, x: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return model.net(torch.from_numpy(x["features"]), torch.from_numpy(x["anchors"]), torch.from_numpy(x["refs"]))


@torch.no_grad()
def evaluate_traces(model: TraceModel, data: TraceDataset, index: np.ndarray, noise: float = 0.0,
                    seed: int = 0) -> dict[str, Any]:
    """Held-out metrics of ``model`` on samples ``index`` (inputs with ``noise`` m of keypoint noise).

    Returns:
        JSON-safe ``{"samples", "point_error_cm": {"median", "p90", "max"}, "last_point_error_cm_median",
        "yaw_error_deg": {"median", "p90"} (over real points, modulo a half turn), "turn_accuracy",
        "gripper_accuracy", "length_accuracy", "per_skill": {skill: point median cm}, "event_yaw_error_deg": {skill:
        {"median", "p90", "over_30" (share above 30 deg)}} (the yaw at the event row: a pick's close, a place's
        release, modulo a half turn)}``.
    """
    if len(index) == 0:
        return {"samples": 0}
    x, _ = _inputs(model.cfg, data, index, noise, np.random.default_rng(seed))
    rows, mask = decode_rows(_forward(model, x), x["eef"], x["yaw"], model.cfg, x["turn_matters"])
    true_rows, true_mask = data.rows[index], data.mask[index]
    both = (mask > 0) & (true_mask > 0)
    err = np.linalg.norm(rows[..., :3] - true_rows[..., :3], axis=-1) * 100.0
    dy = rows[..., 3] - true_rows[..., 3]
    axial_err = np.abs(np.degrees(axial(dy)))
    full = np.abs(np.degrees(np.arctan2(np.sin(dy), np.cos(dy))))
    last = np.maximum(true_mask.sum(1).astype(int) - 1, 0)
    r = np.arange(len(index))
    per_skill, event_yaw = {}, {}
    n_pred, n_true = mask.sum(1).astype(int), true_mask.sum(1).astype(int)
    ev_err = np.abs(np.degrees(axial(np.array([  # the yaw at the event row (a pick's close, a place's release)
        rows[i, event_row(rows[i], n_pred[i]), 3] - true_rows[i, event_row(true_rows[i], n_true[i]), 3]
        for i in range(len(index))]))))
    for s, name in enumerate(model.cfg.skills):
        sel = data.skill[index] == s
        if sel.any():
            per_skill[name] = float(np.median(err[sel][both[sel]]))
            event_yaw[name] = {"median": float(np.median(ev_err[sel])), "p90": float(np.percentile(ev_err[sel], 90)),
                               "over_30": float(np.mean(ev_err[sel] > 30.0))}
    return {
        "samples": int(len(index)),
        "point_error_cm": {"median": float(np.median(err[both])), "p90": float(np.percentile(err[both], 90)),
                           "max": float(err[both].max())},
        "last_point_error_cm_median": float(np.median(err[r, last])),
        "yaw_error_deg": {"median": float(np.median(axial_err[both])), "p90": float(np.percentile(axial_err[both], 90))},
        "turn_accuracy": float(np.mean(full[both] < 90.0)),
        "gripper_accuracy": float(np.mean(rows[..., 4][both] == true_rows[..., 4][both])),
        "length_accuracy": float(np.mean(mask.sum(1) == true_mask.sum(1))),
        "per_skill": per_skill,
        "event_yaw_error_deg": event_yaw,
    }


def train_trace_model(data: TraceDataset, cfg: TraceModelConfig, tcfg: TraceTrainConfig, out_dir: str | Path,
                      command: str = "", log: Any = print) -> tuple[TraceModel, dict[str, Any]]:
    """Train a trace model (``cfg.ensemble`` members one after another, member ``k`` with seed ``tcfg.seed + k``);
    write ``<out_dir>/checkpoint`` and return ``(model, summary)``.

    Returns:
        the model (each member at its best held-out snapshot) and a JSON-safe summary: steps (over all members),
        minutes, first/last loss, held-out metrics of the whole model with clean and with noisy keypoints, the
        checkpoint path, and per member (``"members"``, ensembles only) its seed, steps and best step; ``best_step``,
        ``first_loss`` and ``history`` are member 0's, ``last_loss`` the last member's.

    Raises:
        ConfigError: a vocabulary that differs from the dataset's.
    """
    if cfg.objects != data.objects:
        raise ConfigError(f"trace model objects {list(cfg.objects)} differ from the dataset's {list(data.objects)}")
    data.set_vocabulary(cfg.skills, cfg.arg_names)
    torch.manual_seed(tcfg.seed)
    model = TraceModel(cfg)
    members = list(model.net.members) if isinstance(model.net, TraceEnsembleNet) else [model.net]
    t0, cpu0 = time.perf_counter(), time.process_time()
    runs = []
    for k, net in enumerate(members):
        if len(members) > 1:
            log(f"ensemble member {k + 1} of {len(members)} (seed {tcfg.seed + k})")
        runs.append(_train_member(net, cfg, data, tcfg, tcfg.seed + k, log))
    model.net.eval()
    val = data.val_index if len(data.val_index) else data.train_index
    clean = evaluate_traces(model, data, val)
    noisy = evaluate_traces(model, data, val, noise=tcfg.keypoint_noise_m)
    model.metrics = {"held_out": clean, "held_out_noisy_keypoints": noisy, "keypoint_noise_m": tcfg.keypoint_noise_m,
                     "split": "val" if len(data.val_index) else "train (no held-out episodes)"}
    summary = {"steps": sum(r["steps"] for r in runs), "best_step": runs[0]["best_step"],
               "train_minutes": round((time.perf_counter() - t0) / 60, 2),
               "train_cpu_minutes": round((time.process_time() - cpu0) / 60, 2), "first_loss": runs[0]["first_loss"],
               "last_loss": runs[-1]["last_loss"], "held_out": clean, "held_out_noisy_keypoints": noisy,
               "samples": {"train": int(len(data.train_index)), "val": int(len(data.val_index))},
               "seeds": {"train": data.seeds(data.train_index), "val": data.seeds(data.val_index)},
               "history": runs[0]["history"]}
    if len(runs) > 1:
        summary["members"] = [{k: v for k, v in r.items() if k != "history"} for r in runs]
    ckpt = model.save(Path(out_dir) / "checkpoint", command=command,
                      extra={"summary": {k: v for k, v in summary.items() if k != "history"}})
    summary["checkpoint"] = str(ckpt)
    return model, summary


def _train_member(net: TraceNet, cfg: TraceModelConfig, data: TraceDataset, tcfg: TraceTrainConfig, seed: int,
                  log: Any) -> dict[str, Any]:
    """Train one network ``net`` (the model's, or an ensemble member) with ``seed`` for at most ``tcfg.steps`` steps
    and ``tcfg.max_minutes``, in place; keep its snapshot with the lowest held-out loss. Returns ``{"seed", "steps",
    "best_step", "first_loss", "last_loss", "best_val_loss", "history"}``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    member = TraceModel(cfg, net)
    x_all, _ = _inputs(cfg, data, data.train_index, 0.0, rng)
    net.feature_mean.copy_(torch.from_numpy(x_all["features"].mean(0)))
    net.feature_std.copy_(torch.from_numpy(np.maximum(x_all["features"].std(0), 1e-2)))
    opt = torch.optim.AdamW(net.parameters(), lr=tcfg.lr, weight_decay=tcfg.weight_decay)
    val = data.val_index if len(data.val_index) else data.train_index
    t0, step, first, last, history = time.perf_counter(), 0, None, {}, []
    best: tuple[float, dict[str, torch.Tensor], int] | None = None
    while step < tcfg.steps and time.perf_counter() - t0 < tcfg.max_minutes * 60:
        frac = step / tcfg.steps
        for g in opt.param_groups:
            g["lr"] = tcfg.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
        idx = rng.choice(data.train_index, size=tcfg.batch_size, replace=len(data.train_index) < tcfg.batch_size)
        x, tgt = _inputs(cfg, data, idx, tcfg.keypoint_noise_m, rng, tcfg)
        net.train()
        losses = trace_losses(_forward(member, x), tgt)
        opt.zero_grad(set_to_none=True)
        losses["loss"].backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        step += 1
        last = {k: float(v.detach()) for k, v in losses.items()}
        first = last["loss"] if first is None else first
        if step % tcfg.eval_every == 0 or step == tcfg.steps:
            net.eval()
            with torch.no_grad():
                xv, tv = _inputs(cfg, data, val, tcfg.keypoint_noise_m, np.random.default_rng(1))
                vloss = float(trace_losses(_forward(member, xv), tv)["loss"])
            history.append({"step": step, "loss": last["loss"], "val_loss": vloss})
            log(f"step {step}: loss {last['loss']:.4f} (points {last['points']:.3f} cm-Huber, yaw {last['yaw']:.4f}, "
                f"mask {last['mask']:.4f}), held-out {vloss:.4f}")
            if best is None or vloss < best[0]:
                best = (vloss, copy.deepcopy(net.state_dict()), step)
    if best is not None:
        net.load_state_dict(best[1])
    net.eval()
    return {"seed": seed, "steps": step, "best_step": best[2] if best else step, "first_loss": first,
            "last_loss": last.get("loss"), "best_val_loss": best[0] if best else None, "history": history}
