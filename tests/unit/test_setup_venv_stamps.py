"""scripts/setup_venv.sh installs only what is missing (issue 50): `make demo` after `make test` installs nothing (the dev
install holds the base one), `make test` after `make demo` adds the dev extras once, a changed pyproject.toml
reinstalls. Run on a copy of the script with a fake `.venv/bin/python` that records the pip calls."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup_venv.sh", tmp_path / "scripts" / "setup_venv.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "requirements-nodeps.txt").write_text("")
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    python = bin_ / "python"
    python.write_text(f'#!/usr/bin/env bash\nif [ "$1" = "-m" ]; then echo "$*" >> "{tmp_path}/pip.log"; exit 0; fi\n'
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return tmp_path


def installs(project: Path, extras: str = "") -> list[str]:
    """Run the set-up (``make demo``: no extras; ``make test``: dev); the specs it installed with ``pip -e``."""
    log = project / "pip.log"
    log.unlink(missing_ok=True)
    subprocess.run(["bash", "scripts/setup_venv.sh", *([extras] if extras else [])], cwd=project, check=True,
                   capture_output=True, text=True)
    calls = log.read_text().splitlines() if log.exists() else []
    return [c.split(" -e ")[1] for c in calls if " -e " in c]


def test_demo_after_test_installs_nothing_and_test_after_demo_adds_the_extras_once(project):
    assert installs(project, "dev") == [".[dev]"]
    assert installs(project) == []            # make demo after make test
    assert installs(project, "dev") == []
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    assert installs(project) == ["."]         # make demo: the changed project, base only
    assert installs(project) == []
    assert installs(project, "dev") == [".[dev]"]  # make test adds the extras once
    assert installs(project, "dev") == []
    assert installs(project) == []


def test_the_single_stamp_of_earlier_versions_still_counts(project):
    digest = subprocess.run("cat pyproject.toml requirements-nodeps.txt | sha256sum | cut -c1-16", shell=True,
                            cwd=project, capture_output=True, text=True, check=True).stdout.strip()
    (project / ".venv" / ".installed").write_text(f"{digest}-dev\n")
    assert installs(project) == [] and installs(project, "dev") == []
    assert not (project / ".venv" / ".installed").exists()
