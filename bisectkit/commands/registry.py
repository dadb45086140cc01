"""The commands of ``bisectkit`` and ``git bisect-patched``, in the order ``help`` and the
man pages list them, and each program's parser, built from them.

A new command is a module beside this one that declares a
:class:`~bisectkit.commands.command.Command` (its words, its arguments, its
handler), and its line below.
"""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.cli.parser import program
from bisectkit.commands import (
    actions,
    advance,
    help,
    log,
    mark,
    next_step,
    plugins,
    replay,
    reset,
    run,
    show_step,
    stack_status,
    start,
    status,
    terms,
    visualize,
    workspaces,
)
from bisectkit.commands.command import Command
from bisectkit.model import GIT_PROG

#: ``bisectkit``'s commands.
BISECTKIT: tuple[Command, ...] = (
    run.BISECTKIT,
    stack_status.COMMAND,
    advance.COMMAND,
    actions.COMMAND,
    workspaces.COMMAND,
    plugins.COMMAND,
    show_step.COMMAND,
    help.COMMAND,
)

#: ``git bisect-patched``'s commands.
GIT: tuple[Command, ...] = (
    start.COMMAND,
    *mark.COMMANDS,
    next_step.COMMAND,
    run.GIT,
    status.COMMAND,
    log.COMMAND,
    replay.COMMAND,
    reset.COMMAND,
    visualize.COMMAND,
    terms.COMMAND,
    show_step.COMMAND,
    help.COMMAND,
)


def build_parser(git_mode: bool = False,
                 pm: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """The parser of ``git bisect-patched`` (``git_mode``) or of ``bisectkit``.

    With ``pm``, plugins add their options to the commands that run builds
    (``bisectkit_addoption``).
    """
    prog = GIT_PROG if git_mode else "bisectkit"
    parser, subcommands = program(prog)
    for command in GIT if git_mode else BISECTKIT:
        command.register(subcommands, prog, pm)
    return parser
