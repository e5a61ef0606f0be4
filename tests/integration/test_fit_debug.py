"""tandem-fit end to end on the debug recipe: demonstrations, a half-minute executor, its evaluation, the report;
and a rerun that resumes (every stage finished before: nothing runs again)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.sim, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_debug_fit_runs_every_stage_reports_and_resumes(tmp_path):
    out = tmp_path / "fit"
    cmd = [sys.executable, "-m", "tandem.cli.fit", "task=stack_three", f"out={out}",
           f"recipe={ROOT / 'configs/fit/debug.yaml'}", "workers=2"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert first.returncode == 0, first.stderr[-2000:]
    report = json.loads((out / "fit" / "report.json").read_text())
    stages = {r["stage"]: r for r in report["stages"]}
    assert [r["status"] for r in report["stages"]] == ["done", "done", "done"]
    assert stages["collect_lowdim"]["figures"]["total_episodes"] == 3
    assert stages["train_executor"]["figures"]["step"] > 0
    assert stages["evaluate"]["figures"]["variants.0.false_success_claims"] == 0
    assert all(r["cpu_min"] > 0 for r in report["stages"])
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stderr.count("finished in an earlier run, skipped") == 3
