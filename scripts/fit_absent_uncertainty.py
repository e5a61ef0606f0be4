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
import sys
from pathlib import Path
from typing import Any


def _fail(message: str) -> None:
    """Bad input: one line naming it, exit status 2, nothing written."""
    print(f"fit_absent_uncertainty: {message}", file=sys.stderr)
    raise SystemExit(2)


def _read_run(run: str, digest: str) -> dict[str, Any]:
    """One benchmark run, checked: a JSON object with task, seeds and rows, made with the checkpoint's weights."""
    path = Path(run)
    if not path.is_file():
        _fail(f"{run}: no such file")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        _fail(f"{run}: not JSON ({e})")
    if not isinstance(d, dict) or not isinstance(d.get("rows"), list) or not d.get("seeds") or "task" not in d:
        _fail(f"{run}: not an output of benchmarks/absent_object.py (needs task, seeds and rows)")
    if d.get("state_weights_sha256") is None:
        _fail(f"{run}: it does not record which state model it read; rerun benchmarks/absent_object.py")
    if d["state_weights_sha256"] != digest:
        _fail(f"{run}: it read another state model ({d.get('state_checkpoint')}, weights "
              f"{d['state_weights_sha256']}) than the checkpoint's (weights {digest})")
    return d


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="a state model checkpoint directory")
    p.add_argument("--runs", nargs="+", required=True, help="JSON outputs of benchmarks/absent_object.py")
    p.add_argument("--write", action="store_true", help="write absent_uncertainty into the checkpoint's config.json")
    args = p.parse_args()
    from planner_vlm.learned.absence import fit_absent_uncertainty
    from planner_vlm.learned.state_model import StateModel
    from tandem.core.errors import TandemError

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from absent_object import weights_digest

    try:
        StateModel.from_checkpoint(args.checkpoint)  # a valid checkpoint, or a message naming what is wrong
    except TandemError as e:
        _fail(str(e))
    cfg_path = Path(args.checkpoint) / "config.json"
    raw = json.loads(cfg_path.read_text())
    objects = list(raw["model"]["objects"])
    digest = weights_digest(Path(args.checkpoint))
    present: dict[str, list[float]] = {o: [] for o in objects}
    absent: dict[str, list[float]] = {o: [] for o in objects}
    seeds: list[int] = []
    tasks = set()
    for run in args.runs:
        d = _read_run(run, digest)
        tasks.add(d["task"])
        seeds += [int(s) for s in d["seeds"]]
        for row in d["rows"]:
            if "error" in row:
                continue  # a seed that did not run
            u = row.get("object_uncertainty")
            if not u:
                _fail(f"{run}: a row without object_uncertainty (seed {row.get('seed')}); rerun the benchmark")
            removed = row["condition"].split(":", 1)[1] if row["condition"].startswith("absent:") else None
            for obj, val in u.items():
                if obj not in present:
                    _fail(f"{run}: object {obj!r} is not in the checkpoint's vocabulary {objects}")
                (absent if obj == removed else present)[obj].append(float(val))
    if len(tasks) != 1:
        _fail(f"runs of several tasks {sorted(tasks)}: fit one checkpoint from one task's runs")
    if max(seeds) >= 1000:
        _fail("runs include held-out test seeds (1000..): fit on validation seeds only")
    never = [o for o in objects if present[o] and not absent[o]]
    if never:
        _fail(f"{never} never removed in these runs: no absent read to fit a threshold on")
    try:
        thresholds, report = fit_absent_uncertainty(present, absent, objects)
    except ValueError as e:
        _fail(str(e))
    print(json.dumps({"task": next(iter(tasks)), "seeds": len(set(seeds)), "seed_range": [min(seeds), max(seeds)],
                      "objects": report}, indent=2))
    if args.write:
        raw["absent_uncertainty"] = [None if v != v else round(float(v), 4) for v in thresholds]
        raw.setdefault("extra", {})["absent_uncertainty_fit"] = {
            "runs": [str(r) for r in args.runs], "seeds": len(set(seeds)), "seed_range": [min(seeds), max(seeds)],
            "objects": report}
        cfg_path.write_text(json.dumps(raw, indent=2))
        print(f"wrote absent_uncertainty into {cfg_path}")


if __name__ == "__main__":
    main()
