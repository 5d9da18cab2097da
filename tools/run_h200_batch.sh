#!/usr/bin/env bash
# The lead's batching of H200 work into few device calls (each tool is documented in its own file): correctness
# tools in parallel (small kernels, untimed), then the timed sweeps one after the other, alone on the GPU.
#   bash tools/run_h200_batch.sh b|c|d|e|f|g|h|i|j|k|l|m   (outputs under $OUT, packed into one archive)
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
w=/tmp/h200-batch; mkdir -p "$w"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$w/gpu.txt" 2>&1
case "${1:-b}" in
b)
  python3 tools/prebuild_h200.py --jobs 12 > "$w/prebuild.log" 2>&1 &
  for g in im2col hint interleave; do
    timeout 200 python3 tools/tma_boxes_h200.py "$w/tma-boxes-$g.jsonl" --only "$g" > "$w/tma_boxes_$g.log" 2>&1 &
  done
  timeout 150 python3 tools/interp_h200.py "$w/interpreter-h200.jsonl" > "$w/interp.log" 2>&1 &
  timeout 220 python3 tools/hopper_gemm_h200.py --check --ok "$w/gemm_ok.json" > "$w/gemm_check.log" 2>&1
  wait
  timeout 240 python3 tools/hopper_gemm_h200.py --quick --ok "$w/gemm_ok.json" --out "$w/hopper-gemm-h200.jsonl" > "$w/gemm.log" 2>&1
  timeout 90 python3 tools/epilogue_h200.py "$w/epilogue-stream.jsonl" --only stream > "$w/epilogue_stream.log" 2>&1
  ;;
c)
  python3 tools/prebuild_h200.py --jobs 14 > "$w/prebuild.log" 2>&1
  timeout 120 python3 tools/pipeline_h200.py "$w/pipeline-h200.jsonl" > "$w/pipeline.log" 2>&1
  timeout 50 python3 tools/epilogue_h200.py "$w/epilogue-bank.jsonl" --only bank --bank-every 8 > "$w/epilogue_bank.log" 2>&1
  timeout 170 python3 tools/sanitize_h200.py "$w/sanitizer-h200.jsonl" --tools plain,memcheck,racecheck,synccheck --jobs 12 --timeout 90 > "$w/sanitize.log" 2>&1 &
  timeout 160 python3 tools/tma_coords_h200.py "$w/tma_coords_h200.jsonl" > "$w/tma_coords.log" 2>&1 &
  [ -f tools/blockscaled_gemm_h200.py ] && timeout 165 python3 tools/blockscaled_gemm_h200.py "$w/blockscaled-gemm-h200.jsonl" > "$w/bsgemm.log" 2>&1 &
  wait
  ;;
d)
  # The feed rate first, alone on the GPU; then the correctness runs side by side.
  python3 tools/prebuild_h200.py --jobs 14 --only rate > "$w/prebuild.log" 2>&1
  timeout 170 python3 tools/pipeline_h200.py --rate "$w/pipeline-rate-h200.jsonl" > "$w/pipeline_rate.log" 2>&1
  timeout 380 python3 tools/sanitize_h200.py "$w/sanitizer-h200-run2.jsonl" --only stream/ --only wgmma/ \
    --only epilogue/ --only example/ --only cp-async/u8-rows-45B-arrive-residue \
    --tools plain,memcheck,racecheck,synccheck --jobs 9 --timeout 300 > "$w/sanitize.log" 2>&1 &
  timeout 200 python3 tools/tma_coords_h200.py "$w/tma-h200-coords-run3.jsonl" > "$w/tma_coords.log" 2>&1 &
  timeout 380 python3 tools/blockscaled_gemm_h200.py "$w/blockscaled-gemm-h200-run3.jsonl" --match persistent \
    > "$w/bsgemm_persistent.log" 2>&1 &
  (timeout 300 python3 tools/blockscaled_gemm_h200.py "$w/blockscaled-gemm-h200-bf16.jsonl" --match bf16 \
    > "$w/bsgemm_bf16.log" 2>&1; bash tools/soft_diag.sh "$w" > "$w/soft_diag.log" 2>&1) &
  wait
  ;;
f)
  timeout 200 python3 tools/feed_variants_h200.py "$w/feed-variants-h200.jsonl" > "$w/feed_variants.log" 2>&1
  timeout 300 python3 tools/sanitize_h200.py "$w/sanitizer-h200-run3.jsonl" --only example/blockscaled-gemm-nvfp4-g2 \
    --tools racecheck,synccheck --jobs 2 --timeout 290 > "$w/sanitize3.log" 2>&1 &
  bash tools/soft_diag.sh "$w" > "$w/soft_diag2.log" 2>&1 &
  wait
  ;;
h)
  python3 tools/prebuild_h200.py --jobs 14 --only rate > "$w/prebuild.log" 2>&1
  timeout 240 python3 tools/pipeline_h200.py --rate "$w/pipeline-rate-h200-run3.jsonl" --mnk=8192,8192,4096 \
    --mnk=7680,7680,4096 > "$w/pipeline_rate3.log" 2>&1
  ;;
