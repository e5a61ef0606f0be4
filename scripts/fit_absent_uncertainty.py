"""Fit a state checkpoint's absent thresholds from ``benchmarks/absent_object.py`` runs.

Each run's rows give, at an episode's first plan, every object's heatmap uncertainty as the state model read it, in
scenes as drawn and with one instruction object moved off the table. For every object the uncertainties it showed
while present and those read for it while absent feed :func:`planner_vlm.learned.absence.fit_absent_uncertainty`.
Fit on validation seeds (700..), never on the held-out test seeds (1000..), and run the benchmark on those afterwards.
Writes ``absent_uncertainty`` into the checkpoint's ``config.json`` with ``--write`` (weights untouched) and prints the
fit either way.

Usage::

    python benchmarks/absent_object.py --task stack_three --seeds $(seq 700 759) --out outputs/benchmarks/absent_val_st3.json
    python scripts/fit_absent_uncertainty.py --checkpoint checkpoints/state/stack_three \\
        --runs outputs/benchmarks/absent_val_st3.json --write
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="a state model checkpoint directory")
    p.add_argument("--runs", nargs="+", required=True, help="JSON outputs of benchmarks/absent_object.py")
    p.add_argument("--write", action="store_true", help="write absent_uncertainty into the checkpoint's config.json")
    args = p.parse_args()
    from planner_vlm.learned.absence import fit_absent_uncertainty

    cfg_path = Path(args.checkpoint) / "config.json"
    raw = json.loads(cfg_path.read_text())
    objects = list(raw["model"]["objects"])
    present: dict[str, list[float]] = {o: [] for o in objects}
    absent: dict[str, list[float]] = {o: [] for o in objects}
    seeds: list[int] = []
    tasks = set()
    for run in args.runs:
        d = json.loads(Path(run).read_text())
        tasks.add(d["task"])
        seeds += [int(s) for s in d["seeds"]]
        for row in d["rows"]:
            u = row.get("object_uncertainty")
            if not u:
                raise SystemExit(f"{run}: a row without object_uncertainty (seed {row.get('seed')}); rerun the benchmark")
            removed = row["condition"].split(":", 1)[1] if row["condition"].startswith("absent:") else None
            for obj, val in u.items():
                if obj not in present:
                    raise SystemExit(f"{run}: object {obj!r} is not in the checkpoint's vocabulary {objects}")
                (absent if obj == removed else present)[obj].append(float(val))
    if len(tasks) != 1:
        raise SystemExit(f"runs of several tasks {sorted(tasks)}: fit one checkpoint from one task's runs")
    if seeds and max(seeds) >= 1000:
        raise SystemExit("runs include held-out test seeds (1000..): fit on validation seeds only")
    thresholds, report = fit_absent_uncertainty(present, absent, objects)
    print(json.dumps({"task": tasks.pop(), "seeds": len(set(seeds)), "seed_range": [min(seeds), max(seeds)],
                      "objects": report}, indent=2))
    if args.write:
        raw["absent_uncertainty"] = [None if v != v else round(float(v), 4) for v in thresholds]
        raw.setdefault("extra", {})["absent_uncertainty_fit"] = {
            "runs": [str(r) for r in args.runs], "seeds": len(set(seeds)), "seed_range": [min(seeds), max(seeds)]}
        cfg_path.write_text(json.dumps(raw, indent=2))
        print(f"wrote absent_uncertainty into {cfg_path}")


if __name__ == "__main__":
    main()
