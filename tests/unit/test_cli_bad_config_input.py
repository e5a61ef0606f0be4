"""Bad input on a Hydra command line, by kind (issue 47): a non-finite or out-of-range number anywhere in a config,
a bridge duration that is not a positive number, a mistyped key, an unknown config group option, an internal
``*_schema`` entry picked as an option. Each gets ONE line on stderr naming the key, exit status 2, no traceback, and
nothing written (Hydra's output folder included: the command line is checked before Hydra creates it)."""

from __future__ import annotations

import importlib
import sys

import pytest

from tandem.core.errors import ConfigError
from tandem.core.number_fields import check_numbers, in_range


def refused(cli: str, args: list[str], tmp_path, monkeypatch, capsys) -> str:
    """Run ``tandem.cli.<cli>``'s main in-process from ``tmp_path`` with ``args``; assert the bad-input contract and
    return the one stderr line."""
    module = importlib.import_module(f"tandem.cli.{cli}")
    for name in ("run", "_run"):  # never run the command itself, should the input pass
        if hasattr(module, name):
            monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail(f"{cli} ran with {args}"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [f"tandem-{cli}", *args])
    with pytest.raises(SystemExit) as exit_:
        module.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert list(tmp_path.iterdir()) == [], "bad input wrote files"
    return lines[0]


# ------------------------------------------------------------------------------------------- numbers
@pytest.mark.parametrize(("arg", "key"), [
    ("train.lr=nan", "train.lr"), ("train.weight_decay=nan", "train.weight_decay"),
    ("train.max_minutes=nan", "train.max_minutes"), ("train.lr=-1", "train.lr"), ("train.lr=inf", "train.lr"),
    ("train.weight_decay=-0.1", "train.weight_decay"), ("train.betas=[nan,0.999]", "train.betas[0]"),
])
def test_train_refuses_non_finite_and_out_of_range_numbers(arg, key, tmp_path, monkeypatch, capsys):
    line = refused("train", ["train=debug", f"output_dir={tmp_path}/out", arg], tmp_path, monkeypatch, capsys)
    assert key in line


@pytest.mark.parametrize(("arg", "key"), [
    ("dart.sigma=nan", "dart.sigma"), ("dart.sigma=-0.1", "dart.sigma"), ("dart.sigma=inf", "dart.sigma"),
    ("memory.slow_scale=nan", "memory.slow_scale"), ("perturb_fraction=nan", "perturb_fraction"),
])
def test_collect_refuses_non_finite_and_out_of_range_numbers(arg, key, tmp_path, monkeypatch, capsys):
    line = refused("collect", [f"out={tmp_path}/dataset", arg], tmp_path, monkeypatch, capsys)
    assert key in line


@pytest.mark.parametrize("arg", ["planner=vlm planner.timeout_s=nan", "planner=vlm planner.backoff_s=-1",
                                 "sim_robot.duration_s=-1"])
def test_every_config_section_gets_the_number_check(arg, tmp_path, monkeypatch, capsys):
    *group, value = arg.split()
    line = refused("bridge", [f"out_dir={tmp_path}/out", *group, value], tmp_path, monkeypatch, capsys)
    assert value.partition("=")[0] in line


# ------------------------------------------------------------------------------------------- bridge durations
@pytest.mark.parametrize("value", ["nan", "-1", "inf", "soon", "0"])
def test_bridge_refuses_an_abort_after_stale_s_that_is_not_a_positive_number(value, tmp_path, monkeypatch, capsys):
    line = refused("bridge", [f"out_dir={tmp_path}/out", f"bridge.abort_after_stale_s={value}"], tmp_path,
                   monkeypatch, capsys)
    assert "abort_after_stale_s" in line


@pytest.mark.parametrize("cli", ["bridge", "sim_robot"])
def test_bridge_refuses_a_nan_startup_timeout(cli, tmp_path, monkeypatch, capsys):
    line = refused(cli, [f"out_dir={tmp_path}/out", "bridge.startup_timeout_s=nan"], tmp_path, monkeypatch, capsys)
    assert "startup_timeout_s" in line


