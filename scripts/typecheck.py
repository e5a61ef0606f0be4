#!/usr/bin/env python
"""The type check of ``make test`` / ``make lint``: mypy on the packages, against a baseline that only shrinks.

mypy runs with the ``[tool.mypy]`` settings of ``pyproject.toml`` on its ``files`` (``tandem`` and the components).
Its errors are counted per file and error code and compared with ``scripts/typecheck_baseline.txt`` (one
``<count> <file> <code>`` line each: the errors there were when the check came in). The check fails where

* a file has more errors of a code than the baseline allows (a new error: fix it, or, where mypy is wrong, silence
  that one line with ``# type: ignore[<code>]`` and say why);
* a file has fewer than the baseline (errors were fixed: run ``scripts/typecheck.py --update`` to lower the
  baseline, so that they cannot come back unnoticed).

``--update`` rewrites the baseline only where no count grew (or where there is no baseline file yet), so the
baseline can only shrink through this script.

Usage::

    .venv/bin/python scripts/typecheck.py            # check (exit 1 on a difference, 2 if mypy did not run)
    .venv/bin/python scripts/typecheck.py --update   # lower the baseline after fixing errors
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "typecheck_baseline.txt"
#: ``tandem/core/types.py:12: error: message  [code]``
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: .*\[(?P<code>[a-z0-9-]+)\]\s*$")

Key = tuple[str, str]


def run_mypy() -> tuple[Counter[Key], str]:
    """mypy's errors counted per ``(file, code)``, and its whole output.

    Raises:
        SystemExit: 2, where mypy did not run (not installed, a crash, a configuration error).
    """
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-pretty", "--show-error-codes",
                           "--no-error-summary"], cwd=ROOT, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    if proc.returncode not in (0, 1):
        sys.exit(f"typecheck: mypy did not run (exit {proc.returncode}):\n{out}")
    counts: Counter[Key] = Counter()
    for line in out.splitlines():
        m = ERROR.match(line)
        if m:
            counts[(m["path"], m["code"])] += 1
    if proc.returncode == 1 and not counts:
        sys.exit(f"typecheck: mypy failed but printed no error line this script reads:\n{out}")
    return counts, out


def read_baseline(path: Path | None = None) -> Counter[Key]:
    """The counts per ``(file, code)`` of the baseline at ``path`` (None: :data:`BASELINE`; empty where there is no
    file)."""
    path = BASELINE if path is None else path
    counts: Counter[Key] = Counter()
    if not path.is_file():
        return counts
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3 or not parts[0].isdigit():
            sys.exit(f"typecheck: {path.name} line {n} is not '<count> <file> <code>': {line!r}")
        counts[(parts[1], parts[2])] = int(parts[0])
    return counts


def write_baseline(counts: Counter[Key], path: Path | None = None) -> None:
    """Write ``counts`` as the baseline at ``path`` (None: :data:`BASELINE`), sorted by file and code."""
    path = BASELINE if path is None else path
    lines = ["# mypy errors per file and code when the type check came in (scripts/typecheck.py). It only shrinks:",
             "# fix errors, then run scripts/typecheck.py --update. Never add lines by hand.",
             *(f"{n} {p} {c}" for (p, c), n in sorted(counts.items()) if n > 0)]
    path.write_text("\n".join(lines) + "\n")


def compare(found: Counter[Key], allowed: Counter[Key]) -> tuple[list[str], list[str]]:
    """``(grown, shrunk)``: one line per ``(file, code)`` with more errors than allowed, and with fewer."""
    grown, shrunk = [], []
    for key in sorted(set(found) | set(allowed)):
        f, a = found.get(key, 0), allowed.get(key, 0)
        if f > a:
            grown.append(f"{key[0]} [{key[1]}]: {f} error(s), the baseline allows {a}")
        elif f < a:
            shrunk.append(f"{key[0]} [{key[1]}]: {f} error(s), the baseline says {a}")
    return grown, shrunk


def main(argv: list[str] | None = None) -> int:
    """Run the check (or ``--update``); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="lower the baseline to the current counts")
    args = ap.parse_args(argv)
    found, out = run_mypy()
    allowed = read_baseline()
    grown, shrunk = compare(found, allowed)
    if grown and not (args.update and not BASELINE.is_file()):  # the first --update writes the baseline
        keys = {k for k in found if found[k] > allowed.get(k, 0)}
        new = [ln for ln in out.splitlines() if (m := ERROR.match(ln)) and (m["path"], m["code"]) in keys]
        print("typecheck: new mypy errors (more than scripts/typecheck_baseline.txt allows):\n  " + "\n  ".join(grown)
              + "\nmypy's lines for those files and codes:\n  " + "\n  ".join(new), file=sys.stderr)
        return 1
    if args.update:
        write_baseline(found)
        print(f"typecheck: baseline written, {sum(found.values())} error(s) in {len({p for p, _ in found})} file(s)")
        return 0
    if shrunk:
        print("typecheck: fewer mypy errors than the baseline; lower it with scripts/typecheck.py --update:\n  "
              + "\n  ".join(shrunk), file=sys.stderr)
        return 1
    print(f"typecheck: ok, {sum(found.values())} baselined mypy error(s), none new")
    return 0


if __name__ == "__main__":
    sys.exit(main())
