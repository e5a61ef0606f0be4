"""`tandem-eval` killed mid-run resumes: the rerun skips the recorded episodes and finishes the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

TESTS = Path(__file__).resolve().parents[1]
N = 8


def _cmd(out: Path) -> list[str]:
    return [sys.executable, "-m", "tandem.cli.eval", "suite=smoke", "suite.name=fake", "suite.tasks=[toy]",
            f"suite.seeds={N}", "validate=false", "progress=false", "backend=local", "workers=1",
            "run_variants=[fake]", "+variants.fake.builder='eval_fakes:build_fake_stack'",
            "+variants.fake.executor.name=fake", "+variants.fake.executor.sleep_s=0.1", f"out_dir={out}"]


@pytest.mark.integration
def test_interrupted_run_resumes_without_duplicates(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    part = tmp_path / "episodes.jsonl"
    proc = subprocess.Popen(_cmd(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if part.exists() and len(part.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.stdout.read().decode()}"
    os.killpg(proc.pid, signal.SIGKILL)  # the run and its worker processes, as a Ctrl-C'd terminal would
    proc.wait(timeout=30)
    n_before = len([ln for ln in part.read_text().splitlines() if ln.endswith("}")])
    assert 2 <= n_before < N
    assert not (tmp_path / "results.parquet").exists()

    done = subprocess.run(_cmd(tmp_path), env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{N - n_before} episode(s) run, {n_before} already recorded" in done.stdout
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert len(df) == N and df["key"].is_unique and df["success"].all()
    assert sorted(df["seed"]) == list(range(N))
