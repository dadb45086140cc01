#!/bin/bash
# MLIR: int-range-optimizations trusts `overflow<nsw>` in ub.mlir's @check and replaces
# the call in @main by 1 (MaterializeKnownConstantValues). good = the runner prints 0
# (the addition wrapped), bad = 1. Only the optimising mlir-opt gets $BISECTKIT_ACTIONS
# (spliced unquoted); lowering to LLVM is a second mlir-opt, so every limit lowers.
# $INPUT: another input next to this script (the non-deterministic repro's).
here=$(cd "$(dirname "$0")" && pwd)
PIPE='builtin.module(func.func(canonicalize,cse),int-range-optimizations,func.func(canonicalize,cse))'
LOWER='builtin.module(convert-arith-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)'
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mlir-opt-19 "$here/${INPUT:-ub.mlir}" --pass-pipeline="$PIPE" --mlir-disable-threading $BISECTKIT_ACTIONS >"$tmp/opt.mlir" || exit 125
mlir-opt-19 "$tmp/opt.mlir" --pass-pipeline="$LOWER" >"$tmp/llvm.mlir" || exit 125
out=$(mlir-cpu-runner-19 -e main -entry-point-result=i32 -O0 "$tmp/llvm.mlir") || exit 125
echo "result=$out"
case "$out" in 0) exit 0;; 1) exit 1;; *) exit 125;; esac
