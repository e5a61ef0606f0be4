"""The learned trace model: (object keypoints in 3-D, proprio, subgoal) -> the subgoal's 3-D trace for the executor.

LoHo-Manip's manager predicts the next subgoal's trace from demonstrations; here a small MLP predicts the rows of
``subgoal.trace_3d`` (:class:`tandem.core.types.Trace3D`: points, yaw, gripper command, and how many points) from
what the state model reads off the image: two keypoints per object in metres (:mod:`planner_vlm.learned.state_model`),
the robot's proprio and the subgoal's skill and arguments as one-hots over the task's vocabulary. It trains on the
low-dimensional datasets in a minute or two (:mod:`planner_vlm.learned.trace_train`), with noise on the keypoints
as large as the state model's errors.

Geometry is built in, so that the network learns a few weights instead of a workspace (the lesson of issue 11:
geometry beats memorising):

* **Points as weighted anchors.** Each trace point, relative to the gripper, is ``sum_a W_ka * (anchor_a - eef) +
  b_k`` with per-axis weights ``W`` and an offset ``b`` predicted by the MLP; the anchors are the first argument's
  origin keypoint (the object to pick), the second argument's (the object to stack on) and the world origin (fixed
  targets: bins, pegs). "Above the cube" is ``W = 1`` on the first anchor and ``b = +10 cm`` in z; a release point
  over another cube carrying a held one is ``+1`` on the second anchor and ``-1`` on the first. Translation
  equivariance and millimetre accuracy come for free.
* **Yaw against references, up to symmetry, as a decision.** The gripper is symmetric under a half turn, so the
  yaw's difference ``d`` to the gripper's yaw now is first predicted modulo a half turn: a classifier picks one of
  six candidates, each of three references (the gripper itself and the two arguments' yaws, from their keypoint
  pair, taken modulo the object's symmetry ``2 pi / m`` at the representative nearest the gripper's yaw) plus 0 or
  a quarter turn (a cube is grasped across either pair of faces), and a bounded correction (within
  ``cfg.yaw_correction_deg``, 45 deg by default) is
  regressed for it. A classification picks one mode where a regression would average two grasps into a diagonal
  one. A second classifier adds the whole half turns (``k pi``, ``k in {-1, 0, 1}``) the expert takes to keep
  the wrist off its limit.
* **The trace starts at the gripper** (the convention of the oracle traces: row 0 is the grip site and yaw now).

With ``cfg.ensemble > 1`` the model is a deep ensemble (Lakshminarayanan et al. 2017): that many networks, trained
with different seeds, whose outputs are averaged before decoding (:class:`TraceEnsembleNet`); a member's one-off
error (a yaw candidate, a turn, a point blended from the wrong anchor) is outvoted by the others.

Checkpoints: a directory with ``model.safetensors``, ``config.json`` (``{"format": "tandem-trace-model/1", "model":
TraceModelConfig, "metrics"}``) and ``command.txt``, never pickle; an ensemble's weights are its members' under
``members.<k>.``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import Tensor, nn

from planner_vlm.learned.checkpoint_files import load_matching_weights, read_checkpoint_config
from planner_vlm.learned.proprio import OPENING_FEATURE, gripper_yaw, proprio_features
from planner_vlm.learned.trace_config import TraceModelConfig
from tandem.core.errors import CheckpointError, ConfigError, UnknownNameError, UnknownSkillError
from tandem.core.types import Trace3D

FORMAT = "tandem-trace-model/1"
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
COMMAND = "command.txt"
#: Anchors of the point decoding: argument 0, argument 1, world origin.
N_ANCHORS = 3
#: Yaw references: the gripper, argument 0, argument 1.
N_REFS = 3
#: Yaw candidates: each reference plus 0 or a quarter turn.
N_YAW = 2 * N_REFS
#: Outputs per trace point: anchor weights (3 x 3), offset (3), yaw candidate logits (6), corrections (6), turn
#: logits (3), gripper logit (1), mask logit (1).
POINT_OUTPUTS = N_ANCHORS * 3 + 3 + 2 * N_YAW + 3 + 1 + 1
#: Offsets are predicted in units of this many metres.
OFFSET_SCALE_M = 0.1
#: Per-object input features: origin relative to the gripper (3), origin height (1), canonical yaw difference as
#: (d, sin m d, cos m d) (3).
OBJECT_FEATURES = 7


def object_yaw_offsets(keypoints_3d: np.ndarray, yaw_now: float | np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Each object's yaw relative to the gripper's, modulo its symmetry: ``(..., O)`` rad in ``[-pi/m, pi/m)``.

    Args:
        keypoints_3d: ``(..., O, 2, 3)`` m (origin, x-axis point) per object.
        yaw_now: the gripper's yaw (rad), broadcastable to ``(...)``.
        orders: ``(O,)`` symmetry orders ``m``.
    """
    d = keypoints_3d[..., 1, :2] - keypoints_3d[..., 0, :2]
    theta = np.arctan2(d[..., 1], d[..., 0])
    period = 2.0 * np.pi / orders
    rel = theta - np.asarray(yaw_now)[..., None]
    return (rel + period / 2) % period - period / 2


