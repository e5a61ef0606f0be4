"""The learned instruction grounders (``checkpoints/grounder/<task>``) read instructions they were never trained on.

Per task, each as exact match over paraphrases (``goals_equal`` with the line's ``ordered``), the refused rate over
the instructions that must be refused (``"expect": "refuse"``), how many of those were executed (grounded to goals
instead of refused), per ``kind``, and the first failures:

* ``final``: ``benchmarks/data/grounding_final2/<task>.jsonl``, written by another hand
  (``benchmarks/make_final2_paraphrases.py``), never trained on and never looked at while designing: the figures
  to report;
* ``validation``: ``benchmarks/data/grounding_validation/<task>.jsonl`` (``make_validation_paraphrases.py``) and
  ``validation_b``: ``benchmarks/data/grounding_final/<task>.jsonl`` (``make_final_paraphrases.py``, the first
  design's final set, consumed by that measurement), both other hands', looked at while designing;
* ``phrasing_heldout``: ``tandem.core.phrasing``'s split ``"heldout"`` (constructions the train split never uses),
  seeds from ``--seed``;
* the same files read by the judge's rule-based reference reading (``sim/reference_reading.py``), a peer;
* the training minutes (from the checkpoint) and the time to ground one instruction (ms, median and p95, one thread,
  each text new to the encoder's cache).

Targets: >= 98% exact match on >= 300 held-out paraphrases per task; >= 97% of the others refused, 0 executed.

Usage::

    python benchmarks/grounding.py --out docs/results/grounding.json        # every task, shipped checkpoints
    python benchmarks/grounding.py --tasks stack_three --checkpoints outputs/grounder
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("stack_three", "pick_place_bins", "nut_assembly")


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def score_lines(grounder: Any, lines: list[dict[str, Any]], failures: int = 20) -> dict[str, Any]:
    """Exact match / refusal of ``grounder`` over held-out ``lines`` (the file's form), overall and per kind."""
    from tandem.core.vocabulary import goals_equal

    vocab = grounder.vocabulary
    out = grounder.ground_many([ln["instruction"] for ln in lines])
    kinds: dict[str, dict[str, int]] = {}
    fails = []
    why: dict[str, int] = {}   # paraphrases not grounded right: "wrong" or "refused:<refusal kind>"
    pos = right = neg = refused = executed = 0
    for ln, g in zip(lines, out):
        k = kinds.setdefault(ln.get("kind", "?"), {"n": 0, "ok": 0})
        k["n"] += 1
        if ln.get("expect") == "refuse":
            neg += 1
            ok = g.refused is not None
            refused += ok
            executed += not ok
        else:
            pos += 1
            ok = g.refused is None and goals_equal(vocab, g.goals, ln["goals"], bool(ln.get("ordered", False)))
            right += ok
            if not ok:
                tag = "wrong" if g.refused is None else f"refused:{g.details.get('refusal_kind', '?')}"
                why[tag] = why.get(tag, 0) + 1
        k["ok"] += ok
        if not ok and len(fails) < failures:
            fails.append({"instruction": ln["instruction"], "kind": ln.get("kind"),
                          "want": "refuse" if ln.get("expect") == "refuse" else ln["goals"],
                          "got": list(g.goals), "refused": g.refused, "confidence": round(g.confidence, 3)})
    return {"paraphrases": pos, "exact_match": _rate(right, pos), "negatives": neg,
            "refused_rate": _rate(refused, neg), "executed": executed, "paraphrases_missed": why,
            "per_kind": {k: {"n": v["n"], "ok_rate": _rate(v["ok"], v["n"])} for k, v in sorted(kinds.items())},
            "failures": fails}


class ReferenceReader:
    """The judge's rule-based reference reading (``sim.reference_reading``) behind the grounder's ``ground_many``, as
    a peer in the same run."""

    def __init__(self, vocabulary: Any):
        self.vocabulary = vocabulary

    def ground_many(self, texts: list[str]) -> list[Any]:
        from sim.reference_reading import read_instruction

        return [read_instruction(self.vocabulary, t) for t in texts]


def phrasing_draws(vocab: Any, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` paraphrases and ``n`` negatives of phrasing.py's split ``"heldout"``, in the held-out file's form."""
    from tandem.core import phrasing

    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        goals = list(phrasing.sample_goals(vocab, rng))
        text, ordered = phrasing.phrase(vocab, goals, rng, "heldout")
        lines.append({"instruction": text, "goals": goals, "ordered": bool(ordered), "kind": "paraphrase"})
    for _ in range(n):
        text, kind = phrasing.negatives(vocab, rng, "heldout")
        lines.append({"instruction": text, "expect": "refuse", "kind": kind})
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints" / "grounder",
                    help="a folder of <task>/ grounder checkpoints")
    ap.add_argument("--final", type=Path, default=ROOT / "benchmarks" / "data" / "grounding_final2",
                    help="a folder of <task>.jsonl files never looked at (the figures to report)")
    ap.add_argument("--validation", type=Path, default=ROOT / "benchmarks" / "data" / "grounding_validation",
                    help="a folder of <task>.jsonl files looked at while designing")
    ap.add_argument("--validation-b", type=Path, default=ROOT / "benchmarks" / "data" / "grounding_final",
                    help="a second folder looked at while designing (the first design's final set)")
    ap.add_argument("--draws", type=int, default=300, help="phrasing.py split='heldout' paraphrases (and negatives)")
    ap.add_argument("--seed", type=int, default=1000, help="the first seed of the held-out draws")
    ap.add_argument("--timing", type=int, default=100, help="instructions timed one at a time")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    import torch

    from planner_vlm.learned.grounder import InstructionGrounder, time_ms
    from tandem.core.errors import TandemError

    torch.set_num_threads(1)
    report: dict[str, Any] = {"benchmark": "grounding", "threads": 1, "tasks": {}}
    for task in args.tasks:
        t0 = time.time()
        try:
            g = InstructionGrounder.load(args.checkpoints / task)
        except TandemError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        row: dict[str, Any] = {"checkpoint": str(args.checkpoints / task),
                               "training_minutes": g.meta.get("minutes"),
                               "training_seeds": g.meta.get("seeds")}
        lines: list[dict[str, Any]] = []
        for name, folder in (("final", args.final), ("validation", args.validation),
                             ("validation_b", args.validation_b)):
            path = folder / f"{task}.jsonl"
            if not path.is_file():
                row[name] = None
                continue
            got = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
            got = [x for x in got if x.get("task", task) == task]
            where = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
            row[name] = {"path": where, **score_lines(g, got)}
            row[f"{name}_reference_reading"] = score_lines(ReferenceReader(g.vocabulary), got, failures=0)
            lines = lines or got
        try:
            draws = phrasing_draws(g.vocabulary, args.draws, args.seed)
            row["phrasing_heldout"] = {"seed": args.seed, **score_lines(g, draws)}
        except ImportError:
            draws = []
            row["phrasing_heldout"] = None
        texts = [x["instruction"] for x in (lines or draws)][: args.timing]
        time_ms(g, texts[:5])  # warm-up
        ms = time_ms(g, texts)
        row["ms_per_instruction"] = {"median": round(float(np.median(ms)), 2),
                                     "p95": round(float(np.percentile(ms, 95)), 2), "n": len(ms)}
        row["seconds"] = round(time.time() - t0, 1)
        report["tasks"][task] = row
        keys = ("exact_match", "paraphrases", "refused_rate", "executed")
        print(f"{task}: final {({k: row['final'][k] for k in keys} if row['final'] else None)}; "
              f"validation {({k: row['validation'][k] for k in keys} if row['validation'] else None)}; "
              f"validation_b {({k: row['validation_b'][k] for k in keys} if row['validation_b'] else None)}; "
              f"phrasing {({k: row['phrasing_heldout'][k] for k in ('exact_match', 'refused_rate', 'executed')} if row['phrasing_heldout'] else None)}; "  # noqa: E501
              f"{row['ms_per_instruction']}", file=sys.stderr)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
