"""Bad input, by kind, on EVERY console command (issue 47 item 6).

The rule (README, docs/usage.md): bad input gets ONE line on stderr naming the key and what was wrong, exit status 2,
no traceback, and NOTHING written: no output folder, no Hydra run folder (``outputs/``, ``.hydra``), no partial file.

One table: each command of ``[project.scripts]`` x the kinds of bad input it takes (a mistyped key, a NaN, a number out
of its range, an output folder with a file in the way, an output folder that cannot be written). Each command runs
in-process from an empty working folder; anything past the input checks that would build a simulator, read a dataset,
load a model or train is replaced by a tripwire, so a command that refuses too late fails here fast instead of running.
"""

from __future__ import annotations

import importlib
import os
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class RanPastTheInputChecks(BaseException):
    """Raised by a tripwire: the command went on to real work (a BaseException, so no ``except Exception`` eats it)."""


#: The work a command does once its input is accepted: none of it may start on bad input.
TRIPWIRES = [
    ("tandem.runtime.registry", "build_stack"), ("tandem.runtime.registry", "build_sim_env"),
    ("tandem.runtime.registry", "build_bridge_stack"), ("tandem.runtime.bridge_session", "build_sim_robot"),
    ("tandem.runtime.bridge_session", "run_bridge"), ("tandem.runtime.bridge_session", "serve_sim_robot"),
    ("tandem.runtime.collect", "open_writer"), ("tandem.runtime.collect", "collect"),
    ("tandem.evaluation.runner", "evaluate"), ("tandem.evaluation.report", "make_report"),
    ("tandem.evaluation.report", "compare"), ("tandem.evaluation.fit.runner", "FitRunner"),
    ("tandem.cli.train", "_dataset"), ("tandem.cli.train", "run_track"),
    ("planner_vlm.learned.state_data", "StateDataset"), ("planner_vlm.learned.trace_data", "TraceDataset"),
    ("planner_vlm.learned.grounder_train", "train_grounder"),
    ("planner_vlm.learned.grounder", "InstructionGrounder"),
    ("executor_vla.dataset_merge", "merge_datasets"), ("executor_vla.dataset_inspect", "inspect_dataset"),
    ("memory.store", "MemoryStore"), ("tandem.runtime.oracle_sim_vlm", "make_server"),
]

#: ``(command, arguments, what the line must name)``, by kind. ``{blocked}``: a path under a file (a file is in the
#: way); ``{ro}``: a path under a folder that cannot be written; ``{tmp}``: the test's folder.
TYPO = [
    ("demo", ["seeed=3"], "seeed"),
    ("eval", ["workerz=2"], "workerz"),
    ("train", ["train=debug", "train.lrr=1"], "train.lrr"),
    ("train_state", ["state_train=debug", "train.lrr=1"], "train.lrr"),
    ("train_trace", ["trace_train=debug", "train.lrr=1"], "train.lrr"),
    ("collect", ["dart.sigmaa=0.1"], "dart.sigmaa"),
    ("bridge", ["bridge.rate_hzz=5"], "bridge.rate_hzz"),
    ("sim_robot", ["sim_robot.duration_ss=5"], "sim_robot.duration_ss"),
    ("fit", ["taks=stack_three", "out={tmp}/fit"], "taks"),
    ("ground", ["taks=stack_three", "instruction=stack them"], "taks"),
    ("train_grounder", ["taks=stack_three", "out={tmp}/g"], "taks"),
    ("replay", ["{tmp}/run", "--episdoe", "3"], "--episdoe"),
    ("dataset", ["inspect", "{tmp}/ds", "--max-rowz", "3"], "--max-rowz"),
    ("eval", ["report", "{tmp}/results", "--outt", "{tmp}/r"], "--outt"),
    ("oracle_sim_vlm", ["latency_ss=1"], "latency_ss"),
]
NAN = [
    ("demo", ["memory.slow_scale=nan"], "memory.slow_scale"),
    ("eval", ["agent.confirm_reads=nan"], "agent.confirm_reads"),
    ("train", ["train=debug", "train.lr=nan"], "train.lr"),
    ("train_state", ["state_train=debug", "train.lr=nan"], "train.lr"),
    ("train_trace", ["trace_train=debug", "train.keypoint_noise_m=nan"], "train.keypoint_noise_m"),
    ("collect", ["dart.sigma=nan"], "dart.sigma"),
    ("bridge", ["bridge.rate_hz=nan"], "bridge.rate_hz"),
    ("sim_robot", ["sim_robot.command_timeout_s=nan"], "sim_robot.command_timeout_s"),
    ("fit", ["task=stack_three", "out={tmp}/fit", "workers=nan"], "workers"),
    ("train_grounder", ["task=stack_three", "out={tmp}/g", "minutes=nan"], "minutes"),
    ("train_grounder", ["task=stack_three", "out={tmp}/g", "minutes=inf"], "minutes"),
    ("replay", ["{tmp}/run", "--episode", "nan"], "--episode"),
    ("dataset", ["inspect", "{tmp}/ds", "--max-rows", "nan"], "--max-rows"),
    ("oracle_sim_vlm", ["point_sigma_px=nan"], "point_sigma_px"),
    ("oracle_sim_vlm", ["verdict_flip_rate=nan"], "verdict_flip_rate"),
]
OUT_OF_RANGE = [
    ("demo", ["seed=-1"], "seed"),
    ("eval", ["workers=0"], "workers"),
    ("train", ["train=debug", "train.lr=-1"], "train.lr"),
    ("train_state", ["state_train=debug", "train.lr=-1"], "train.lr"),
    ("train_trace", ["trace_train=debug", "train.repick_radius_m=-1"], "train.repick_radius_m"),
    ("collect", ["dart.sigma=-0.1"], "dart.sigma"),
    ("collect", ["perturb_fraction=1.5"], "perturb_fraction"),
    ("bridge", ["bridge.rate_hz=-1"], "bridge.rate_hz"),
    ("sim_robot", ["sim_robot.command_timeout_s=-1"], "sim_robot.command_timeout_s"),
    ("fit", ["task=stack_three", "out={tmp}/fit", "workers=0"], "workers"),
    ("train_grounder", ["task=stack_three", "out={tmp}/g", "n=-1"], "n"),
    ("dataset", ["inspect", "{tmp}/ds", "--max-rows", "-1"], "--max-rows"),
    ("oracle_sim_vlm", ["wrong_object_rate=1.5"], "wrong_object_rate"),
    ("oracle_sim_vlm", ["port=70000"], "port"),
]
FILE_IN_THE_WAY = [
    ("demo", ["out_dir={blocked}"], "out_dir"),
    ("eval", ["out_dir={blocked}"], "out_dir"),
    ("train", ["train=debug", "output_dir={blocked}"], "output_dir"),
    ("train_state", ["state_train=debug", "output_dir={blocked}"], "output_dir"),
    ("train_trace", ["trace_train=debug", "output_dir={blocked}"], "output_dir"),
    ("collect", ["out={blocked}"], "out"),
    ("bridge", ["out_dir={blocked}"], "out_dir"),
    ("sim_robot", ["out_dir={blocked}"], "out_dir"),
    ("fit", ["task=stack_three", "out={blocked}"], "out"),
    ("train_grounder", ["task=stack_three", "out={blocked}"], "out"),
    ("eval", ["report", "{tmp}/results", "--out", "{blocked}"], "--out"),
    ("dataset", ["merge", "{blocked}", "{tmp}/a", "{tmp}/b"], "out"),
]
UNWRITABLE = [(cli, [a.replace("{blocked}", "{ro}") for a in args], key) for cli, args, key in FILE_IN_THE_WAY]

