"""Write a tiny random Qwen2-VL model directory for the transformers-backend demo (its output is noise).

Usage:
    python scripts/make_tiny_vlm.py --out /tmp/tiny_vlm
    tandem-demo planner=vlm planner.backend=transformers planner.model_path=/tmp/tiny_vlm
"""

from __future__ import annotations

import argparse
import json

from planner_vlm.clients.tiny_random_vlm import make_tiny_qwen2_vl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (created)")
    ap.add_argument("--hidden-size", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    info = make_tiny_qwen2_vl(args.out, hidden_size=args.hidden_size, num_layers=args.layers, seed=args.seed)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
