"""scripts/train_presence.py and scripts/render_presence_scenes.py refuse bad input with one line and exit status 2,
before any training or rendering (found by a new user's trial)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scenes(path: Path, seeds, **change) -> Path:
    n = len(seeds)
    arrays = {"images": np.zeros((n, 2, 16, 16, 3), np.uint8), "present": np.ones((n, 2), bool),
              "seeds": np.asarray(seeds, np.int64), "objects": np.array(["milk", "can"]),
              "cameras": np.array(["workcell", "wrist"])}
    arrays["present"][0] = False
    arrays.update(change)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("change, match", [
    ({"images": np.zeros((3, 1, 16, 16, 3), np.uint8)}, "V=2 cameras"),
    ({"present": np.ones((3, 2), np.float32)}, "present must be bool"),
    ({"present": np.array([[False, True], [False, True], [False, True]])}, r"\['milk'\] are never present"),
])
def test_malformed_validation_scenes_are_named(tmp_path, capsys, change, match) -> None:
    train = _scenes(tmp_path / "train.npz", [1, 2, 3])
    val = _scenes(tmp_path / "val.npz", [7, 8, 9], **change)
    assert _script("train_presence").main(["--train", str(train), "--val", str(val), "--out",
                                           str(tmp_path / "ck")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert __import__("re").search(match, err), err


def test_bad_outputs_and_files_are_refused_before_training(tmp_path, capsys) -> None:
    train = _scenes(tmp_path / "train.npz", [1, 2, 3])
    val = _scenes(tmp_path / "val.npz", [7, 8, 9])
    main = _script("train_presence").main
    for out in (train, train / "sub"):  # a file, or under one
        assert main(["--train", str(train), "--val", str(val), "--out", str(out)]) == 2
        assert "is, or lies under, a file" in capsys.readouterr().err
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "config.json").write_text("{}")
    assert main(["--train", str(train), "--val", str(val), "--out", str(tmp_path / "ck")]) == 2
    assert "--overwrite" in capsys.readouterr().err
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    assert main(["--train", str(tmp_path / "junk.npz"), "--val", str(val), "--out", str(tmp_path / "x")]) == 2
    assert "is not an .npz of scenes" in capsys.readouterr().err


def test_the_render_script_names_an_unknown_task_and_a_directory_output(tmp_path, capsys) -> None:
    main = _script("render_presence_scenes").main
    assert main(["--task", "no_such_task", "--out", str(tmp_path / "x.npz")]) == 2
    assert "unknown task 'no_such_task'" in capsys.readouterr().err
    (tmp_path / "d.npz").mkdir()
    assert main(["--task", "pick_place_bins", "--out", str(tmp_path / "d")]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_validation_scenes_without_an_absent_object_are_warned_about(tmp_path, capsys) -> None:
    train = _scenes(tmp_path / "train.npz", [1, 2, 3], images=np.zeros((3, 2, 64, 64, 3), np.uint8))
    val = _scenes(tmp_path / "val.npz", [7, 8, 9], images=np.zeros((3, 2, 64, 64, 3), np.uint8),
                  present=np.array([[True, True], [True, True], [True, False]]))  # milk never absent
    assert _script("train_presence").main(["--train", str(train), "--val", str(val), "--out", str(tmp_path / "ck"),
                                           "--max-steps", "1"]) == 0
    err = capsys.readouterr().err
    assert "never show ['milk'] absent" in err and "absent_caught: null" in err
