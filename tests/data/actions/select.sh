#!/bin/bash
# bad = the optimised IR has a `select`. SimplifyCFG makes one, InstCombine removes it:
# the full pipeline is good again, so the ends are not good/bad.
here=$(cd "$(dirname "$0")" && pwd); v=${LLVM:-19}
out=$(opt-$v -S -passes='default<O2>' $BISECTKIT_ACTIONS "$here/select.ll") || exit 125
if grep -q ' select ' <<<"$out"; then echo "has select"; exit 1; fi
echo "no select"; exit 0