def argument_objects(cfg: TraceModelConfig) -> np.ndarray:
    """``int64 (A + 1,)``: for each name of ``cfg.arg_names`` its index in ``cfg.objects``, -1 for a name that is
    not an object (a bin, a peg); the last entry, -1, stands for "no argument" (argument index -1)."""
    return np.array([cfg.objects.index(a) if a in cfg.objects else -1 for a in cfg.arg_names] + [-1], np.int64)


def encode_subgoal(cfg: TraceModelConfig, skill: str, args: tuple[str, ...]) -> tuple[int, np.ndarray]:
    """``(skill index, argument indices (2,) with -1 for none)`` of a subgoal (at most 2 arguments are used).

    Raises:
        UnknownSkillError / UnknownNameError: a skill or an argument outside the vocabulary.
    """
    if skill not in cfg.skills:
        raise UnknownSkillError(skill, list(cfg.skills))
    idx = np.full(2, -1, np.int64)
    for j, a in enumerate(tuple(args)[:2]):
        if a not in cfg.arg_names:
            raise UnknownNameError("subgoal argument", a, list(cfg.arg_names))
        idx[j] = cfg.arg_names.index(a)
    return cfg.skills.index(skill), idx


def trace_inputs(cfg: TraceModelConfig, keypoints_3d: np.ndarray, proprio: np.ndarray, skill: np.ndarray,
                 args: np.ndarray) -> dict[str, np.ndarray]:
    """The model's inputs for a batch of subgoal starts (the one featurisation of training and inference).

    Args:
        cfg: the vocabulary.
        keypoints_3d: ``(B, O, 2, 3)`` m, world frame, in ``cfg.objects`` order (or ``(B, O * 6)``).
        proprio: ``(B, 8)`` as :data:`tandem.core.types.PROPRIO_LAYOUT`.
        skill: ``(B,)`` skill indices. args: ``(B, 2)`` argument indices, -1 for none (:func:`encode_subgoal`).

    Returns:
        ``{"features": (B, F), "anchors": (B, 3, 3) m (anchor - eef), "refs": (B, 3) rad, "eef": (B, 3),
        "yaw": (B,) rad}`` (float32), and ``"turn_matters": (B,)`` bool: the first argument is an object that a half
        turn does not map onto itself (odd symmetry order, e.g. a nut; see :func:`coherent_turns`).

    Raises:
        ValueError: keypoints of the wrong size or non-finite inputs.
    """
    o = len(cfg.objects)
    kp = np.asarray(keypoints_3d, np.float64)
    b = len(kp)
    kp = kp.reshape(b, o, 2, 3)
    if not np.all(np.isfinite(kp)):
        raise ValueError("trace model keypoints contain NaN or inf")
    p = np.asarray(proprio, np.float64).reshape(b, -1)
    eef, yaw = p[:, :3], gripper_yaw(p).reshape(b)
    orders = np.array([cfg.symmetry(x) for x in cfg.objects], np.float64)
    dyaw = object_yaw_offsets(kp, yaw, orders)  # (B, O)
    per_obj = np.concatenate([kp[:, :, 0] - eef[:, None], kp[:, :, 0, 2:3], dyaw[..., None],
                              np.sin(orders * dyaw)[..., None], np.cos(orders * dyaw)[..., None]], axis=2)
    obj_of_arg = argument_objects(cfg)
    args = np.asarray(args, np.int64).reshape(b, 2)
    rows = np.arange(b)
    anchors, refs, slots = np.zeros((b, N_ANCHORS, 3)), np.zeros((b, N_REFS)), []
    anchors[:, 2] = -eef
    for j in range(2):
        onehot = np.zeros((b, len(cfg.arg_names) + 1))
        onehot[rows, np.where(args[:, j] >= 0, args[:, j], len(cfg.arg_names))] = 1.0
        obj = obj_of_arg[np.where(args[:, j] >= 0, args[:, j], len(cfg.arg_names))]
        has = obj >= 0
        safe = np.where(has, obj, 0)
        slots += [onehot[:, :-1], np.where(has[:, None], per_obj[rows, safe], 0.0)]
        anchors[:, j] = np.where(has[:, None], kp[rows, safe, 0] - eef, 0.0)
        refs[:, 1 + j] = np.where(has, dyaw[rows, safe], 0.0)
    skill_hot = np.zeros((b, len(cfg.skills)))
    skill_hot[rows, np.asarray(skill, np.int64).reshape(b)] = 1.0
    own = proprio_features(p[:, :8])
    if not cfg.use_gripper_opening:
        own[:, OPENING_FEATURE] = 0.0  # see TraceModelConfig.use_gripper_opening
    feats = np.concatenate([own, np.sin(yaw)[:, None], np.cos(yaw)[:, None], skill_hot, *slots,
                            per_obj.reshape(b, -1)], axis=1)
    obj0 = obj_of_arg[np.where(args[:, 0] >= 0, args[:, 0], len(cfg.arg_names))]
    turn_matters = (obj0 >= 0) & (orders[np.maximum(obj0, 0)] % 2 == 1)
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    return {"features": f32(feats), "anchors": f32(anchors), "refs": f32(refs), "eef": f32(eef), "yaw": f32(yaw),
            "turn_matters": turn_matters}