CASES = [pytest.param(cli, args, key, id=f"{kind}-{cli}-{'-'.join(args)[-40:]}")
         for kind, table in (("typo", TYPO), ("nan", NAN), ("range", OUT_OF_RANGE), ("file", FILE_IN_THE_WAY),
                             ("unwritable", UNWRITABLE))
         for cli, args, key in table]


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.fixture
def place(tmp_path, monkeypatch):
    """An empty working folder ``cwd``, a file in the way (``blocked``) and a folder that cannot be written (``ro``:
    ``os.access`` says so, as it does for a read-only file system; root ignores permission bits)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (tmp_path / "a_file").write_text("x")
    ro = tmp_path / "read_only"
    ro.mkdir()
    access = os.access

    def fake_access(path, mode, *a, **k):
        if Path(path).absolute() == ro and mode & os.W_OK:
            return False
        return access(path, mode, *a, **k)

    monkeypatch.setattr(os, "access", fake_access)
    monkeypatch.chdir(cwd)
    return {"tmp": str(tmp_path), "blocked": str(tmp_path / "a_file" / "out"), "ro": str(ro / "out"),
            "root": tmp_path}


def refuse(cli: str, args: list[str], monkeypatch, capsys) -> str:
    """Run ``tandem.cli.<cli>``'s main with ``args`` (tripwires set); assert exit status 2, no traceback, one line;
    return the line."""
    for module, name in TRIPWIRES:
        def tripwire(*_a, _where=f"{module}.{name}", **_k):
            raise RanPastTheInputChecks(f"tandem-{cli} {' '.join(args)} reached {_where}")

        monkeypatch.setattr(importlib.import_module(module), name, tripwire)
    command = importlib.import_module(f"tandem.cli.{cli}")
    monkeypatch.setattr(sys, "argv", [f"tandem-{cli.replace('_', '-')}", *args])
    with pytest.raises(SystemExit) as exit_:
        command.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize(("cli", "args", "key"), CASES)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(cli, args, key, place, monkeypatch, capsys):
    args = [a.format(**place) for a in args]
    before = _files(place["root"])
    line = refuse(cli, args, monkeypatch, capsys)
    assert key in line, line
    assert _files(place["root"]) == before, "bad input wrote files"


def test_the_table_covers_every_console_command():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    covered = {f"tandem-{cli.replace('_', '-')}" for cli, _, _ in TYPO}
    assert set(scripts) <= covered, set(scripts) - covered
    for target in scripts.values():
        assert target.startswith("tandem.cli.") and target.endswith(":main"), target


@pytest.mark.parametrize(("build", "key"), [
    ("executor_vla.train:TrainConfig", "lr"), ("planner_vlm.learned.state_config:StateTrainConfig", "lr"),
    ("planner_vlm.learned.trace_config:TraceTrainConfig", "lr"), ("bridge.config:BridgeConfig", "rate_hz"),
])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_a_component_config_built_in_python_checks_its_numbers(build, key, value):
    """The CLI's checks are the config's own: built directly (a script, a notebook), it refuses the same numbers."""
    from tandem.core.errors import ConfigError

    module, _, name = build.partition(":")
    with pytest.raises(ConfigError, match=rf"^{key} must be"):
        getattr(importlib.import_module(module), name)(**{key: value})
