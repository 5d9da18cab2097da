#!/usr/bin/env bash
# The soft tcgen05 builds' sanitizer findings, attributed (docs/sanitizer.md): the SASS of each kernel as this
# machine's NVRTC builds it (racecheck names offsets in it), and synccheck again with more tracked barriers.
#   bash tools/soft_diag.sh OUTDIR
set -u
out="$1"
python3 - "$out" <<'PY'
import sys
sys.path.insert(0, "tools")
import sanitize_h200 as s
cases = {c.name: c for c in s.registry()}
for name in ("tcgen05-cp-soft/128x256b-g2-128B-bf16", "tcgen05-ldst-soft/cp-g1-bf16-128B-ld-16x256b",
             "example/blockscaled-sf-pipeline-g1-soft"):
    compiled = cases[name].build("sm_90a")
    with open(f"{sys.argv[1]}/soft-{name.replace('/', '_')}.sass", "w") as f:
        f.write(compiled.sass())
    with open(f"{sys.argv[1]}/soft-{name.replace('/', '_')}.cu", "w") as f:
        f.write(compiled.source)
PY
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | tail -1)
for c in tcgen05-ldst-soft/st-M256-g2-f16-16x64b-ld-16x32bx2; do
  echo "== synccheck --num-cuda-barriers 64 $c"
  timeout 120 "$san" --tool synccheck --num-cuda-barriers 64 python3 tools/sanitize_h200.py --case "$c" 2>&1 | tail -n 8
done
for c in example/blockscaled-sf-pipeline-g1-soft tcgen05-ldst-soft/cp-g1-bf16-128B-ld-16x256b; do
  echo "== racecheck --print-limit 4 --racecheck-report all $c"
  timeout 120 "$san" --tool racecheck --racecheck-report all --print-limit 6 python3 tools/sanitize_h200.py --case "$c" 2>&1 \
    | grep -v "Host Frame" | tail -n 60
done
