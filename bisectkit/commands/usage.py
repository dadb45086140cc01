"""``help [COMMAND]`` and ``--help``: the usage of every command, and the manual.

``git bisect-patched --help`` never reaches bisectkit: git runs ``man
git-bisect-patched``, which finds the page installed with the wheel
(``<prefix>/share/man/man1``, found from ``<prefix>/bin`` on PATH). Run directly,
``--help`` opens the same page in a terminal and prints argparse's help otherwise
(a pipe, CI), so it never waits for a pager nobody reads.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import TextIO

from bisectkit.cli import manpage
from bisectkit.errors import BadInput

#: ``help``'s lines are wrapped to the terminal, within these bounds.
_MIN_WIDTH, _MAX_WIDTH = 60, 100


def cmd_help(parser: argparse.ArgumentParser, topic: str | None, out: TextIO) -> int:
    """``help``: every command's usage and summary, as ``git bisect help``; ``help COMMAND``:
    that command's ``-h``."""
    listed = list(manpage.commands(parser))
    if topic is not None:
        for name, _, sub in listed:
            if name == topic:
                out.write(sub.format_help())
                return 0
        raise BadInput(f"no command '{topic}' (commands: {', '.join(n for n, _, _ in listed)})")
    width = max(_MIN_WIDTH, min(_MAX_WIDTH, shutil.get_terminal_size().columns))
    out.write(f"usage: {parser.prog} [{'|'.join(name for name, _, _ in listed)}]\n\n")
    for _, summary, sub in listed:
        out.write("\n".join(manpage.usage_lines(sub, width - 1)) + f"\n        {summary}\n")
    page = parser.prog.replace(" ", "-")
    out.write(f"\n'{parser.prog} help COMMAND' prints a command's options.\n"
              f"The manual: man {page}\n")
    return 0


def show_manual(parser: argparse.ArgumentParser, out: TextIO) -> int:
    """``--help``: the man page in a terminal (where ``man`` is installed), else ``-h``."""
    page = parser.prog.replace(" ", "-")
    man = shutil.which("man")
    if man is not None and out.isatty():
        found = manual_page(page)
        argv = [man, "-l", str(found)] if found else [man, page]
        out.flush()
        # A page man cannot find or render: argparse's help below, instead of nothing.
        if (found or _man_knows(man, page)) and subprocess.run(argv).returncode == 0:
            return 0
    out.write(parser.format_help())
    return 0


def manual_page(page: str) -> Path | None:
    """The page ``page`` that belongs to this bisectkit: installed with it (a wheel puts
    data files under the install scheme's data path), else the checkout's copy (an editable
    install installs no data files)."""
    name = f"{page}.1"
    data = [sysconfig.get_path("data"),
            sysconfig.get_path("data", sysconfig.get_preferred_scheme("user"))]
    for directory in [*(Path(d) / manpage.MAN_DIR for d in data if d), manpage.SOURCE_DIR]:
        if (directory / name).is_file():
            return directory / name
    return None


def _man_knows(man: str, page: str) -> bool:
    """Whether ``man`` finds ``page`` on its own path (say, installed by a distribution)."""
    return subprocess.run([man, "-w", page], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0
