#!/bin/bash
# IREE on the CPU (haswell: it has FMA): a*b + c with fastmath<contract>, a = b = 1+2^-12,
# c = -(1+2^-11). A separate multiply rounds a*b first: result 0, good (exit 0). Fused into
# one vfmadd (x86-isel, then one DAG combine): 2^-24 = 5.96046E-08, bad (exit 1). A compile
# or run that fails is skip (125). $BISECTKIT_ACTIONS is spliced unquoted; the compiler's
# stderr (its BISECT and DebugCounter lines) goes to $BISECTKIT_ACTION_LOG.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) || exit 125
trap 'rm -rf "$tmp"' EXIT
log=${BISECTKIT_ACTION_LOG:-/dev/stderr}
# shellcheck disable=SC2086
iree-compile --iree-hal-target-device=local \
  --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=haswell \
  "$here/fma.mlir" -o "$tmp/fma.vmfb" $BISECTKIT_ACTIONS 2>>"$log" || exit 125
out=$(iree-run-module --module="$tmp/fma.vmfb" --function=fmadd \
  --input="4xf32=1.000244140625 1 2 3" --input="4xf32=1.000244140625 1 2 3" \
  --input="4xf32=-1.00048828125 0 0 0" 2>&1) || { echo "$out"; exit 125; }
echo "$out"
case "$out" in
  *"4xf32=0 1 4 9"*) exit 0 ;;
  *"4xf32=5.96046E-08 1 4 9"*) exit 1 ;;
  *) exit 125 ;;
esac
