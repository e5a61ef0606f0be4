"""Write a tiny, randomly initialised Qwen2-VL model as GGUF for llama.cpp's ``llama-server`` (its output is noise).

Usage (``scripts/build_llama_server.sh`` installs the converter, then runs this script):
    python scripts/make_tiny_gguf.py                      # -> .cache/llama-server/models/
    .cache/llama-server/bin/llama-server -m .cache/llama-server/models/tiny-qwen2vl-f32.gguf \\
        --mmproj .cache/llama-server/models/mmproj-tiny-qwen2vl-f32.gguf --port 8080

Nothing is downloaded. The Hugging Face directory comes from
:func:`planner_vlm.clients.tiny_random_vlm.make_tiny_qwen2_vl` (3 vision blocks: llama.cpp's tensor map of the
Qwen2-VL merger needs at least 3; an ASCII-only byte alphabet: random weights over all 256 bytes emit invalid
UTF-8, which the server answers with HTTP 500). llama.cpp's own ``convert_hf_to_gguf.py`` (installed next to the
binary by the build script) writes the text model and, with ``--mmproj``, the vision projector, both f32. The
home-made tokenizer's pre-tokenizer hash is unknown to the converter, so it is declared ``qwen2`` (the regex the
tokenizer was built with), and the vocabulary is read as GPT-2 BPE straight away (the converter tries
sentencepiece first, which need not be installed).

Outputs in ``--out``: ``tiny-qwen2vl-f32.gguf``, ``mmproj-tiny-qwen2vl-f32.gguf`` and ``hf/`` (the source
directory). Exits 0 at once when both GGUF files exist (``--force`` rewrites them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where the build script installs llama-server and the conversion script (``TANDEM_LLAMA_SERVER_DIR`` overrides).
DEFAULT_LLAMA_DIR = Path(os.environ.get("TANDEM_LLAMA_SERVER_DIR", ROOT / ".cache" / "llama-server"))
TEXT_GGUF = "tiny-qwen2vl-f32.gguf"
MMPROJ_GGUF = "mmproj-tiny-qwen2vl-f32.gguf"

#: Runs llama.cpp's converter with the pre-tokenizer declared and the BPE vocabulary (argv: llama_dir, then the converter's arguments).
_CONVERT = """
import sys
llama_dir = sys.argv[1]
sys.path[:0] = [llama_dir, llama_dir + "/gguf-py"]
import conversion.base as base
import conversion.qwenvl as qwenvl
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
qwenvl.Qwen2VLModel.set_vocab = lambda self: self._set_vocab_gpt2()
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py", *sys.argv[2:]]
convert_hf_to_gguf.main()
"""


def convert(llama_dir: Path, hf_dir: Path, outfile: Path, *, mmproj: bool) -> None:
    """Run ``convert_hf_to_gguf.py`` of ``llama_dir`` on ``hf_dir`` (f32; ``mmproj``: the vision projector).

    Raises:
        FileNotFoundError: ``llama_dir`` has no ``convert_hf_to_gguf.py``.
        subprocess.CalledProcessError: the converter failed (its output is on stderr).
    """
    if not (llama_dir / "convert_hf_to_gguf.py").is_file():
        raise FileNotFoundError(f"no convert_hf_to_gguf.py in {llama_dir}: run scripts/build_llama_server.sh")
    args = [str(hf_dir), "--outtype", "f32", "--outfile", str(outfile), *(["--mmproj"] if mmproj else [])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", _CONVERT, str(llama_dir), *args], check=True, env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-dir", type=Path, default=DEFAULT_LLAMA_DIR,
                    help="where convert_hf_to_gguf.py, conversion/ and gguf-py/ are (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default: LLAMA_DIR/models)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="rewrite existing files")
    args = ap.parse_args()
    out = args.out or args.llama_dir / "models"
    text, proj = out / TEXT_GGUF, out / MMPROJ_GGUF
    if text.is_file() and proj.is_file() and not args.force:
        print(json.dumps({"model": str(text), "mmproj": str(proj), "skipped": "exists (--force rewrites)"}))
        return
    from planner_vlm.clients.tiny_random_vlm import make_tiny_qwen2_vl

    info = make_tiny_qwen2_vl(out / "hf", vision_depth=3, ascii_only=True, seed=args.seed)
    convert(args.llama_dir, out / "hf", text, mmproj=False)
    convert(args.llama_dir, out / "hf", proj, mmproj=True)
    print(json.dumps({"model": str(text), "mmproj": str(proj), "n_params": info["n_params"],
                      "vocab_size": info["vocab_size"]}))


if __name__ == "__main__":
    main()