g)
  python3 tools/prebuild_h200.py --jobs 14 --only rate > "$w/prebuild.log" 2>&1
  timeout 200 python3 tools/pipeline_h200.py --rate "$w/pipeline-rate-h200-run2.jsonl" > "$w/pipeline_rate2.log" 2>&1
  timeout 300 python3 tools/sanitize_h200.py "$w/sanitizer-h200-soft.jsonl" --only tcgen05- --only example/blockscaled-sf \
    --only mma-soft --only chain-soft --only example/attention --only example/epilogue-soft --jobs 8 --timeout 200 \
    > "$w/sanitize_soft.log" 2>&1 &
  timeout 420 python3 tools/sanitize_h200.py "$w/sanitizer-h200-gemm.jsonl" --only example/blockscaled-gemm-nvfp4-g2 \
    --tools racecheck --jobs 1 --timeout 410 > "$w/sanitize_gemm.log" 2>&1 &
  wait
  ;;
i)
  # The feed's gap (raster / L2 variants timed alone, then ncu), then racecheck over the MBARRIER_FIRST kernels.
  timeout 200 python3 tools/feed_gap_h200.py --sweep "$w/feed-gap-h200.jsonl" > "$w/feed_gap.log" 2>&1
  timeout 200 python3 tools/feed_gap_h200.py --ncu "$w/feed-gap-ncu-h200.jsonl" > "$w/feed_gap_ncu.log" 2>&1
  timeout 220 python3 tools/sanitize_h200.py "$w/sanitizer-h200-run4.jsonl" --only bulk/ --only dsmem/ \
    --only tma/f32-2d-plain --only stream/dsmem-ring --tools plain,racecheck,memcheck,synccheck --jobs 10 \
    --timeout 150 > "$w/sanitize4.log" 2>&1
  ;;
j)
  # Hand-written baselines with consumers and L2 prefetch, timed alone; then the soft nvfp4 MMA under racecheck alone.
  timeout 240 python3 tools/feed_gap_h200.py --hand "$w/feed-hand-h200.jsonl" > "$w/feed_hand.log" 2>&1
  timeout 330 python3 tools/sanitize_h200.py "$w/sanitizer-h200-run5.jsonl" --only mma-soft/nvfp4 --tools plain,racecheck \
    --jobs 1 --timeout 320 > "$w/sanitize5.log" 2>&1
  ;;
k)
  # The feed under source edits that each take one difference from the hand-written kernel away, timed alone.
  timeout 300 python3 tools/feed_gap_h200.py --hand "$w/feed-edits-h200.jsonl" --edits > "$w/feed_edits.log" 2>&1
  ;;
l)
  # The feed with the warp producer: beside the hand-written kernels and the old forms; the rate run on both
  # problems; the Hopper GEMM's load warp in both forms beside cuBLAS.
  python3 tools/prebuild_h200.py --jobs 14 --only rate > "$w/prebuild.log" 2>&1
  timeout 150 python3 tools/feed_gap_h200.py --hand "$w/feed-edits-h200-run5.jsonl" --edits > "$w/feed_edits5.log" 2>&1
  timeout 200 python3 tools/pipeline_h200.py --rate "$w/pipeline-rate-h200-run4.jsonl" --mnk=8192,8192,4096 \
    --mnk=7680,7680,4096 > "$w/pipeline_rate4.log" 2>&1
  timeout 200 python3 tools/gemm_producer_h200.py "$w/gemm-producer-h200.jsonl" > "$w/gemm_producer.log" 2>&1
  ;;
m)
  # The kernels whose load warp changed form: the feed and the Hopper GEMM under every tool, the block-scaled GEMM's
  # soft build against the reference (the persistent cases) and under memcheck, racecheck and synccheck.
  timeout 150 python3 tools/sanitize_h200.py "$w/sanitizer-h200-run6.jsonl" --only stream/feed --only example/hopper-gemm \
    --tools plain,memcheck,racecheck,synccheck --jobs 6 --timeout 140 > "$w/sanitize6.log" 2>&1 &
  timeout 330 python3 tools/sanitize_h200.py "$w/sanitizer-h200-run6-soft.jsonl" --only example/blockscaled-gemm-mxf8-g1-soft \
    --tools plain,memcheck,racecheck,synccheck --jobs 3 --timeout 320 > "$w/sanitize6_soft.log" 2>&1 &
  timeout 330 python3 tools/blockscaled_gemm_h200.py "$w/blockscaled-gemm-h200-run4.jsonl" --match persistent --jobs 8 \
    > "$w/bsgemm4.log" 2>&1 &
  wait
  ;;
e)
  timeout 120 python3 tools/epilogue_h200.py "$w/epilogue-bank-ld.jsonl" --only bank --bank-every 4 --bank-ops ld \
    > "$w/epilogue_bank_ld.log" 2>&1
  ;;
esac
tar czf "$OUT/batch.tgz" -C "$w" .
for f in "$w"/*.log; do echo "== $f"; tail -n 12 "$f" | cut -c1-220; done
