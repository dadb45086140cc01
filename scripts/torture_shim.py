"""The git shim of the kill torture: a ``git`` first on PATH that counts the git commands
bisectkit runs and, at the Nth, stops bisectkit.

Modes at the Nth command:

- ``before``: SIGKILL before that git runs;
- ``during``: SIGKILL while it runs (git goes on and finishes, as a real
  checkout does in its own session);
- ``after``: SIGKILL just after it;
- ``signal``: the given catchable signal just after it;
- ``together``: SIGKILL to bisectkit *and* that git at the same instant, while
  git holds its locks. So that the instant is inside the write, git runs with a
  ``reference-transaction`` hook and a smudge/clean filter that report and
  pause (the ref locks taken, or ``index.lock`` held with the work tree half
  written); bisectkit, git, the pausing hook and the shim (the pid bisectkit
  journaled) are then killed in one ``kill``. A git that takes no lock one
  can pause in (``symbolic-ref``, ``update-index --cacheinfo``, reads) is
  killed with bisectkit just after it, as in ``after``; the shim says which
  (:func:`together_outcome`).

The ``stop`` target is the nearest ancestor that is bisectkit or ``git
bisect-patched`` (a build or script of bisectkit's may run git too).
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

from bisectkit.git.cli import argv as git_argv

SHIM = """#!/bin/sh
# bisectkit torture shim: count git commands; at the Nth, stop bisectkit.
# The count is taken under a lock: with --jobs, worker threads run git at the same time.
exec 9>>"{count}.lock"
flock 9
count=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "{count}"
# The log shows each command without the settings bisectkit pins on every one.
line="$*"
echo "$count ${{line#{pinned} }}" >> "{count}.log"
exec 9>&-
if [ "$count" -eq {n} ]; then
  # Whom to stop: the nearest ancestor that is bisectkit (our parent, unless a script of
  # bisectkit's runs this git), else our parent.
  target=$PPID
  while [ "$target" -gt 1 ]; do
    case "$(tr '\\0' ' ' < /proc/$target/cmdline 2>/dev/null)" in
      *python*bisectkit*|*python*bisect-patched*) break ;;
    esac
    target=$(awk '{{print $4}}' /proc/$target/stat 2>/dev/null || echo 1)
  done
  [ "$target" -gt 1 ] || target=$PPID
  # A background command's stdin is /dev/null unless redirected: keep ours (commit-tree's
  # message, fetch --stdin's objects) through fd 3.
  exec 3<&0
  case "{mode}" in
    before) kill -9 $target; exit 128 ;;
    during) "{git}" "$@" <&3 3<&- & pid=$!; kill -9 $target; wait $pid; exit $? ;;
    after) "{git}" "$@"; rc=$?; kill -9 $target; exit $rc ;;
    signal) "{git}" "$@"; rc=$?; kill -{sig} $target; exit $rc ;;
    together)
      paused="{count}.paused"
      rm -f "$paused"
      # bisectkit's pins (-c pairs, no spaces) come first; ours go after them, to win.
      pins=
      while [ "$1" = -c ]; do pins="$pins -c $2"; shift 2; done
      "{git}" $pins -c core.hooksPath="{tools}/hooks" \\
        -c core.attributesFile="{tools}/attributes" \\
        -c filter.torture.smudge="{tools}/pause filter" \\
        -c filter.torture.clean="{tools}/pause filter" "$@" <&3 3<&- &
      pid=$!
      i=0
      while [ ! -s "$paused" ] && [ $i -lt 1000 ] && \\
            [ "$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null || echo Z)" != Z ]; do
        sleep 0.005; i=$((i + 1))
      done
      if [ -s "$paused" ]; then
        echo "paused" > "{count}.together"
        kill -9 $target $pid $(cat "$paused") $$
      fi
      echo "not paused" > "{count}.together"
      wait $pid; rc=$?; kill -9 $target; exit $rc ;;
  esac
fi
exec "{git}" "$@"
"""

#: git runs this while it holds its locks: as the reference-transaction hook (state
#: "prepared": every ref lock taken) and as a smudge/clean filter (index.lock held).
PAUSE = """#!/bin/sh
[ "$1" = prepared ] || [ "$1" = filter ] || exit 0
sleep 30 &
echo "$$ $!" > "{paused}"
wait $!
[ "$1" = filter ] && exec cat
exit 0
"""


def write_shim(where: Path, n: int, mode: str, sig: int = signal.SIGINT) -> Path:
    """A ``git`` for PATH that stops bisectkit at its ``n``-th git command (0: never)."""
    where.mkdir(parents=True, exist_ok=True)
    count = where / "count"
    for name in ("count", "count.log", "count.paused", "count.together"):
        (where / name).unlink(missing_ok=True)
    real = shutil.which("git")
    assert real is not None
    tools = where / "tools"
    (tools / "hooks").mkdir(parents=True, exist_ok=True)
    pause = tools / "pause"
    pause.write_text(PAUSE.format(paused=where / "count.paused"), encoding="utf-8")
    pause.chmod(0o755)
    hook = tools / "hooks" / "reference-transaction"
    hook.unlink(missing_ok=True)
    hook.symlink_to(pause)
    (tools / "attributes").write_text("* filter=torture\n", encoding="utf-8")
    shim = where / "git"
    shim.write_text(SHIM.format(count=count, n=n, mode=mode, git=real, sig=int(sig),
                                tools=tools, pinned=" ".join(git_argv()[1:])),
                    encoding="utf-8")
    shim.chmod(0o755)
    return where


def shim_log(where: Path) -> list[str]:
    """The git commands the shim at ``where`` counted (their arguments)."""
    log = where / "count.log"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [line.partition(" ")[2] for line in lines]




def together_outcome(where: Path) -> str | None:
    """What a ``together`` kill of the shim at ``where`` hit (None: it did not fire)."""
    said = where / "count.together"
    if not said.exists():
        return None
    if said.read_text(encoding="utf-8").strip() == "paused":
        return "git killed holding its locks"
    return "git took no lock to pause in: killed after it"
