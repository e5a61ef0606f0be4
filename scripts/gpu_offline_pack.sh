#!/usr/bin/env bash
# Pack what scripts/gpu_offline_run.sh needs on a CUDA machine that has PyTorch but no network and no tandem
# environment (docs/gpu.md, "Running on a machine without the full environment"). Run here, from the repository
# root, with the project's venv; then copy the repository (with .whl/ and .gpu_pack/) to the GPU machine.
#   .whl/        pure-Python wheels of LeRobot, diffusers, datasets, Hydra and their dependencies (about 10 MB)
#   .gpu_pack/   an 84-px synthetic dataset (200 episodes, 12,000 frames, about 4 MB) and a PyAV stand-in
# The stand-in replaces PyAV (a 40 MB wheel): LeRobot's datasets import it at import time, and these runs read PNG
# frames and decode no video; any real use of it raises.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
mkdir -p .whl .gpu_pack/stub/av .gpu_pack/stub/av-0.0.0.dist-info
for pkg in lerobot draccus diffusers datasets gymnasium farama-notifications dill multiprocess mergedeep pytz \
           hydra-core omegaconf jsonlines termcolor toml; do
  ver=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$pkg")
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform any --platform manylinux2014_x86_64 -d .whl "$pkg==$ver"
done
"$PY" -m pip wheel -q --no-deps -w .whl "antlr4-python3-runtime==$("$PY" -c \
  "import importlib.metadata as m; print(m.version('antlr4-python3-runtime'))")"   # sdist only on PyPI
cat > .gpu_pack/stub/av/__init__.py <<'PY'
"""Stand-in for PyAV (scripts/gpu_offline_pack.sh): importable, and names its classes in annotations; any call
raises, since these runs decode no video."""
__version__ = "0.0.0"


class _MissingMeta(type):
    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _MissingMeta(f"{cls.__name__}.{name}", (), {})

    def __call__(cls, *args, **kwargs):
        raise RuntimeError(f"{cls.__name__}: PyAV is not installed on this machine (stand-in)")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _MissingMeta(f"av.{name}", (), {})
PY
printf 'Metadata-Version: 2.1\nName: av\nVersion: 0.0.0\n' > .gpu_pack/stub/av-0.0.0.dist-info/METADATA
[ -f .gpu_pack/synthetic84/meta/info.json ] || "$PY" -c "from executor_vla.synthetic import make_synthetic_dataset as m; \
  m('.gpu_pack/synthetic84', n_episodes=200, frames_per_subgoal=30, image_size=(84, 84))"
du -sh .whl .gpu_pack
