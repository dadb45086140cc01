"""Refusals through the real CLI: exit 2, one line on stderr naming the problem, nothing
left behind; a command line that does not parse has its command's usage line above it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.worlds import World


def state_dir(world: World) -> Path:
    return world.superproject / ".git" / "bisectkit"


def one_error(proc: subprocess.CompletedProcess[str], code: int, *words: str,
              prog: str = "bisectkit") -> str:
    """Exit ``code`` and exactly one line on stderr, ``PROG: error: ...`` naming ``words``;
    a command line that does not parse has its command's usage in one line above it
    (:func:`usage_error`)."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    if lines and lines[0].startswith("usage: "):
        return usage_error(proc, *words, prog=prog)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def usage_error(proc: subprocess.CompletedProcess[str], *words: str,
                prog: str = "bisectkit") -> str:
    """A command line that does not parse: exit 2, the command's own usage in one line
    that fits 80 columns (``usage: bisectkit run [options] ...``, not the program's), then
    one error line naming ``words`` and where the command's help is."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    args = [str(a) for a in proc.args]
    program = next(i for i, a in enumerate(args)
                   if a == "bisect-patched" or a.endswith("bisectkit"))
    command = args[program + 1]
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    assert f"{lines[0]} ".startswith(f"usage: {prog} {command} "), lines[0]
    assert len(lines[0]) <= 80, lines[0]
    assert lines[1].startswith(f"{prog}: error: "), lines[1]
    assert lines[1].endswith(f" (see '{prog} help {command}')"), lines[1]
    for word in words:
        assert word in lines[1], (word, lines[1])
    return lines[1]


def refused(world: World, proc: subprocess.CompletedProcess[str], *words: str,
            prog: str = "bisectkit") -> None:
    """Exit 2 in one line, and no session, journal or lock left behind."""
    one_error(proc, 2, *words, prog=prog)
    for name in ("session.json", "journal", "lock", "waiting.json", "workspaces"):
        assert not (state_dir(world) / name).exists(), name
