#!/bin/bash
# Run every cp.async / bulk / DSMEM case of tests/copy/flat_cases.py on the GPU, one child process each, and the
# DSMEM-to-self probe; one JSON verdict per line (docs/cp-async-bulk-dsmem.md records the H200's).
out=${1:-/dev/stdout}
names=$(python -c "from tests.copy.flat_cases import BULK, CP_ASYNC, DSMEM; print(' '.join(c[0] for c in CP_ASYNC + BULK + DSMEM))")
for n in $names dsmem-to-self; do
  timeout 120 python -m tests.gpu.flat_probe "$n" 2>/tmp/err.txt | tail -1 >> "$out" || echo "{\"case\": \"$n\", \"failed\": \"$(tail -c 300 /tmp/err.txt | tr '\n"' ' ')\"}" >> "$out"
done
