"""The command-line grammar of ``bisectkit`` and ``git bisect-patched`` (argparse).

Each subcommand sets ``handler`` (a name the CLI maps to a command); plugins
add their options to ``run`` through ``bisectkit_addoption``.
"""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.cli import about, argtypes
from bisectkit.cli.options import (
    UPSTREAM_HELP,
    add_force_ignored,
    add_plugin_group,
    add_plugin_option,
    add_repro,
    add_run_options,
    add_workspace_root,
)
from bisectkit.model import GIT_PROG, ON_CONFLICT, VERDICTS, VERSION


def _add_target_options(p: argparse.ArgumentParser) -> None:
    """What is bisected: shared by ``bisectkit run`` and ``git bisect-patched start``."""
    p.add_argument("--submodule", action="append", default=[], metavar="PATH",
                   type=argtypes.nonempty,
                   help="the patched submodule to bisect, relative to the superproject root "
                        "(default: git config bisectkit.submodule, else the only submodule); "
                        "with --integrate: a "
                        "submodule to update at each step (repeatable; default: all)")
    p.add_argument("--integrate", action="store_true",
                   help="bisect superproject commits (the integrate branch) instead, "
                        "updating submodules at every step")
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
    p.add_argument("--stack", action="store_true",
                   help="bisect the submodule's local patch stack on top of --at REV instead "
                        "(candidate k = the first k patches applied)")
    p.add_argument("--at", metavar="REV", type=argtypes.nonempty,
                   help="with --stack: the upstream commit to patch")
    p.add_argument("--find-fix", action="store_true",
                   help="find the first commit where the repro starts passing")
    p.add_argument("--term-old", metavar="WORD", type=argtypes.term,
                   help="word for the old side (default: good, or broken with --find-fix)")
    p.add_argument("--term-new", metavar="WORD", type=argtypes.term,
                   help="word for the new side (default: bad, or fixed with --find-fix)")
    add_force_ignored(p)
    _add_deepen(p)


def _add_deepen(p: argparse.ArgumentParser) -> None:
    """``--deepen``: shared by ``bisectkit run``/``advance`` and ``git bisect-patched start``."""
    p.add_argument("--deepen", action="store_true",
                   help="when a shallow clone's history stops inside what the bisection "
                        "needs (the range, the merge-base, a commit a patch reverts or "
                        "picks), fetch it before starting (git fetch --shallow-since, "
                        "--deepen or --unshallow from its remote) instead of stopping with "
                        "the command to run")



def build_parser(git_mode: bool = False,
                 pm: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """Parser for ``git bisect-patched`` (``git_mode``) or for ``bisectkit``.

    With ``pm``, plugins add their options to ``run`` (``bisectkit_addoption``).
    """
    prog = GIT_PROG if git_mode else "bisectkit"
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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if git_mode:
        _add_git_commands(sub, pm)
    else:
        _add_bisectkit_commands(sub, pm)
    _add_show_step(sub)
    _add_help(sub, git_mode)
    about.document(sub, git_mode)
    return parser


def _add_bisectkit_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                            pm: pluggy.PluginManager | None) -> None:
    """``bisectkit run|status|plugins``."""
    p = sub.add_parser("run", help="start, run, report and reset in one go")
    _add_target_options(p)
    p.add_argument("--good", "--old", dest="good", action="append", default=[],
                   metavar="REV", help="a revision on the old side: good (repeatable; "
                   "with --find-fix: still broken; not with --stack)")
    p.add_argument("--bad", "--new", dest="bad", metavar="REV",
                   help="a revision on the new side: bad (with --find-fix: already fixed)")
    add_run_options(p)
    add_plugin_group(p, pm)
    add_repro(p)
    p.set_defaults(handler="oneshot")
    p = sub.add_parser(
        "status", help="show a patched submodule against its upstream",
        usage="bisectkit status [--submodule PATH] [--upstream REF] [--json] [--limit N] "
              "[-- PATHSPEC...]")
    p.add_argument("--submodule", metavar="PATH", type=argtypes.nonempty,
                   help="default: git config bisectkit.submodule, or the only submodule")
    p.add_argument("--upstream", metavar="REF", type=argtypes.nonempty, help=UPSTREAM_HELP)
    p.add_argument("--json", action="store_true", help="print JSON instead")
    p.add_argument("--limit", type=argtypes.whole_number(0), default=20, metavar="N",
                   help="show the newest N affecting upstream commits (0: all; default 20)")
    p.add_argument("pathspec", nargs="*", metavar="PATHSPEC", type=argtypes.pathspec,
                   help="count only upstream commits touching these path prefixes")
    p.set_defaults(handler="stack_status")
    _add_advance(sub, pm)
    p = sub.add_parser("workspaces", help="list the workspaces of --jobs (or remove them)")
    add_workspace_root(p)
    p.add_argument("--prune", action="store_true",
                   help="remove every workspace no run is using (their builds go too)")
    p.set_defaults(handler="workspaces")
    p = sub.add_parser("plugins", help="list loaded plugins, their origin and hooks")
    add_plugin_option(p)
    p.set_defaults(handler="plugins")


