#!/usr/bin/env bash
# One device call's worth of H200 work (the lead's batching script; each tool is documented in its own file):
# the correctness tools in parallel (small kernels: their timings are not compared), then the timed GEMM alone.
#   bash tools/run_h200_batch.sh correctness|timed|both   (outputs under $OUT, packed into one archive)
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
work=/tmp/h200-batch; mkdir -p "$work"
what=${1:-both}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$work/gpu.txt" 2>&1
if [ "$what" != timed ]; then
  timeout 250 python3 tools/wgmma_h200.py "$work/wgmma-h200.jsonl" > "$work/wgmma.log" 2>&1 &
  timeout 250 python3 tools/epilogue_h200.py "$work/epilogue-h200.jsonl" --only roundtrip,convert --jobs 6 > "$work/epilogue.log" 2>&1 &
  timeout 250 python3 tools/tma_coords_h200.py "$work/tma_coords_h200.jsonl" > "$work/tma_coords.log" 2>&1 &
  timeout 250 python3 tools/tma_boxes_h200.py "$work/tma-h200-boxes.jsonl" > "$work/tma_boxes.log" 2>&1 &
  timeout 240 python3 tools/hopper_gemm_h200.py --check > "$work/gemm_check.log" 2>&1
  wait
fi
if [ "$what" != correctness ]; then
  timeout 280 python3 tools/hopper_gemm_h200.py --quick --out "$work/hopper-gemm-h200.jsonl" > "$work/gemm.log" 2>&1
fi
tar czf "$OUT/batch.tgz" -C "$work" .
for f in "$work"/*.log; do echo "== $f"; tail -n 25 "$f"; done
