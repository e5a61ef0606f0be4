"""`tandem-demo planner=vlm planner.backend=transformers planner.model_path=<tiny random model>` runs an episode
to a recorded outcome (a failure: the random model emits noise), with every model exchange in episode.jsonl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.sim, pytest.mark.slow]


def test_demo_with_tiny_transformers_vlm_records_every_exchange(tmp_path):
    from planner_vlm.clients.tiny_random_vlm import make_tiny_qwen2_vl

    model_dir = tmp_path / "tiny_vlm"
    make_tiny_qwen2_vl(model_dir)
    out = tmp_path / "demo"
    exe = Path(sys.executable).parent / "tandem-demo"
    if not exe.exists():
        pytest.skip("tandem-demo is not installed in this environment (pip install -e .)")
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [str(exe), "planner=vlm", "verifier=oracle", "executor=scripted", "goals=oracle",  # the old default
             "planner.backend=transformers", f"planner.model_path={model_dir}",
         "planner.device=cpu", "planner.max_new_tokens=8", "video=false", "env.image_size=[64,64]",
         f"out_dir={out}"],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode in (0, 3), proc.stdout[-2000:] + proc.stderr[-4000:]  # 3 = ran, recorded, failed
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "episode.jsonl").read_text().splitlines()]
    events = [r for r in rows if r.get("type") == "event"]
    exchanges = [e for e in events if e["kind"] == "vlm_exchange"]
    plans = [e for e in events if e["kind"] == "plan"]
    assert exchanges and plans and summary["plans"] == len(plans)
    for e in exchanges:
        assert e["component"] == "planner" and e["backend"] == "transformers"
        assert isinstance(e["raw_reply"], str) and e["latency_s"] > 0 and "ok" in e["parse"]
        assert [i["shape"] for i in e["images"]] == [[64, 64, 3], [64, 64, 3]]
        assert "TASK:" in e["messages"][1]["parts"][0]["text"]
    # noise never parses: one repair round per planner call, then the recorded fallback
    if not any(e["parse"]["ok"] for e in exchanges):
        assert len(exchanges) == 2 * len(plans)
        assert len([e for e in events if e["kind"] == "vlm_fallback"]) == len(plans)
        assert summary["success"] is False
