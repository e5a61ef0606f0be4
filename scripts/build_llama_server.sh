#!/usr/bin/env bash
# Build llama.cpp's native `llama-server` from the llama-cpp-python sdist on PyPI (no other download), install it
# with llama.cpp's HF -> GGUF converter (convert_hf_to_gguf.py, its conversion/ package and gguf-py/), then write
# the tiny random vision-language GGUF model that tests/integration/test_llama_server.py serves
# (scripts/make_tiny_gguf.py).
#
# Usage:  scripts/build_llama_server.sh      (PYTHON=... picks the interpreter; default .venv/bin/python)
# Result: under .cache/llama-server/ (TANDEM_LLAMA_SERVER_DIR overrides): bin/llama-server, convert_hf_to_gguf.py,
#         conversion/, gguf-py/, models/{tiny-qwen2vl-f32.gguf, mmproj-tiny-qwen2vl-f32.gguf}.
# The sdist is pinned (LLAMA_CPP_PYTHON_SPEC overrides): make_tiny_gguf.py patches two converter methods by name.
# Idempotent: skips the build when the binary and converter are installed (FORCE=1 rebuilds) and the model when it
# is written. CPU only (GGML_NATIVE=OFF), the web UI off (else the build downloads it), tests and examples off; the
# build runs under `nice -n 19` with JOBS (2) parallel jobs. cmake and ninja come from PyPI into the interpreter's
# environment when they are missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${TANDEM_LLAMA_SERVER_DIR:-$ROOT/.cache/llama-server}"
WORK="$ROOT/.cache/llama-build"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
JOBS="${JOBS:-2}"
SPEC="${LLAMA_CPP_PYTHON_SPEC:-llama-cpp-python==0.3.36}"
[[ -x "$PYTHON" ]] || { echo "no Python at $PYTHON (make setup, or set PYTHON=...)" >&2; exit 1; }

build() {
    local bin_dir sdist src_top src
    bin_dir="$(dirname "$PYTHON")"
    export PATH="$bin_dir:$PATH"
    if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
        echo "installing cmake and ninja from PyPI into $(dirname "$bin_dir")"
        "$PYTHON" -m pip install --quiet cmake ninja
    fi
    mkdir -p "$WORK" "$PREFIX/bin"
    sdist="$(ls "$WORK"/llama_cpp_python-*.tar.gz 2>/dev/null | head -1 || true)"
    if [[ -z "$sdist" ]]; then
        echo "downloading the $SPEC sdist"
        # --no-binary for this one package: with :all: pip would also build the sdist's build backend
        # (scikit-build-core, hatchling, ...) from source only to read its metadata
        "$PYTHON" -m pip download --quiet --no-deps --no-binary llama-cpp-python --dest "$WORK" "$SPEC"
        sdist="$(ls "$WORK"/llama_cpp_python-*.tar.gz | head -1)"
    fi
    src_top="$WORK/$(basename "$sdist" .tar.gz)"
    if [[ ! -d "$src_top/vendor/llama.cpp" ]]; then
        echo "unpacking $(basename "$sdist")"
        tar -xzf "$sdist" -C "$WORK"
    fi
    src="$src_top/vendor/llama.cpp"
    [[ -f "$src/CMakeLists.txt" ]] || { echo "no llama.cpp sources in $sdist (vendor/llama.cpp)" >&2; exit 1; }

    cd "$src"
    echo "configuring llama.cpp in $src/build"
    nice -n 19 cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
        -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF
    echo "building llama-server (-j$JOBS, nice 19)"
    nice -n 19 cmake --build build --target llama-server -j"$JOBS"

    cp build/bin/llama-server "$PREFIX/bin/llama-server"
    cp convert_hf_to_gguf.py "$PREFIX/convert_hf_to_gguf.py"
    for d in conversion gguf-py; do  # conversion/: the converter's model classes (newer llama.cpp splits them out)
        rm -rf "${PREFIX:?}/$d"
        if [[ -d "$d" ]]; then cp -r "$d" "$PREFIX/$d"; fi
    done
    basename "$sdist" > "$PREFIX/SOURCE"
    cd "$ROOT"
    echo "installed: $PREFIX/bin/llama-server"
}

if [[ -x "$PREFIX/bin/llama-server" && -f "$PREFIX/convert_hf_to_gguf.py" && -d "$PREFIX/conversion" \
      && -d "$PREFIX/gguf-py" && "${FORCE:-0}" != 1 ]]; then
    echo "llama-server already built: $PREFIX/bin/llama-server (FORCE=1 rebuilds)"
else
    build
fi
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 nice -n 19 "$PYTHON" "$ROOT/scripts/make_tiny_gguf.py" \
    --llama-dir "$PREFIX"
