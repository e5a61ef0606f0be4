"""Output folders (issue 47): every command that writes checks its folder before any work (one line, exit 2, no
traceback), and refused input leaves no folder behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.core.errors import OutputFolderError
from tandem.core.output_folders import (
    check_output_folder,
    create_output_folder,
    remove_created_output_folders,
)

REPO = Path(__file__).resolve().parents[2]


def _cli(module: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env, timeout=300,
                          cwd=REPO)


def _one_clear_line(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr[-2000:]
    assert all(w in lines[0] for w in words), lines


@pytest.fixture
def blocked(tmp_path) -> Path:
    """A folder that cannot be created: a file stands where its parent should be (root ignores permissions)."""
    (tmp_path / "a_file").write_text("x")
    return tmp_path / "a_file" / "out"


def test_check_names_the_file_in_the_way_and_creates_nothing(tmp_path, blocked):
    with pytest.raises(OutputFolderError, match="a_file is a file"):
        check_output_folder(blocked)
    with pytest.raises(OutputFolderError, match="is a file, not a folder"):
        check_output_folder(tmp_path / "a_file")
    assert check_output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()


def test_created_folders_are_removed_on_refusal_and_existing_ones_kept(tmp_path):
    (tmp_path / "kept").mkdir()
    create_output_folder(tmp_path / "kept")
    create_output_folder(tmp_path / "new" / "deeper")
    assert (tmp_path / "new" / "deeper").is_dir()
    remove_created_output_folders()
    assert not (tmp_path / "new").exists() and (tmp_path / "kept").is_dir()


@pytest.mark.parametrize("module,key", [("tandem.cli.demo", "out_dir"), ("tandem.cli.eval", "out_dir"),
                                        ("tandem.cli.train", "output_dir")])
def test_an_unwritable_output_folder_is_one_line(module, key, blocked, tmp_path):
    extra = [f"dataset.root={tmp_path}"] if module == "tandem.cli.train" else []
    _one_clear_line(_cli(module, f"{key}={blocked}", *extra), "output folder", "a_file is a file")


def test_report_checks_its_folder_before_reading(blocked, tmp_path):
    _one_clear_line(_cli("tandem.cli.eval", "report", str(tmp_path), "--out", str(blocked)), "a_file is a file")


def test_replay_checks_its_folder_before_re_simulating(blocked, tmp_path):
    from memory.store import MemoryStore

    with MemoryStore(tmp_path / "run") as store:
        store.begin_episode("stack_three", "stack").finish(False, {})
    _one_clear_line(_cli("tandem.cli.replay", str(tmp_path / "run"), "--rerun", str(blocked / "x.rrd")),
                    "a_file is a file")


@pytest.mark.parametrize("module,args", [
    ("tandem.cli.demo", ["seed=-1"]),
    ("tandem.cli.demo", ["planner.modle=x"]),
    ("tandem.cli.eval", ["workers=0"]),
])
def test_refused_input_creates_no_folder(module, args, tmp_path):
    out = tmp_path / "new"
    proc = _cli(module, f"out_dir={out}", *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not out.exists()


def test_train_refused_after_validation_removes_the_folder_it_made(tmp_path):
    out = tmp_path / "new"
    proc = _cli("tandem.cli.train", f"output_dir={out}", f"dataset.root={tmp_path / 'no_such_dataset'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not out.exists()