def test_the_bridge_config_file_loader_names_the_duration():
    from bridge.config import bridge_config_from_dict

    for value in (float("nan"), -1.0, float("inf"), "soon"):
        with pytest.raises(ConfigError, match=r"^abort_after_stale_s must be"):
            bridge_config_from_dict({"topics": {"cameras": {"agentview": "/cam"}, "twist_cmd": "/t",
                                                "eef_pose": "/p"}, "abort_after_stale_s": value})


# ------------------------------------------------------------------------------------------- Hydra
def test_a_mistyped_key_gets_the_closest_key_not_hydras_advice(tmp_path, monkeypatch, capsys):
    line = refused("demo", [f"out_dir={tmp_path}/out", "seeed=3"], tmp_path, monkeypatch, capsys)
    assert "seeed" in line and "did you mean 'seed'" in line and "+seeed" not in line


def test_a_mistyped_section_key_gets_the_closest_key_of_its_section(tmp_path, monkeypatch, capsys):
    line = refused("collect", [f"out={tmp_path}/ds", "dart.sigmaa=0.1"], tmp_path, monkeypatch, capsys)
    assert "dart.sigmaa" in line and "did you mean 'sigma'" in line


@pytest.mark.parametrize(("cli", "arg", "group", "closest"), [
    ("demo", "planner=lerned", "planner", "learned"), ("collect", "task=stack_thre", "task", "stack_three"),
    ("train", "train=debugg", "train", "debug"),
])
def test_an_unknown_group_option_is_one_line_with_the_options(cli, arg, group, closest, tmp_path, monkeypatch,
                                                              capsys):
    line = refused(cli, [arg], tmp_path, monkeypatch, capsys)
    assert f"{arg}:" in line and f"did you mean '{closest}'" in line and "_schema" not in line


@pytest.mark.parametrize("arg", ["planner=learned_schema", "verifier=oracle_schema", "executor=diffusion_schema"])
def test_an_internal_schema_entry_is_not_an_option(arg, tmp_path, monkeypatch, capsys):
    line = refused("demo", [f"out_dir={tmp_path}/out", arg], tmp_path, monkeypatch, capsys)
    assert f"{arg}: no such" in line and "options:" in line
    assert "_schema" not in line.partition("options:")[2]


def test_a_free_text_instruction_still_composes(tmp_path, monkeypatch, capsys):
    words = "put the red cube on the blue cube, then the green one on the red one"
    line = refused("demo", [f"out_dir={tmp_path}/out", f"instruction={words}", "seed=-1"], tmp_path, monkeypatch,
                   capsys)
    assert line == "error: seed must be >= 0, got -1"


# ------------------------------------------------------------------------------------------- the check itself
def test_check_numbers_walks_every_number_and_declared_range():
    from dataclasses import dataclass, field

    @dataclass
    class Section:
        rate: float = in_range(1.0, gt=0, unit="Hz")
        share: float = in_range(0.5, ge=0, le=1)
        free: float = 0.0
        extra: dict = field(default_factory=dict)

    check_numbers(Section())
    check_numbers(Section(free=-5.0))
    for kwargs, message in [({"rate": 0.0}, "rate must be a finite number > 0 Hz, got 0.0"),
                            ({"share": 1.5}, "share must be a finite number in [0, 1], got 1.5"),
                            ({"free": float("nan")}, "free must be a finite number, got nan"),
                            ({"extra": {"deep": [1.0, float("inf")]}}, "extra.deep[1] must be a finite number, got inf"),
                            ({"rate": "fast"}, "rate must be a number, got 'fast'")]:
        with pytest.raises(ConfigError) as e:
            check_numbers(Section(**kwargs), "s")
        assert str(e.value) == f"s.{message}"


def test_a_schema_built_directly_checks_its_numbers():
    from tandem.runtime.config import DartConfig

    with pytest.raises(ConfigError, match="sigma"):
        DartConfig(sigma=float("nan"))