def feature_dim(cfg: TraceModelConfig) -> int:
    """Length of :func:`trace_inputs`' feature vector."""
    return 10 + 2 + len(cfg.skills) + 2 * (len(cfg.arg_names) + OBJECT_FEATURES) + OBJECT_FEATURES * len(cfg.objects)


class TraceNet(nn.Module):
    """MLP from the features to per-point decoding parameters, and the decoding (see the module docstring)."""

    def __init__(self, cfg: TraceModelConfig):
        super().__init__()
        self.cfg = cfg
        f = feature_dim(cfg)
        layers: list[nn.Module] = []
        width = f
        for _ in range(cfg.layers):
            layers += [nn.Linear(width, cfg.hidden), nn.SiLU()]
            width = cfg.hidden
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(width, cfg.trace_len * POINT_OUTPUTS)
        nn.init.zeros_(self.out.bias)
        nn.init.normal_(self.out.weight, std=1e-3)
        self.register_buffer("feature_mean", torch.zeros(f))
        self.register_buffer("feature_std", torch.ones(f))

    def forward(self, features: Tensor, anchors: Tensor, refs: Tensor) -> dict[str, Tensor]:
        """Decode a batch.

        Args:
            features: ``(B, F)``. anchors: ``(B, 3, 3)`` m relative to the gripper. refs: ``(B, 3)`` rad.

        Returns:
            ``{"rel": (B, K, 3) m point - eef, "yaw_logits": (B, K, 6), "yaw_candidates": (B, 6) rad,
            "yaw_corrections": (B, K, 6) rad, "turn_logits": (B, K, 3), "gripper_logit": (B, K), "mask_logit":
            (B, K)}``; row 0 is the gripper (rel 0, candidate 0 without correction).
        """
        b = len(features)
        h = self.body((features - self.feature_mean) / self.feature_std)
        o = self.out(h).view(b, self.cfg.trace_len, POINT_OUTPUTS)
        w = o[..., : 3 * N_ANCHORS].view(b, -1, N_ANCHORS, 3)
        off = o[..., 3 * N_ANCHORS: 3 * N_ANCHORS + 3] * OFFSET_SCALE_M
        rel = (w * anchors[:, None]).sum(2) + off
        rel = torch.cat([torch.zeros_like(rel[:, :1]), rel[:, 1:]], dim=1)
        i = 3 * N_ANCHORS + 3
        bound = math.radians(self.cfg.yaw_correction_deg)
        logits, corr = o[..., i:i + N_YAW], torch.tanh(o[..., i + N_YAW:i + 2 * N_YAW]) * bound
        first = torch.full((b, 1, N_YAW), -20.0)
        first[..., 0] = 20.0
        logits = torch.cat([first, logits[:, 1:]], dim=1)
        corr = torch.cat([torch.zeros_like(corr[:, :1]), corr[:, 1:]], dim=1)
        cand = torch.cat([refs, refs + math.pi / 2], dim=1)  # (B, 6): references, then each + a quarter turn
        j = i + 2 * N_YAW
        turn = torch.cat([torch.tensor([-20.0, 20.0, -20.0]).expand(b, 1, 3), o[:, 1:, j:j + 3]], dim=1)
        mask = torch.cat([torch.full((b, 1), 20.0), o[:, 1:, j + 4]], dim=1)
        return {"rel": rel, "yaw_logits": logits, "yaw_candidates": cand, "yaw_corrections": corr,
                "turn_logits": turn, "gripper_logit": o[..., j + 3], "mask_logit": mask}


