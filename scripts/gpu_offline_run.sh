#!/usr/bin/env bash
# On a CUDA machine without network or the tandem environment (after scripts/gpu_offline_pack.sh): the CUDA-graph
# tests, benchmarks/executor_cuda.py, and tandem-train's image recipe on CUDA for a minute in fp32 and bf16.
# Results go to $OUT (default outputs/gpu). About 7 minutes on an H200 (docs/gpu.md).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${OUT:-outputs/gpu}"); mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/tandem_site \
  .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/tandem_site:$PWD/.gpu_pack/stub
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/machine.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/machine.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/unit/test_cuda_graph.py 2>&1 | tail -15 | tee "$OUT/tests.txt"
(cd benchmarks && timeout 300 python3 executor_cuda.py --out "$OUT/executor_cuda.json" 2>&1 \
  | grep -v WARNING | tail -30)
for mp in no bf16; do
  timeout 200 python3 -m tandem.cli.train dataset.root=.gpu_pack/synthetic84 'executor.image_size=[84,84]' \
    executor.text_encoder=hash train.device=cuda train.mixed_precision=$mp train.batch_size=64 train.max_minutes=1 \
    train.log_every=100 train.save_every=100000 train.num_workers=0 dataset.cache=true output_dir="/tmp/train_$mp" \
    > "/tmp/train_$mp.log" 2>&1
  echo "tandem-train mixed_precision=$mp: exit $?"
  cp "/tmp/train_$mp/train_log.jsonl" "$OUT/tandem_train_cuda_$mp.jsonl" 2>/dev/null && tail -1 "$OUT/tandem_train_cuda_$mp.jsonl"
done
