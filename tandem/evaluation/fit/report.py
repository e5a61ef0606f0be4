"""The report of a fit: ``<out>/fit/report.json`` and ``report.md``.

Per stage: status, wall and CPU minutes, and the figures its recipe names, read from the ``summary.json`` (or
``metrics.json``) the stage itself wrote. Totals: wall minutes of the whole run (stages overlap with
``workers`` > 1) and CPU minutes summed over the stages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tandem.evaluation.fit.recipe import Recipe, dotted
from tandem.evaluation.fit.runner import StageResult


def write_report(recipe: Recipe, task: str, out: Path, results: list[StageResult], wall_s: float) -> dict[str, Any]:
    """Write ``report.json`` and ``report.md`` under ``<out>/fit``; returns the report."""
    rows = []
    for res in results:
        st = recipe.stage(res.name)
        figures: dict[str, Any] = {}
        if st.summary and res.status in ("done", "resumed"):
            try:
                summary = json.loads((out / st.summary).read_text())
            except (OSError, ValueError):
                summary = None
            figures = {k: dotted(summary, k) for k in st.figures} if summary is not None else {"summary": "missing"}
        rows.append({"stage": res.name, "status": res.status, "rc": res.rc, "wall_min": round(res.wall_s / 60, 2),
                     "cpu_min": round(res.cpu_s / 60, 2), "figures": figures, "log": res.log,
                     "command": " ".join(res.argv)})
    report = {"task": task, "out": str(out), "ok": all(r["status"] in ("done", "resumed") for r in rows),
              "wall_min_this_run": round(wall_s / 60, 2), "cpu_min_all_stages": round(sum(r["cpu_min"] for r in rows), 2),
              "stages": rows}
    (out / "fit").mkdir(parents=True, exist_ok=True)
    (out / "fit" / "report.json").write_text(json.dumps(report, indent=2, default=str))
    lines = [f"# tandem-fit {task}", "", f"Run folder `{out}`; this run {report['wall_min_this_run']} min wall; "
             f"{report['cpu_min_all_stages']} CPU-min over all stages.", "",
             "| stage | status | wall min | CPU min | figures |", "|---|---|---|---|---|"]
    for r in rows:
        figs = ", ".join(f"{k} = {_fmt(v)}" for k, v in r["figures"].items())
        lines.append(f"| {r['stage']} | {r['status']} | {r['wall_min']} | {r['cpu_min']} | {figs} |")
    (out / "fit" / "report.md").write_text("\n".join(lines) + "\n")
    return report


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)
