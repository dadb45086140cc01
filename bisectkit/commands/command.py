"""What a command is: its words (the description, the examples), its arguments and its
handler, declared together in the command's own module.

:mod:`bisectkit.commands.registry` lists each program's commands (by name, with their
one-line help) and builds the program's parser from them; the entry points run the
handler of the command the command line chose (:func:`chosen`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pluggy

from bisectkit.cli import about

if TYPE_CHECKING:  # a command's module imports what its handler needs; listing it, nothing
    from bisectkit.commands.context import Context

#: Runs a command: the parsed command line in, the exit code out.
Handler = Callable[["Context", argparse.Namespace], int]
#: Declares a command's arguments on its subparser; the plugin manager (None when the
#: parser is built for the man pages or a replayed log) adds the plugins' run options.
Arguments = Callable[[argparse.ArgumentParser, pluggy.PluginManager | None], None]

#: The namespace attribute that holds the command the command line chose.
_KEY = "_registered_command"


def no_arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    """A command that takes no arguments (``-h`` aside)."""


@dataclass(frozen=True)
class Command:
    """One subcommand of ``bisectkit`` or ``git bisect-patched`` (its name, aliases and
    one-line help are its line in :mod:`bisectkit.commands.registry`).

    ``description`` and ``examples`` are what ``-h``, ``help`` and the man pages say
    (``tests/test_manpage.py`` wants both, and the one-line help); ``examples`` are
    command lines after the program's name.
    """

    name: str
    description: str
    examples: tuple[str, ...]
    handler: Handler
    arguments: Arguments = no_arguments
    #: argparse's usage line, when the generated one would mislead.
    usage: str | None = None
    #: The one usage line a refusal of the command line shows, when the one made from the
    #: parser would mislead (:meth:`bisectkit.cli.about.Parser.synopsis`).
    synopsis: str | None = None
    #: Epilog text shown before the examples.
    note: str = ""
    #: Runs builds and repros: it gets the run options, the plugins' state and the output
    #: files, checked before anything moves.
    runs: bool = False
    #: Whether a command line of it needs a git repository (``actions`` does only with
    #: ``--at``): where there is none, that is said before the repro or build is looked at.
    needs_repository: Callable[[argparse.Namespace], bool] = lambda args: True

    def complete(self, p: argparse.ArgumentParser, prog: str,
                 pm: pluggy.PluginManager | None) -> None:
        """Complete ``p``, this command's parser in a program's subcommands (added with its
        name, aliases and one-line help; ``prog``: the program's name)."""
        p.usage, p.description = self.usage, self.description
        p.epilog = about.example(*(f"{prog} {e}" for e in self.examples), note=self.note)
        self.arguments(p, pm)
        if isinstance(p, about.Parser):
            p.short_usage = self.synopsis
        p.set_defaults(**{_KEY: self})


def chosen(args: argparse.Namespace) -> Command:
    """The command the parsed command line ``args`` is for."""
    command = vars(args)[_KEY]
    assert isinstance(command, Command)
    return command