class TraceEnsembleNet(nn.Module):
    """``cfg.ensemble`` :class:`TraceNet` members whose outputs are averaged (a deep ensemble, Lakshminarayanan et al.
    2017): the points relative to the gripper, the yaw corrections and every logit (a soft vote of the yaw
    candidate, the turns, the gripper and the length). The yaw candidates are the same for every member."""

    def __init__(self, cfg: TraceModelConfig):
        super().__init__()
        self.cfg = cfg
        self.members = nn.ModuleList([TraceNet(cfg) for _ in range(cfg.ensemble)])

    def forward(self, features: Tensor, anchors: Tensor, refs: Tensor) -> dict[str, Tensor]:
        """As :meth:`TraceNet.forward` (same shapes), averaged over the members."""
        outs = [m(features, anchors, refs) for m in self.members]
        return {k: outs[0][k] if k == "yaw_candidates" else torch.stack([o[k] for o in outs]).mean(0)
                for k in outs[0]}


def build_net(cfg: TraceModelConfig) -> TraceNet | TraceEnsembleNet:
    """A fresh network for ``cfg``: one :class:`TraceNet`, or a :class:`TraceEnsembleNet` when ``cfg.ensemble > 1``.
    Raises nothing (``cfg`` is validated when built)."""
    return TraceEnsembleNet(cfg) if cfg.ensemble > 1 else TraceNet(cfg)


def axial(angle: np.ndarray | Tensor) -> np.ndarray | Tensor:
    """``angle`` (rad) wrapped modulo a half turn into ``[-pi/2, pi/2)``."""
    return (angle + math.pi / 2) % math.pi - math.pi / 2


