#!/bin/bash
# opt's default<O2> folds `add nsw` + `icmp sgt` of checked_add.ll to true (EarlyCSE
# exploits the undefined overflow); lli runs main, whose exit status is checked_add's
# result: 0 good (the addition wrapped), 1 bad (folded). $LLVM: 19 (default) or 14.
# $BISECTKIT_ACTIONS is spliced unquoted into opt's command line; tool failure: skip.
here=$(cd "$(dirname "$0")" && pwd); v=${LLVM:-19}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
opt-$v -S -passes='default<O2>' $BISECTKIT_ACTIONS "$here/checked_add.ll" -o "$tmp/o.ll" || exit 125
lli-$v "$tmp/o.ll"; rc=$?
echo "main returned $rc"
case $rc in 0) exit 0;; 1) exit 1;; *) exit 125;; esac
