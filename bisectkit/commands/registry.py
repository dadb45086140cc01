"""The commands of ``bisectkit`` and ``git bisect-patched``, in the order ``help`` and the
man pages list them, and each program's parser, built from them.

Each command is listed here by its words (its name, its aliases and its one-line help:
what the program's ``-h`` and an unknown command's refusal show) and by the module
that declares the rest, a :class:`~bisectkit.commands.command.Command` (its
description, its arguments, its handler). A process imports only the module of the
command it runs: every ``good``, ``bad`` or ``status`` of a session is a new process,
which would otherwise pay at every step for importing every command and all they import.

A new command is a module beside this one that declares its ``Command``, and its line
below.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from dataclasses import dataclass

import pluggy

from bisectkit.cli.parser import program
from bisectkit.commands.command import Command
from bisectkit.model import GIT_PROG


@dataclass(frozen=True)
class Entry:
    """A command as its program lists it, its module not imported."""

    name: str
    #: The one-line help (``-h``, ``help``, the man pages' COMMANDS).
    help: str
    #: The module under :mod:`bisectkit.commands` that declares it, and the name there
    #: of its :class:`Command` (or of a tuple of commands, one of them named ``name``).
    module: str
    attribute: str = "COMMAND"
    aliases: tuple[str, ...] = ()

    def command(self) -> Command:
        """The command, its module imported."""
        declared = getattr(importlib.import_module(f"{__package__}.{self.module}"),
                           self.attribute)
        for command in declared if isinstance(declared, tuple) else (declared,):
            if isinstance(command, Command) and command.name == self.name:
                return command
        raise LookupError(f"bisectkit.commands.{self.module}.{self.attribute} declares no "
                          f"command '{self.name}'")


#: The one-line help of each mark (its description repeats what follows the colon).
MARKS = {
    "good": "mark good: the repro passes there (the old side)",
    "bad": "mark bad: the regression is there (the new side)",
    "skip": "mark skip: it cannot be tested; a neighbour is tested instead",
    "old": "mark old: the side before the change (--term-old WORD: also WORD)",
    "new": "mark new: the side after the change (--term-new WORD: also WORD)",
}

_SHOW_STEP = Entry("show-step", "print the kept build and repro output of step N", "show_step")
_HELP = Entry("help", "print the usage of every command, or the help of one", "help")
#: ``visualize``, whose other words are git log's (the entry point reads them apart).
VISUALIZE = Entry("visualize", "list the candidates left and their verdicts (alias: view)",
                   "visualize", aliases=("view",))

#: ``bisectkit``'s commands.
BISECTKIT: tuple[Entry, ...] = (
    Entry("run", "start, run, report and reset in one go", "run", "BISECTKIT"),
    Entry("status", "show a patched submodule against its upstream", "stack_status"),
    Entry("advance", "find how far the submodule's pin can move toward upstream (and move it)",
           "advance"),
    Entry("actions", "find the first compiler action (pass, pattern) that turns the output "
                      "bad", "actions"),
    Entry("workspaces", "list the workspaces of --jobs (or remove them)", "workspaces"),
    Entry("plugins", "list loaded plugins, their origin and hooks", "plugins"),
    _SHOW_STEP,
    _HELP,
)

#: ``git bisect-patched``'s commands.
GIT: tuple[Entry, ...] = (
    Entry("start", "start a session and check out the first candidate", "start"),
    *(Entry(word, summary, "mark", "COMMANDS") for word, summary in MARKS.items()),
    Entry("next", "check out the candidate to test now (again)", "next_step"),
    Entry("run", "build and test candidates automatically until done", "run", "GIT"),
    Entry("status", "show the session", "status"),
    Entry("log", "print a log that 'replay' (or, with --git, 'git bisect replay') accepts",
           "log"),
    Entry("replay", "start over from a log (bisect-patched's or git bisect's)", "replay"),
    Entry("reset", "restore every HEAD and end the session (then check out COMMIT)", "reset"),
    VISUALIZE,
    Entry("terms", "print the words for the old and new states", "terms"),
    _SHOW_STEP,
    _HELP,
)


def build_parser(git_mode: bool = False, pm: pluggy.PluginManager | None = None, *,
                 lazy: bool = False) -> argparse.ArgumentParser:
    """The parser of ``git bisect-patched`` (``git_mode``) or of ``bisectkit``.

    With ``pm``, plugins add their options to the commands that run builds
    (``bisectkit_addoption``). ``lazy``: each command's parser is completed (its module
    imported) only when it is used (:class:`~bisectkit.cli.about.Subcommands`): the
    entry point's, which runs one command; otherwise every one is complete.
    """
    prog = GIT_PROG if git_mode else "bisectkit"
    parser, subcommands = program(prog)
    for entry in GIT if git_mode else BISECTKIT:
        sub = subcommands.add_parser(entry.name, aliases=list(entry.aliases), help=entry.help)
        subcommands.defer(sub, functools.partial(_complete, entry, prog, pm))
    if not lazy:
        subcommands.complete_all()
    return parser


def _complete(entry: Entry, prog: str, pm: pluggy.PluginManager | None,
              p: argparse.ArgumentParser) -> None:
    entry.command().complete(p, prog, pm)

