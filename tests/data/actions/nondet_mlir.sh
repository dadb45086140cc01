#!/bin/bash
# Not deterministic: each run bumps the count in $NONDET_STATE and compiles ub.mlir on odd
# runs, ub_extra.mlir (one more function: more actions) on even runs; NONDET_MODE=order:
# ub_swapped.mlir on even runs (the same functions in the other order: the same totals,
# other actions first). Otherwise ub_mlir.sh.
here=$(cd "$(dirname "$0")" && pwd)
n=$(( $(cat "$NONDET_STATE" 2>/dev/null || echo 0) + 1 )); echo $n > "$NONDET_STATE"
other=ub_extra.mlir; [ "${NONDET_MODE:-count}" = order ] && other=ub_swapped.mlir
if (( n % 2 )); then input=ub.mlir; else input=$other; fi
INPUT=$input exec "$here/ub_mlir.sh"