def _add_git_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                      pm: pluggy.PluginManager | None) -> None:
    """``git bisect-patched start|good|bad|skip|old|new|run|status|log|replay|reset``."""
    _add_start(sub)
    for verdict in (*VERDICTS, "old", "new"):
        p = sub.add_parser(verdict, help=about.MARKS[verdict])
        p.add_argument("revs", nargs="*", metavar="REV",
                       help="the revisions to mark (default: the candidate under test)")
        add_force_ignored(p)
        p.set_defaults(handler="mark", verdict=verdict)
    p = sub.add_parser("run", help="build and test candidates automatically until done")
    add_run_options(p)
    add_force_ignored(p)
    add_plugin_group(p, pm)
    add_repro(p)
    p.set_defaults(handler="run")
    sub.add_parser("status", help="show the session").set_defaults(handler="status")
    sub.add_parser("log", help="print a log that 'replay' accepts").set_defaults(
        handler="log")
    p = sub.add_parser("replay", help="start over from a log")
    p.add_argument("file", metavar="FILE", help="the log to replay")
    p.set_defaults(handler="replay")
    _add_parity_commands(sub)


def _add_parity_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``reset [COMMIT]``, ``visualize``/``view``, ``terms``: as git's."""
    p = sub.add_parser(
        "reset", help="restore every HEAD and end the session (then check out COMMIT)")
    p.add_argument("commit", nargs="?", metavar="COMMIT",
                   help="a superproject commit or branch to check out after the reset")
    p.set_defaults(handler="reset")
    p = sub.add_parser(
        "visualize", aliases=["view"],
        help="list the candidates left and their verdicts (alias: view)")
    p.add_argument("--log", action="store_true",
                   help="print them as 'git log' does (sha, author, date, message)")
    p.set_defaults(handler="visualize")
    p = sub.add_parser(
        "terms", help="print the words for the old and new states")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--term-good", "--term-old", dest="which", action="store_const",
                   const="old", help="print only the word for the old state")
    g.add_argument("--term-bad", "--term-new", dest="which", action="store_const",
                   const="new", help="print only the word for the new state")
    p.set_defaults(handler="terms")


