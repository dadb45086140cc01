"""What a session leaves on disk, and a command SIGKILLed at a chosen git command."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from helpers.sessions import write_script
from helpers.worlds import GIT_SUBCOMMAND_SH, World, snapshot

#: bisectkit's records, relative to the superproject.
STATE = Path(".git") / "bisectkit"


def state_dir(world: World) -> Path:
    return world.superproject / STATE


def full_state(world: World) -> dict[str, str]:
    """``snapshot`` plus ignored files: what a restore must leave exactly as it found."""
    state = snapshot(world)
    for name, repo in (("super", world.superproject), ("sub", world.submodule)):
        state[f"{name}_ignored"] = world.git(repo, "status", "--porcelain", "--ignored")
    return state


#: A git for PATH that, at the first ``git <subcommand>`` it is asked for, kills bisectkit
#: (its parent) with SIGKILL: just "after" that git, "during" it (git goes on and
#: finishes in its own session, as a real checkout does), or with the git itself
#: "holding" a lock file (it takes the file, as git does, and dies too: the whole
#: process tree killed at once, by the OOM killer or a CI time limit). ``update-ref
#: --stdin``, the publication of ``refs/bisect/*`` beside every move, is let through
#: unless asked for: the kill lands on the git that moves what the test names.
KILL_AT = GIT_SUBCOMMAND_SH + """\
stdin=; for a in "$@"; do [ "$a" = --stdin ] && stdin=1; done
if [ "$sub" = "{subcommand}" ] && [ ! -e "{fired}" ] && \\
   {{ [ -z "$stdin" ] || [ -n "{publishing}" ]; }} && \\
   {{ [ -z "{only_in}" ] || [ "$(pwd -P)" = "{only_in}" ]; }}; then
  : > "{fired}"
  case "{mode}" in
    after) "{git}" "$@"; rc=$?; kill -9 $PPID; exit $rc ;;
    during) "{git}" "$@" & pid=$!; kill -9 $PPID; wait $pid; exit $? ;;
    holding-*) mode="{mode}"
               : > "$("{git}" rev-parse --absolute-git-dir)/${{mode#holding-}}"
               kill -9 $PPID; kill -9 $$ ;;
  esac
fi
exec "{git}" "$@"
"""


def killed_at(world: World, tmp_path: Path, subcommand: str, mode: str, *args: str,
              exe: str = "git-bisect-patched", only_in: Path | None = None,
              publishing: bool = False) -> None:
    """Run ``exe args``, SIGKILLed at its first ``git subcommand`` (run in ``only_in``, if
    given; ``publishing``: ``update-ref --stdin`` too; ``mode``: see :data:`KILL_AT`)."""
    shim = tmp_path / f"shim-{subcommand}-{mode}".replace("/", "%")
    shim.mkdir()
    write_script(shim / "git", KILL_AT.format(
        subcommand=subcommand, mode=mode, git=shutil.which("git"), fired=shim / "fired",
        only_in=only_in.resolve() if only_in else "", publishing="1" if publishing else ""))
    env = dict(world.env, PATH=f"{shim}{os.pathsep}{world.env['PATH']}")
    path = shutil.which(exe)
    assert path is not None, exe
    proc = subprocess.run([path, *args], cwd=world.superproject, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == -signal.SIGKILL, (proc.stdout, proc.stderr)
