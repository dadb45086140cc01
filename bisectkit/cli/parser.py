"""The command-line grammar several commands share: each program's root parser, and the
argument groups of more than one command (what is bisected, ``--deepen``).

Each command declares its own arguments in its module under :mod:`bisectkit.commands`
(:mod:`bisectkit.commands.registry` builds the programs' parsers from them); the option
groups of the run commands are in :mod:`bisectkit.cli.options`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bisectkit.cli import about, argtypes
from bisectkit.cli.options import UPSTREAM_HELP, add_force_ignored
from bisectkit.cli.targets import Option, add_options
from bisectkit.model import ON_CONFLICT, VERSION


def program(prog: str) -> tuple[argparse.ArgumentParser, about.Subcommands]:
    """The root parser of ``prog`` (``bisectkit`` or ``git bisect-patched``): its
    description, ``--version``, and the subcommands its commands are added to (each
    completed when used: :class:`~bisectkit.cli.about.Subcommands`)."""
    # Declared as the base class: add_subparsers() would otherwise be typed by about.Parser.
    parser: argparse.ArgumentParser = about.Parser(
        prog=prog,
        description="Bisect regressions in a project that pins a patched submodule: the "
                    "submodule's upstream commits (re-applying the local patch stack at "
                    "every step), the superproject's integrate branch (--integrate), or the "
                    "patch stack itself (--stack).",
        epilog=f"'{prog} help' lists every command's usage; the manual: man "
               f"{prog.replace(' ', '-')} (or '{prog} --help' in a terminal).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                        action=about.Subcommands)
    assert isinstance(subcommands, about.Subcommands)
    return parser, subcommands


def add_target_options(p: argparse.ArgumentParser, owned: Sequence[Option]) -> None:
    """What is bisected: shared by ``bisectkit run`` and ``git bisect-patched start``.
    ``owned``: the options of the strategies the command can start (each strategy's own,
    :mod:`bisectkit.strategies`), shown after the options they share."""
    p.add_argument("--submodule", action="append", default=[], metavar="PATH",
                   type=argtypes.nonempty,
                   help="the patched submodule to bisect, relative to the superproject root "
                        "(default: git config bisectkit.submodule, else the only submodule); "
                        "with --integrate: a "
                        "submodule to update at each step (repeatable; default: all)")
    p.add_argument("--upstream", metavar="REF", type=argtypes.nonempty, help=UPSTREAM_HELP)
    parents = p.add_mutually_exclusive_group()
    parents.add_argument("--first-parent", action="store_true",
                         help="the default: candidates are the first-parent line from good to "
                              "bad, a merge counts as one commit")
    parents.add_argument("--all-parents", action="store_true",
                         help="bisect into merges: when the first bad commit is a merge, "
                              "bisect the commits it merged (its second parent's first-parent "
                              "line) between its first parent and itself (not with --stack)")
    p.add_argument("--on-conflict", choices=ON_CONFLICT, default=None,
                   help="when a local patch (not a revert or cherry-pick) conflicts at a "
                        "candidate: skip the step (the default), or drop the patch, test the "
                        "rest and flag the step 'tested without <patch>'")
    add_options(p, owned)
    p.add_argument("--find-fix", action="store_true",
                   help="find the first commit where the repro starts passing")
    p.add_argument("--term-old", metavar="WORD", type=argtypes.term,
                   help="word for the old side, then a command that marks it (default: "
                        "good, or broken with --find-fix); git's other spelling, "
                        "--term-good WORD, is the same")
    p.add_argument("--term-new", metavar="WORD", type=argtypes.term,
                   help="word for the new side, then a command that marks it (default: "
                        "bad, or fixed with --find-fix); git's other spelling, "
                        "--term-bad WORD, is the same")
    # Their own options, not aliases, so that an error names the option typed.
    p.add_argument("--term-good", dest="term_old", type=argtypes.term, help=argparse.SUPPRESS)
    p.add_argument("--term-bad", dest="term_new", type=argtypes.term, help=argparse.SUPPRESS)
    p.add_argument("--no-checkout", action="store_true",
                   help="check nothing out: point BISECT_HEAD of the repository bisected "
                        "(the submodule, or the superproject with --integrate) at each "
                        "patched candidate instead, for a repro that reads it (git show "
                        "BISECT_HEAD:FILE); not with --jobs")
    add_force_ignored(p)
    add_deepen(p)


def add_deepen(p: argparse.ArgumentParser) -> None:
    """``--deepen``: shared by ``bisectkit run``/``advance`` and ``git bisect-patched start``."""
    p.add_argument("--deepen", action="store_true",
                   help="when a shallow clone's history stops inside what the bisection "
                        "needs (the range, the merge-base, a commit a patch reverts or "
                        "picks), fetch it before starting (git fetch --shallow-since, "
                        "--deepen or --unshallow from its remote) instead of stopping with "
                        "the command to run")
