#!/bin/bash
# Non-monotone: bad = the optimised IR has a `select` (SimplifyCFG makes one of @pick's
# phi, InstCombine later turns it into a zext) OR main returns 1 (the nsw overflow of
# @checked_add folded to true). So bad, then good again, then bad for good.
here=$(cd "$(dirname "$0")" && pwd); v=${LLVM:-19}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
opt-$v -S -passes='default<O2>' $BISECTKIT_ACTIONS "$here/nonmono.ll" -o "$tmp/o.ll" || exit 125
if grep -q ' select ' "$tmp/o.ll"; then echo "has select"; exit 1; fi
lli-$v "$tmp/o.ll"; rc=$?
echo "main returned $rc"
case $rc in 0) exit 0;; 1) exit 1;; *) exit 125;; esac
