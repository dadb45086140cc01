"""What is bisected, on the command line, without argparse above ``cli/``: a strategy's
own options as data (:class:`Option`, rendered by :func:`add_options`), and what a parsed
command line gave (:class:`Given`, read by :func:`read`), from which the strategy the
options chose builds its typed request (:mod:`bisectkit.strategies`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bisectkit.model import OnConflict, Terms


def dest_of(flag: str) -> str:
    """The name an option's value has once parsed, as argparse makes it (``--at`` -> ``at``,
    ``--term-old`` -> ``term_old``)."""
    return flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class Option:
    """One option of a strategy's own: a flag (no ``metavar``), or one that takes a value."""

    flag: str
    help: str
    metavar: str | None = None
    #: Checks and converts the value (an :mod:`bisectkit.cli.argtypes` type).
    type: Callable[[str], str] = str

    @property
    def dest(self) -> str:
        """The name its value has once parsed (``--at`` -> ``at``)."""
        return dest_of(self.flag)


def add_options(p: argparse.ArgumentParser, options: Sequence[Option]) -> None:
    """Declare ``options`` in ``p``, in order (a flag is ``store_true``)."""
    for option in options:
        if option.metavar is None:
            p.add_argument(option.flag, action="store_true", help=option.help)
        else:
            p.add_argument(option.flag, metavar=option.metavar, type=option.type,
                           help=option.help)


@dataclass(frozen=True)
class Given:
    """What a command line gave to say what is bisected: the options strategies share,
    checked (the terms, the pathspec), and the values of the strategies' own options."""

    submodules: tuple[str, ...] = ()
    upstream: str | None = None
    bad: str | None = None
    good: tuple[str, ...] = ()
    all_parents: bool = False
    on_conflict: OnConflict | None = None
    terms: Terms = Terms()
    pathspec: tuple[str, ...] = ()
    #: The submodule when none is named (the argument: the alternative its refusal offers,
    #: e.g. ``", --integrate"``); it may refuse. None: no repository to ask.
    default_submodule: Callable[[str], str | None] = lambda alternative: None
    #: Every strategy's own options, by ``Option.dest``: their values (None or False: not
    #: given, or not an option of this command).
    owned: Mapping[str, str | bool | None] = field(default_factory=dict)
    #: The options given that the chosen strategy does not take, as typed, each with the
    #: option that selects the strategy that takes it (set by the strategies' registry).
    strays: tuple[tuple[str, str], ...] = ()

    def text(self, option: Option) -> str | None:
        """The value given to ``option`` (None: not given)."""
        value = self.owned.get(option.dest)
        return value if isinstance(value, str) else None

    def flag(self, option: Option) -> bool:
        """Was ``option`` given?"""
        return bool(self.owned.get(option.dest))

    def submodule(self, alternative: str) -> str | None:
        """The one ``--submodule`` given, else the default (``alternative``: see
        :attr:`default_submodule`)."""
        return self.submodules[0] if self.submodules else self.default_submodule(alternative)


def read(args: argparse.Namespace, owned: Sequence[Option], terms: Terms,
          pathspec: tuple[str, ...], default_submodule: Callable[[str], str | None]) -> Given:
    """What ``args`` gave (``owned``: every strategy's own options; ``terms`` and
    ``pathspec`` already checked). A command without an option reads as not given."""
    return Given(submodules=tuple(getattr(args, "submodule", None) or ()),
                 upstream=getattr(args, "upstream", None), bad=getattr(args, "bad", None),
                 good=tuple(getattr(args, "good", None) or ()),
                 all_parents=bool(getattr(args, "all_parents", False)),
                 on_conflict=getattr(args, "on_conflict", None), terms=terms,
                 pathspec=pathspec, default_submodule=default_submodule,
                 owned={o.dest: getattr(args, o.dest, None) for o in owned})
