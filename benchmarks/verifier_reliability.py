"""The learned verifier on held-out attempts: F1, how often it is uncertain, and its reliability diagram.

For each subgoal attempt of the held-out episodes of a tandem image dataset (its collector journal gives the
signature, frames and outcome), the learned state model reads the attempt's last frame, where the agent verifies,
and gives ``p`` of the subgoal's predicate (``grasped(x)`` for ``pick(x)``, ``on(x,y)`` for ``stack(x,y)``...). As
:class:`planner_vlm.learned.learned_verifier.LearnedVerifier`: success iff ``p >= 0.5``, confidence ``max(p, 1 - p)``
times the confidence with which the model located the subgoal's objects
(:func:`~planner_vlm.learned.learned_verifier.located_confidence`), uncertain below ``--confidence``; an uncertain
verdict is re-checked on the frame ``--recheck-steps`` later (as the agent does, up to ``--rechecks`` times, while the
frame is in the episode) and counts as a failure if still uncertain. The label is the attempt's outcome in the journal (the oracle verifier's
verdict when the data was collected).

Also the per-frame reliability of every predicate on every held-out frame, before and after the temperature.

Writes ``<out>/verifier_reliability.json`` and ``<out>/verifier_reliability.png``.

Usage:
    python benchmarks/verifier_reliability.py --checkpoint outputs/train_state/<run>/checkpoint \\
        --dataset datasets/stack_three_84 --val-episodes 10 --out outputs/benchmarks/verifier
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def run(checkpoint: str, dataset: str, val_episodes: int, confidence: float, rechecks: int, recheck_steps: int,
        out: Path) -> dict[str, Any]:
    import torch

    from planner_vlm.learned.learned_verifier import located_confidence
    from planner_vlm.learned.probability_calibration import f1_score
    from planner_vlm.learned.state_data import StateDataset
    from planner_vlm.learned.state_model import StateModel
    from planner_vlm.learned.trace_data import parse_signature
    from tandem.core.vocabulary import SKILL_PREDICATES
    from tandem.evaluation.reliability import reliability_plot

    torch.set_num_threads(1)
    model = StateModel.from_checkpoint(checkpoint)
    journal = json.loads((Path(dataset) / "meta" / "tandem_collect.json").read_text())
    all_eps = sorted(int(e["episode_index"]) for e in journal["episodes"])
    held = all_eps[-val_episodes:] if val_episodes else all_eps
    t0 = time.perf_counter()
    data = StateDataset(dataset, camera=model.cfg.camera, episodes=held)
    model.set_calibration(data.calibration)
    row_of = {(int(e), int(f)): i for i, (e, f) in enumerate(zip(data.episode, data.frame))}
    # per-frame, every predicate; each frame read once (the attempts below judge the same readings)
    logits, labels, states = [], [], []
    for s in range(0, len(data), 64):
        idx = np.arange(s, min(s + 64, len(data)))
        o = model.predict_arrays(data.images[idx], data.proprio[idx])
        logits.append(o["logits"])
        labels.append(data.predicate_labels[idx])
        states += [model.scene_state(o, j) for j in range(len(idx))]
    lg, lb = np.concatenate(logits), np.concatenate(labels)
    sig = lambda z, t: 1.0 / (1.0 + np.exp(-z / t))  # noqa: E731

    def judge(i: int, pred: str, args: tuple[str, ...]) -> tuple[float, float]:
        p = states[i].probability(pred)
        return p, max(p, 1 - p) * located_confidence(states[i], args)[0]

    attempts = []
    for rec in journal["episodes"]:
        e = int(rec["episode_index"])
        if e not in held:
            continue
        for att in rec.get("attempts", []):
            skill, args = parse_signature(att["signature"])
            if skill not in SKILL_PREDICATES:
                continue
            pred = SKILL_PREDICATES[skill].format(*args)
            last = int(att["to_frame"]) - 1
            if (e, last) not in row_of or pred not in model.cfg.predicates:
                continue
            p, conf = judge(row_of[(e, last)], pred, args)
            first = {"p": p, "confidence": conf, "uncertain": conf < confidence}
            n, frame = 0, last
            while conf < confidence and n < rechecks and (e, frame + recheck_steps) in row_of:
                frame += recheck_steps
                n += 1
                p, conf = judge(row_of[(e, frame)], pred, args)
            attempts.append({"episode": e, "signature": att["signature"], "label": bool(att.get("success")),
                             "first": first, "p": p, "confidence": conf, "rechecks": n,
                             "uncertain": conf < confidence})
    y = np.array([a["label"] for a in attempts])
    first_pred = np.array([a["first"]["p"] >= 0.5 and not a["first"]["uncertain"] for a in attempts])
    final_pred = np.array([a["p"] >= 0.5 and not a["uncertain"] for a in attempts])
    decided = np.array([not a["uncertain"] for a in attempts])
    curves = {"frames, T=1": (sig(lg, 1.0).reshape(-1), lb.reshape(-1)),
              f"frames, T={model.temperature:.2f}": (sig(lg, model.temperature).reshape(-1), lb.reshape(-1))}
    if attempts:
        curves["attempts (verifier)"] = (np.array([a["p"] for a in attempts]), y.astype(float))
    stats = reliability_plot(curves, out / "verifier_reliability.png",
                             title=f"learned verifier, {len(held)} held-out episodes")
    result = {
        "checkpoint": checkpoint, "dataset": dataset, "held_out_episodes": held, "frames": int(len(data)),
        "attempts": len(attempts), "positives": int(y.sum()) if len(y) else 0,
        "confidence_threshold": confidence, "rechecks": rechecks, "recheck_steps": recheck_steps,
        "f1_first_look": f1_score(first_pred, y) if len(y) else None,
        "f1_with_rechecks": f1_score(final_pred, y) if len(y) else None,
        "f1_decided_only": f1_score(final_pred[decided], y[decided]) if decided.any() else None,
        "uncertain_first_look": float(np.mean([a["first"]["uncertain"] for a in attempts])) if attempts else None,
        "uncertain_after_rechecks": float(np.mean(~decided)) if attempts else None,
        "accuracy_with_rechecks": float(np.mean(final_pred == y)) if len(y) else None,
        "temperature": model.temperature,
        "reliability": {k: v.to_json() for k, v in stats.items()},
        "wrong": [a for a in attempts if (a["p"] >= 0.5) != a["label"]][:20],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out / "verifier_reliability.json").write_text(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True, help="a tandem-train-state checkpoint directory")
    ap.add_argument("--dataset", required=True, help="a tandem image dataset with labels and its journal")
    ap.add_argument("--val-episodes", type=int, default=10, help="the last N episodes (those held out in training)")
    ap.add_argument("--confidence", type=float, default=0.9, help="the verifier's confidence_threshold")
    ap.add_argument("--rechecks", type=int, default=2, help="agent.verify_rechecks")
    ap.add_argument("--recheck-steps", type=int, default=5, help="agent.recheck_steps")
    ap.add_argument("--out", default="outputs/benchmarks/verifier_reliability")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    r = run(a.checkpoint, a.dataset, a.val_episodes, a.confidence, a.rechecks, a.recheck_steps, out)
    print(json.dumps({k: v for k, v in r.items() if k not in ("reliability", "wrong", "held_out_episodes")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
