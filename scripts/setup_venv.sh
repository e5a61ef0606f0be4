#!/usr/bin/env bash
# Create .venv with a Python >= 3.12 that actually runs, and install tandem into it.
# Usage: scripts/setup_venv.sh [extras]     e.g. scripts/setup_venv.sh dev
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged and the extras asked for are in.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
venv=".venv"

works() {  # $1: interpreter command (may contain an env assignment); true if it runs and is >= 3.12
  env ${1} -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}

if [ ! -x "$venv/bin/python" ] || ! works "$venv/bin/python"; then
  candidates=()
  [ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
  candidates+=("python3.12" "PYENV_VERSION=3.12.1 python3.12")
  for p in "$HOME"/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12 python3; do
    candidates+=("$p")
  done
  py=""
  for c in "${candidates[@]}"; do
    if works "$c"; then py="$c"; break; fi
  done
  if [ -z "$py" ]; then
    echo "error: no working Python >= 3.12 found (tried: ${candidates[*]})." >&2
    echo "       Install Python 3.12 (e.g. 'pyenv install 3.12.1') or set PYTHON=/path/to/python3.12." >&2
    exit 1
  fi
  echo "[setup] creating $venv with: $py"
  rm -rf "$venv"
  env $py -m venv "$venv"
fi

# One stamp per install: .venv/.installed-base (`make demo`) and .venv/.installed-<extras> (`make test`: dev), each
# holding the hash of pyproject.toml + requirements-nodeps.txt it was installed from. Any current install holds the
# base one, so `make demo` after `make test` installs nothing; `make test` after `make demo` adds the extras once.
hash="$(cat pyproject.toml requirements-nodeps.txt | sha256sum | cut -c1-16)"
name="${extras:-base}"
current() {  # $1: stamp name; true if that install is of this pyproject.toml
  [ "$(cat "$venv/.installed-$1" 2>/dev/null || true)" = "$hash" ]
}
legacy="$(cat "$venv/.installed" 2>/dev/null || true)"   # the single stamp of earlier versions: "<hash>-<extras>"
if [ -n "$legacy" ]; then
  legacy_name="${legacy#*-}"
  [ "${legacy%%-*}" = "$hash" ] && echo "$hash" > "$venv/.installed-${legacy_name:-base}"
  rm -f "$venv/.installed"
fi

satisfied=false
if current "$name"; then
  satisfied=true
elif [ -z "$extras" ]; then  # the base install is part of every install with extras
  for s in "$venv"/.installed-*; do
    [ -e "$s" ] && current "${s##*/.installed-}" && satisfied=true && break
  done
fi

if [ "$satisfied" != true ]; then
  spec="."
  [ -n "$extras" ] && spec=".[$extras]"
  echo "[setup] installing tandem ($spec) into $venv (first time: a few minutes)"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e "$spec"
  "$venv/bin/python" -m pip install --quiet --no-deps -r requirements-nodeps.txt
  echo "$hash" > "$venv/.installed-$name"
  echo "$hash" > "$venv/.installed-base"
fi
