"""Ctrl-C and SIGTERM during tandem-demo (issue 47): one line, exit 130, a video that plays and a summary marked
interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import imageio.v2 as imageio
import pytest

pytestmark = [pytest.mark.sim, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]


def _wait_for_frames(video: Path, proc: subprocess.Popen, timeout_s: float = 240.0) -> None:
    """Until the demo has been writing its video a moment (the file exists, then a few more control steps)."""
    end = time.monotonic() + timeout_s
    while not video.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < end, "the demo wrote no video"
        time.sleep(0.2)
    time.sleep(3.0)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_demo_leaves_a_playable_video_and_an_interrupted_summary(tmp_path, signum):
    out = tmp_path / "run"
    env = {**os.environ, "MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tandem.cli.demo", "task=stack_three", f"out_dir={out}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        _wait_for_frames(out / "episode.mp4", proc)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and "interrupted at step" in stderr.splitlines()[-1]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["success"] is False and summary["steps"] > 0
    reader = imageio.get_reader(str(out / "episode.mp4"))  # "moov atom not found" when ffmpeg was killed
    assert reader.count_frames() > 0 and reader.get_data(0).ndim == 3