def _add_start(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``git bisect-patched start``: both ends, one, or none yet (as git allows)."""
    p = sub.add_parser(
        "start", help="start a session and check out the first candidate",
        usage=f"{GIT_PROG} start ([--submodule PATH] [--upstream REF] | --integrate "
              "[--submodule PATH]...) [--first-parent | --all-parents] "
              "[--on-conflict skip|drop] [--find-fix] [--deepen] [BAD [GOOD...]] "
              "[-- PATHSPEC...]  |  start --submodule PATH --stack --at REV",
        epilog="PATHSPEC (after --) keeps only candidates that change those path prefixes.")
    _add_target_options(p)
    p.add_argument("--advance", action="store_true",
                   help="a session that finds how far the pin of --submodule can move toward "
                        "upstream (no BAD/GOOD: see 'bisectkit advance')")
    _add_advance_target(p)
    p.add_argument("bad", nargs="?", metavar="BAD",
                   help="a known bad revision (or later: 'bad [REV]')")
    p.add_argument("good", nargs="*", metavar="GOOD",
                   help="known good revisions (or later: 'good REV')")
    p.set_defaults(handler="start", pathspec=[])


def _add_advance_target(p: argparse.ArgumentParser) -> None:
    """``--to`` and ``--linear``: shared by ``bisectkit advance`` and ``start --advance``."""
    p.add_argument("--to", metavar="REV", type=argtypes.nonempty,
                   help="advance: the farthest upstream commit to consider (default: the "
                        "upstream's head)")
    p.add_argument("--linear", action="store_true",
                   help="advance: test every affecting commit in order and stop at the first "
                        "failure, instead of the far end first and a gallop")


def _add_advance(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                 pm: pluggy.PluginManager | None) -> None:
    """``bisectkit advance``: move the pin as far as the smoketest passes."""
    p = sub.add_parser(
        "advance",
        help="find how far the submodule's pin can move toward upstream (and move it)",
        usage="bisectkit advance [--submodule PATH] [--upstream REF] [--to REV] [--linear] "
              "[--deepen] "
              "[--pathspec PREFIX]... [--apply [--branch NAME] [--step-commits]] "
              "[RUN OPTIONS] [--] SMOKETEST [ARGS...]",
        description="Test the affecting upstream commits after the pin's merge-base (the "
                    "patch stack replayed at each, as a bisect does): the far end first, then "
                    "a gallop from the pin and a bisection, about 2*log2(d) builds when the "
                    "first failure is d commits ahead. Prints the last good commit and the "
                    "first bad one; --apply moves the pin there.")
    p.add_argument("--submodule", action="append", default=[], metavar="PATH",
                   type=argtypes.nonempty,
                   help="the patched submodule (default: git config bisectkit.submodule, or "
                        "the only submodule)")
    p.add_argument("--upstream", metavar="REF", type=argtypes.nonempty, help=UPSTREAM_HELP)
    _add_advance_target(p)
    p.add_argument("--pathspec", action="append", default=[], metavar="PREFIX",
                   type=argtypes.pathspec,
                   help="only upstream commits that change these path prefixes are "
                        "candidates (repeatable), like 'bisectkit status -- PREFIX'")
    _add_deepen(p)
    p.add_argument("--on-conflict", choices=ON_CONFLICT, default=None,
                   help="when a local patch conflicts at a candidate: the candidate blocks "
                        "the advance (skip, the default), or drop the patch there")
    g = p.add_argument_group("moving the pin")
    g.add_argument("--apply", action="store_true",
                   help="rebase the patch stack onto the last good commit on a new submodule "
                        "branch and commit the new pin in the superproject (default: a dry "
                        "run that prints the plan)")
    g.add_argument("--branch", metavar="NAME",
                   help="with --apply: the new submodule branch (default: "
                        "sm-integrate-YYYYMMDD)")
    g.add_argument("--step-commits", action="store_true",
                   help="with --apply --linear: one superproject commit per good step")
    add_run_options(p)
    add_force_ignored(p)
    add_plugin_group(p, pm)
    add_repro(p)
    p.set_defaults(handler="advance", advance=True, stack=False, integrate=False, at=None,
                   find_fix=False, term_old=None, term_new=None)


def _add_show_step(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("show-step", help="print the kept build and repro output of step N")
    p.add_argument("index", type=argtypes.whole_number(1), metavar="N",
                   help="the step's number, as printed")
    p.set_defaults(handler="show_step")


def _add_help(sub: argparse._SubParsersAction[argparse.ArgumentParser], git_mode: bool) -> None:
    """``help [COMMAND]``, as ``git bisect help``."""
    p = sub.add_parser("help", help="print the usage of every command, or the help of one")
    p.add_argument("topic", nargs="?", metavar="COMMAND", help="the command to show the help of")
    p.set_defaults(handler="help", git_mode=git_mode)