def reorder_slots(rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows ``(B, K, C)`` of traces with masks ``(B, K)`` (a contiguous run of real rows from row 0) with each
    trace's rows ``1 .. n-1`` reversed, the padding left in place: the map between trace rows and the output slots
    of ``slot_order="end"`` (:class:`~planner_vlm.learned.trace_config.TraceModelConfig`). Its own inverse."""
    out = np.array(rows, copy=True)
    n = np.asarray(mask).sum(1).astype(int)
    for b, m in enumerate(n):
        if m > 2:
            out[b, 1:m] = rows[b, 1:m][::-1]
    return out


def event_row(rows: np.ndarray, n: int) -> int:
    """The event row of a trace's ``n`` real rows ``rows (>= n, 5)``: the first row ``k >= 1`` whose gripper
    command (column 4, sign) differs from row 0's (a pick's close, a place's release); ``n - 1`` when none does."""
    g = np.asarray(rows)[:n, 4] > 0
    hit = np.flatnonzero(g[1:] != g[0])
    return int(hit[0]) + 1 if len(hit) else max(n - 1, 0)


def event_slots(rows: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Traces ``rows (B, K, C)`` with masks ``(B, K)`` (a contiguous run of real rows from row 0) laid out in the slots of
    ``slot_order="event"`` (:class:`~planner_vlm.learned.trace_config.TraceModelConfig`): slot 0 is row 0, the event
    row (:func:`event_row`) is slot ``K // 2`` and row ``r`` slot ``K // 2 + r - event``.

    Returns:
        ``(slots (B, K, C), slot_mask (B, K))``; the real slots are one contiguous run around ``K // 2`` (and slot 0).
        Rows that fall outside slots ``1 .. K-1`` (more than ``K // 2 - 1`` before the event or ``K - 1 - K // 2``
        after it) are dropped.
    """
    rows, mask = np.asarray(rows), np.asarray(mask)
    k, c = rows.shape[1], rows.shape[1] // 2
    slots, slot_mask = np.zeros_like(rows), np.zeros(mask.shape, np.float32)
    for b, n in enumerate(mask.sum(1).astype(int)):
        if n < 1:
            continue
        slots[b, 0], slot_mask[b, 0] = rows[b, 0], 1.0
        e = event_row(rows[b], n)
        for r in range(1, n):
            s = c + r - e
            if 1 <= s < k:
                slots[b, s], slot_mask[b, s] = rows[b, r], 1.0
    return slots, slot_mask


def rows_from_event_slots(slots: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`event_slots` for decoded outputs: ``slots (B, K, C)`` and per-slot validity ``valid (B, K)``
    (bool) to ``(rows (B, K, C), mask (B, K))`` in the trace's order: row 0, then the contiguous run of valid slots
    around slot ``K // 2`` (none when that slot is not valid). Rows past the mask repeat the last real row."""
    slots, valid = np.asarray(slots), np.asarray(valid, bool)
    k, c = slots.shape[1], slots.shape[1] // 2
    rows, mask = np.repeat(slots[:, :1], k, axis=1), np.zeros(valid.shape, np.float32)
    for b in range(len(slots)):
        picked = [0]
        if valid[b, c]:
            lo, hi = c, c
            while lo - 1 >= 1 and valid[b, lo - 1]:
                lo -= 1
            while hi + 1 < k and valid[b, hi + 1]:
                hi += 1
            picked += list(range(lo, hi + 1))
        rows[b, :len(picked)] = slots[b, picked]
        rows[b, len(picked):] = slots[b, picked[-1]]
        mask[b, :len(picked)] = 1.0
    return rows, mask


def _nearest_between(rows: np.ndarray, start: float, end: float, settle_at_end: bool = True) -> np.ndarray:
    """Each yaw of ``rows (R,)`` rad moved by whole half turns to its representative nearest the interval between
    ``start`` and ``end`` (ties: the one nearest ``end``); with ``settle_at_end``, rows within 0.2 rad of ``end``
    modulo a half turn go to their representative nearest ``end``. The other rows, the turn's intermediate points,
    are then clipped into the interval: a row that no half turn brings inside it belongs to another grasp of an
    object symmetric under a quarter turn (pick_place_bins' bread from a start 10 cm lower: 1.56 -> 0.42 -> 2.12
    rad, out and back), and the wrist turns once, in one direction."""
    ks = np.arange(-3, 4) * np.pi
    lo, hi = sorted((start, end))
    cand = rows[:, None] + ks  # (R, 7)
    score = np.maximum(np.maximum(lo - cand, cand - hi), 0.0) + 1e-6 * np.abs(cand - end)
    near_end = np.abs(axial(rows - end)) < 0.2 if settle_at_end else np.zeros(len(rows), bool)
    score = np.where(near_end[:, None], np.abs(cand - end), score)
    chosen = np.take_along_axis(cand, score.argmin(1)[:, None], 1)[:, 0]
    return np.where(near_end, chosen, np.clip(chosen, lo, hi))


def coherent_turns(yaw: np.ndarray, mask: np.ndarray, gripper: np.ndarray | None = None,
                   turn_matters: np.ndarray | None = None) -> np.ndarray:
    """Yaws ``(B, K)`` rad of traces with masks ``(B, K)`` made one turn of the wrist, by whole half turns.

    The turn's end is the last point's yaw modulo a half turn, at the representative that most of the settled rows
    (``1 .. n-1`` within 0.2 rad of it modulo a half turn: not the intermediate points of a turn) lie nearest to (ties:
    the smallest turn from row 0, the gripper's yaw now); every settled row then moves to its representative
    nearest that end, and every other row to its representative nearest the interval between row 0's yaw and that
    end (ties: the one nearest the end).

    A pick turns the wrist once, in one direction, through intermediate points, and keeps the yaw from the hover to
    the lift; per-row half-turn decisions turned it out and back (1.6 -> 3.13 -> 0.05 rad) or by a half turn at the
    grasp (1.32 -> 4.46 rad between the grasp and the close, which drove the arm to its wrist limit and away), which
    the expert never does and the executor was never shown. The gripper is symmetric under a half turn, so no settled
    row's grasp changes; an intermediate point that no half turn brings between row 0 and the end is clipped into
    that interval (:func:`_nearest_between`).

    An object in the fingers is not always: a nut turned by a half turn has its handle on the other side. Where
    ``turn_matters[b]`` (``(B,)`` bool: the pick's object is not symmetric under a half turn) and the trace starts
    open and closes at row ``c`` (``gripper (B, K)``: command > 0), the rule above makes only rows ``0 .. c`` one
    turn; after ``c`` the last row keeps the network's own yaw relative to row ``c`` (it moves by the half turns row
    ``c`` moved), and each row between goes to its representative nearest that turn's interval. Applied to the
    whole trace, the rule turns a lifted nut the other way round far more often than the network's own turns, and a
    nut held with its handle away from the robot is not inserted."""
    out = np.array(yaw, np.float64, copy=True)
    n = np.asarray(mask).sum(1).astype(int)
    ks = np.arange(-3, 4) * np.pi
    for b, m in enumerate(n):
        if m < 2:
            continue
        raw = out[b].copy()
        last = m - 1
        if turn_matters is not None and gripper is not None and turn_matters[b] and gripper[b, 0] <= 0:
            closed = np.flatnonzero(np.asarray(gripper[b, 1:m]) > 0)
            if len(closed):
                last = int(closed[0]) + 1  # the close: one turn up to here
        reps = out[b, last] + ks  # (7,)
        rows = out[b, 1:last + 1]
        settled = rows[np.abs(axial(rows - out[b, last])) < 0.2]
        votes = np.bincount(np.abs(settled[:, None] - reps).argmin(1), minlength=len(ks))
        best = np.flatnonzero(votes == votes.max())
        end = reps[best[np.abs(reps[best] - out[b, 0]).argmin()]]
        out[b, 1:last + 1] = _nearest_between(rows, out[b, 0], end)
        if last < m - 1:  # after the close: the network's own turn, the rows between kept within it
            end2 = raw[m - 1] + (out[b, last] - raw[last])
            out[b, last + 1:m - 1] = _nearest_between(raw[last + 1:m - 1], out[b, last], end2, settle_at_end=False)
            out[b, m - 1] = end2
    return out


def decode_rows(out: dict[str, Tensor], eef: np.ndarray, yaw: np.ndarray, cfg: TraceModelConfig | None = None,
                turn_matters: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(rows (B, K, 5), mask (B, K))`` of :data:`tandem.core.dataset_schema.TRACE_3D_COLUMNS` from network
    outputs, the gripper positions ``eef (B, 3)`` and yaws ``yaw (B,)``; the mask is the first contiguous run of
    points with ``sigmoid(mask_logit) >= 0.5`` (at least row 0). With ``cfg.slot_order="end"`` the slots are put
    back in the trace's order (:func:`reorder_slots`); with ``"event"`` the trace is row 0 and the run of valid slots
    around the event slot (:func:`rows_from_event_slots`); with ``cfg.coherent_turns`` the yaws made one turn
    (:func:`coherent_turns`, given ``turn_matters (B,)`` of :func:`trace_inputs`); without ``cfg``, neither."""
    rel = out["rel"].detach().double().numpy()
    pick = out["yaw_logits"].detach().argmax(-1).numpy()[..., None]  # (B, K, 1)
    cand = np.broadcast_to(out["yaw_candidates"].detach().double().numpy()[:, None], pick.shape[:2] + (N_YAW,))
    corr = out["yaw_corrections"].detach().double().numpy()
    d_axial = axial(np.take_along_axis(cand, pick, -1)[..., 0] + np.take_along_axis(corr, pick, -1)[..., 0])
    d = d_axial + (out["turn_logits"].detach().argmax(-1).numpy() - 1) * np.pi
    rows = np.concatenate([rel + np.asarray(eef, np.float64)[:, None], (np.asarray(yaw, np.float64)[:, None] + d)[..., None],
                           np.where(out["gripper_logit"].detach().numpy() >= 0, 1.0, -1.0)[..., None]], axis=-1)
    valid = out["mask_logit"].detach().numpy() >= 0
    valid[:, 0] = True
    if cfg is not None and cfg.slot_order == "event":
        rows, mask = rows_from_event_slots(rows, valid)
    else:
        mask = np.cumprod(valid, axis=1).astype(np.float32)
    if cfg is not None and cfg.slot_order == "end":
        rows = reorder_slots(rows, mask)
    if cfg is not None and cfg.coherent_turns:
        rows[..., 3] = coherent_turns(rows[..., 3], mask, rows[..., 4], turn_matters)
    return rows.astype(np.float32), mask


class TraceModel:
    """A trained trace model: predict a subgoal's :class:`~tandem.core.types.Trace3D` (see the module docstring).

    Args:
        cfg: vocabulary and network. net: the network (fresh when None: :func:`build_net`, an ensemble when
            ``cfg.ensemble > 1``). metrics: held-out metrics (JSON-safe).
    """

    def __init__(self, cfg: TraceModelConfig, net: TraceNet | TraceEnsembleNet | None = None,
                 metrics: dict[str, Any] | None = None):
        self.cfg = cfg
        self.net = net if net is not None else build_net(cfg)
        self.net.eval()
        self.metrics = dict(metrics or {})
        self.command = ""

    @torch.no_grad()
    def predict(self, keypoints_3d: np.ndarray, proprio: np.ndarray, skill: str, args: tuple[str, ...]) -> Trace3D:
        """The trace of ``skill(*args)`` from this state.

        Args:
            keypoints_3d: ``(O, 2, 3)`` m, world frame, objects in ``cfg.objects`` order.
            proprio: ``(8,)`` (grip-site position m, quaternion wxyz, gripper opening m).
            skill, args: the subgoal.

        Returns:
            the trace: row 0 is the grip site now; points in m (world frame), yaw in rad continuous from the
            gripper's current yaw, gripper -1 open / +1 closed.

        Raises:
            UnknownSkillError / UnknownNameError: from :func:`encode_subgoal`. ValueError: from :func:`trace_inputs`.
        """
        s, a = encode_subgoal(self.cfg, skill, tuple(args))
        x = trace_inputs(self.cfg, np.asarray(keypoints_3d)[None], np.asarray(proprio)[None], np.array([s]), a[None])
        out = self.net(torch.from_numpy(x["features"]), torch.from_numpy(x["anchors"]), torch.from_numpy(x["refs"]))
        rows, mask = decode_rows(out, x["eef"], x["yaw"], self.cfg, x["turn_matters"])
        n = int(mask[0].sum())
        return Trace3D(points=rows[0, :n, :3], yaw=rows[0, :n, 3], gripper=rows[0, :n, 4])

    def save(self, path: str | Path, command: str = "", extra: dict[str, Any] | None = None) -> Path:
        """Write the checkpoint directory ``path``; returns it."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sd = {k: v.detach().cpu().contiguous().clone() for k, v in self.net.state_dict().items()}
        save_file(sd, str(path / WEIGHTS), metadata={"format": FORMAT})
        (path / CONFIG).write_text(json.dumps({"format": FORMAT, "model": self.cfg.to_dict(), "metrics": self.metrics,
                                               "extra": extra or {}}, indent=2))
        (path / COMMAND).write_text((command or self.command or "(unknown)").strip() + "\n")
        return path

    @classmethod
    def from_checkpoint(cls, path: str | Path) -> TraceModel:
        """Load a checkpoint directory.

        Raises:
            CheckpointError: a missing file, another format, an invalid config or mismatched weights.
        """
        path = Path(path)
        raw = read_checkpoint_config(path, CONFIG, WEIGHTS, FORMAT, "trace model")
        try:
            cfg = TraceModelConfig.from_dict(raw["model"])
        except (ConfigError, KeyError, TypeError) as e:
            raise CheckpointError(f"{path}: invalid trace model config: {e}") from e
        net = build_net(cfg)
        load_matching_weights(net, path / WEIGHTS, "trace model")
        model = cls(cfg, net, metrics=raw.get("metrics"))
        model.command = (path / COMMAND).read_text().strip() if (path / COMMAND).is_file() else ""
        return model
