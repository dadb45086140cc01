"""``help [COMMAND]`` (both programs): the usage and summary of every command, as ``git
bisect help`` prints them, or one command's ``-h``. (``--help``, the manual:
:func:`bisectkit.commands.manpage.show_manual`.)"""

from __future__ import annotations

import argparse
import shutil
from typing import TextIO

import pluggy

from bisectkit.cli import about
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput

#: ``help``'s lines are wrapped to the terminal, within these bounds.
_MIN_WIDTH, _MAX_WIDTH = 60, 100


def cmd_help(parser: argparse.ArgumentParser, topic: str | None, out: TextIO) -> int:
    """``help``: every command's usage and summary, as ``git bisect help``; ``help COMMAND``:
    that command's ``-h``."""
    listed = list(about.commands(parser))
    if topic is not None:
        for name, _, sub in listed:
            if name == topic:
                out.write(sub.format_help())
                return 0
        raise BadInput(f"no command '{topic}' (commands: {', '.join(n for n, _, _ in listed)})")
    width = max(_MIN_WIDTH, min(_MAX_WIDTH, shutil.get_terminal_size().columns))
    out.write(f"usage: {parser.prog} [{'|'.join(name for name, _, _ in listed)}]\n\n")
    for _, summary, sub in listed:
        out.write("\n".join(about.usage_lines(sub, width - 1)) + f"\n        {summary}\n")
    page = parser.prog.replace(" ", "-")
    out.write(f"\n'{parser.prog} help COMMAND' prints a command's options.\n"
              f"The manual: man {page}\n")
    return 0


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("topic", nargs="?", metavar="COMMAND", help="the command to show the help of")


def _handle(ctx: Context, args: argparse.Namespace) -> int:
    return cmd_help(ctx.parser, args.topic, ctx.console.file)


#: ``help``, in both programs.
COMMAND = Command(
    "help",
    description="Print the usage and summary of every command, as 'git bisect help' does; "
                "with COMMAND, that command's help (-h).",
    examples=("help", "help run"),
    arguments=_arguments, handler=_handle)
