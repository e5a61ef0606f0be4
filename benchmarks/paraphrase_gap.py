"""Paraphrased against templated instructions, from finished ``tandem-eval`` runs of the same seeds.

Per task: successes of each run, the paraphrases the planner's grounding refused or read otherwise than the judge,
episodes lost or gained, false success claims of each run, and how many templated instructions the current
grounder (``checkpoints/grounder/<task>``) reads otherwise than the run's grounder did (0: the templated run stands
for the current grounder). JSON on stdout.

Usage::

    python benchmarks/paraphrase_gap.py --runs runs/closed_9200 --tasks stack_three pick_place_bins nut_assembly
    # reads <runs>/<task>_template/episodes.jsonl and <runs>/<task>_paraphrase/episodes.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def rows_of(path: Path) -> dict[int, dict[str, Any]]:
    """``episodes.jsonl`` rows by seed."""
    return {r["seed"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


def task_gap(task: str, template: dict[int, dict], paraphrase: dict[int, dict]) -> dict[str, Any]:
    """The figures of one task (see the module docstring)."""
    from planner_vlm.learned.grounder import InstructionGrounder
    from sim.tasks.registry import task_vocabulary
    from tandem.core.vocabulary import goals_equal

    vocab = task_vocabulary(task)
    refused = misread = lost = gained = 0
    for seed, r in paraphrase.items():
        g = r["grounding"]
        if g.get("refused"):
            refused += 1
        elif not goals_equal(vocab, g["goals"], r["judge_goals"], bool(g.get("ordered", True))):
            misread += 1
        t = template[seed]["success"]
        lost += bool(t and not r["success"])
        gained += bool(r["success"] and not t)
    grounder = InstructionGrounder.load(ROOT / "checkpoints" / "grounder" / task)
    rows = list(template.values())
    now = grounder.ground_many([r["instruction"] for r in rows])
    differ = sum(list(x.goals) != list(r["grounding"]["goals"]) or bool(x.refused) != bool(r["grounding"].get("refused"))
                 for r, x in zip(rows, now))
    return {"episodes": len(paraphrase), "template_success": sum(r["success"] for r in template.values()),
            "paraphrase_success": sum(r["success"] for r in paraphrase.values()), "paraphrases_refused": refused,
            "paraphrases_misread": misread, "lost": lost, "gained": gained,
            "false_success_claims": {"template": sum(bool(r.get("false_success_claim")) for r in template.values()),
                                     "paraphrase": sum(bool(r.get("false_success_claim")) for r in paraphrase.values())},
            "templates_read_otherwise_now": int(differ)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--tasks", nargs="+", default=["stack_three", "pick_place_bins", "nut_assembly"])
    args = ap.parse_args(argv)
    out = {}
    for task in args.tasks:
        paths = [args.runs / f"{task}_{w}" / "episodes.jsonl" for w in ("template", "paraphrase")]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            print(f"error: --runs: no {missing[0]}", file=sys.stderr)
            return 2
        out[task] = task_gap(task, rows_of(paths[0]), rows_of(paths[1]))
    print(json.dumps({"benchmark": "paraphrase_gap", "runs": str(args.runs), "tasks": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
