"""scripts/typecheck.py: new mypy errors fail, fixed ones make the baseline shrink, and --update never raises it."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load():
    spec = importlib.util.spec_from_file_location("typecheck_script", ROOT / "scripts" / "typecheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def tc(tmp_path, monkeypatch):
    mod = load()
    monkeypatch.setattr(mod, "BASELINE", tmp_path / "baseline.txt")
    return mod


def fake_mypy(mod, monkeypatch, lines):
    out = "\n".join(lines)
    counts = Counter()
    for ln in lines:
        m = mod.ERROR.match(ln)
        counts[(m["path"], m["code"])] += 1
    monkeypatch.setattr(mod, "run_mypy", lambda: (counts, out))


A = "tandem/a.py:3: error: Incompatible types in assignment  [assignment]"
B = "tandem/b.py:7: error: Item \"None\" of \"X | None\" has no attribute \"y\"  [union-attr]"


def test_new_errors_fail_and_name_the_file(tc, monkeypatch, capsys):
    fake_mypy(tc, monkeypatch, [A])
    assert tc.main(["--update"]) == 0  # the first --update writes the baseline
    assert tc.read_baseline(tc.BASELINE) == Counter({("tandem/a.py", "assignment"): 1})
    assert tc.main([]) == 0
    fake_mypy(tc, monkeypatch, [A, B])
    assert tc.main([]) == 1
    err = capsys.readouterr().err
    assert "tandem/b.py [union-attr]: 1 error(s), the baseline allows 0" in err and B in err
    assert tc.main(["--update"]) == 1  # --update refuses to raise the baseline
    assert tc.read_baseline(tc.BASELINE) == Counter({("tandem/a.py", "assignment"): 1})


def test_fixed_errors_fail_until_the_baseline_is_lowered(tc, monkeypatch, capsys):
    fake_mypy(tc, monkeypatch, [A, A, B])
    tc.main(["--update"])
    fake_mypy(tc, monkeypatch, [A])
    assert tc.main([]) == 1
    assert "lower it with scripts/typecheck.py --update" in capsys.readouterr().err
    assert tc.main(["--update"]) == 0
    assert tc.read_baseline(tc.BASELINE) == Counter({("tandem/a.py", "assignment"): 1})
    assert tc.main([]) == 0


def test_the_committed_baseline_reads_and_names_existing_files():
    mod = load()
    counts = mod.read_baseline(mod.BASELINE)
    assert counts and all(n > 0 for n in counts.values())
    assert all((ROOT / path).is_file() for path, _ in counts)
    text = mod.BASELINE.read_text().splitlines()
    body = [ln for ln in text if ln and not ln.startswith("#")]
    assert body == sorted(body, key=lambda ln: (ln.split()[1], ln.split()[2]))


def test_mypy_output_lines_are_parsed():
    mod = load()
    m = mod.ERROR.match("sim/robosuite_env.py:415:12: error: Unsupported operand types  [operator]")
    assert m and (m["path"], m["code"]) == ("sim/robosuite_env.py", "operator")
    assert mod.ERROR.match("tandem/x.py:3: note: See https://mypy.rtfd.io") is None
