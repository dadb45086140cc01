#!/bin/bash
# A repro that forgot $BISECTKIT_ACTIONS: the compiler never hears of the limit.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
opt-19 -S -passes='default<O2>' "$here/checked_add.ll" -o "$tmp/o.ll" || exit 125
lli-19 "$tmp/o.ll"; rc=$?
case $rc in 0) exit 0;; 1) exit 1;; *) exit 125;; esac
