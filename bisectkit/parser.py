"""The command-line grammar of ``bisectkit`` and ``git bisect-patched`` (argparse).

Each subcommand sets ``handler`` (a name the CLI maps to a command); plugins
add their options to ``run`` through ``bisectkit_addoption``.
"""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.argtypes import byte_size, positive_float, resource, whole_number
from bisectkit.hooks import Hooks
from bisectkit.model import (
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    GIT_PROG,
    ON_CONFLICT,
    VERDICTS,
    VERSION,
)
from bisectkit.upstream import CONFIG_KEY

#: Shared by every command that takes --upstream (the guess lives in upstream.py).
UPSTREAM_HELP = (f"upstream ref in the submodule (default: git config {CONFIG_KEY}, else guessed "
                 "from the remote-tracking branches: the nearest merge-base with HEAD, "
                 "printed with the reason)")


# -- parsers --------------------------------------------------------------------
def _add_target_options(p: argparse.ArgumentParser) -> None:
    """What is bisected: shared by ``bisectkit run`` and ``git bisect-patched start``."""
    p.add_argument("--submodule", action="append", default=[], metavar="PATH",
                   help="the patched submodule to bisect, relative to the superproject root "
                        "(default: git config bisectkit.submodule); with --integrate: a "
                        "submodule to update at each step (repeatable; default: all)")
    p.add_argument("--integrate", action="store_true",
                   help="bisect superproject commits (the integrate branch) instead, "
                        "updating submodules at every step")
    p.add_argument("--upstream", metavar="REF", help=UPSTREAM_HELP)
    p.add_argument("--first-parent", action="store_true",
                   help="follow first parents only (the default)")
    p.add_argument("--on-conflict", choices=ON_CONFLICT, default=None,
                   help="when a local patch (not a revert or cherry-pick) conflicts at a "
                        "candidate: skip the step (the default), or drop the patch, test the "
                        "rest and flag the step 'tested without <patch>'")
    p.add_argument("--stack", action="store_true",
                   help="bisect the submodule's local patch stack on top of --at REV instead "
                        "(candidate k = the first k patches applied)")
    p.add_argument("--at", metavar="REV", help="with --stack: the upstream commit to patch")
    p.add_argument("--find-fix", action="store_true",
                   help="find the first commit where the repro starts passing")
    p.add_argument("--term-old", metavar="WORD",
                   help="word for the old side (default: good, or broken with --find-fix)")
    p.add_argument("--term-new", metavar="WORD",
                   help="word for the new side (default: bad, or fixed with --find-fix)")
    _add_force_ignored(p)


def _add_force_ignored(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--force-ignored", action="store_true",
                   help="when an untracked or ignored file sits where a candidate tracks one, "
                        "set it aside (in the git dir) and put it back at the end, instead of "
                        "refusing")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run options")
    g.add_argument("--build", metavar="CMD",
                   help="shell command run in the superproject root before the repro at every "
                        "step; a failing build marks the step skip (default: git config "
                        "bisectkit.build)")
    g.add_argument("--good-if", action="append", default=[], metavar="REGEX",
                   help="mark good when REGEX matches the repro's output "
                        "(overrides the exit status)")
    g.add_argument("--bad-if", action="append", default=[], metavar="REGEX",
                   help="mark bad when REGEX matches (beats --skip-if and --good-if)")
    g.add_argument("--skip-if", action="append", default=[], metavar="REGEX",
                   help="mark skip when REGEX matches (beats --good-if)")
    g.add_argument("--timeout", type=positive_float, metavar="SECONDS",
                   help="kill a build or repro running longer than this (its process group)")
    g.add_argument("--timeout-verdict", choices=VERDICTS, default="skip",
                   help="verdict of a repro that timed out (default: skip); a timed-out "
                        "build is always skip")
    g.add_argument("--keep-output", type=byte_size, default=DEFAULT_KEEP, metavar="BYTES",
                   help="keep at most this much of each build's and repro's output (its head "
                        "and tail; lines matching the rules are kept from the middle); "
                        "suffixes K, M, G (default: 8M)")
    g.add_argument("--json", metavar="FILE",
                   help="write the result as JSON (atomically); '-' writes it to stdout and "
                        "everything else to stderr")
    g.add_argument("--no-cache", action="store_true",
                   help="do not reuse verdicts of trees already tested with the same commands")
    g.add_argument("--cache-input", action="append", default=[], metavar="PATH",
                   help="a file or directory (hashed recursively) the verdict depends on that "
                        "no command names: changing it invalidates cached verdicts "
                        "(repeatable)")
    g.add_argument("--verify-range", action="store_true",
                   help="test the good and bad ends first; stop (exit 5) if they are not")
    g.add_argument("--no-verify", action="store_true",
                   help="do not test an untested end that the answer rests on (by default "
                        "it is tested, and one that does not test as claimed exits 5)")
    g.add_argument("--max-env-skips", type=whole_number(0), default=DEFAULT_MAX_ENV_SKIPS,
                   metavar="N",
                   help="stop (exit 3) after N consecutive steps skipped for the machine's "
                        "sake: a timeout, a command that cannot run, a driver the machine "
                        f"should have (default {DEFAULT_MAX_ENV_SKIPS}; 0: never stop)")
    g.add_argument("--check-stack", action="store_true",
                   help="once found, test the first bad commit without the patch stack (one "
                        "more build) and print the --stack command if the stack is implicated")
    g.add_argument("--trace", metavar="FILE",
                   help="write a Chrome trace-event JSON of every step (Perfetto)")
    _add_parallel_options(p)
    g.add_argument("--report", metavar="FILE",
                   help="write a Markdown report ready to paste into an issue")
    _add_plugin_option(g)


def _add_parallel_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("parallel steps")
    g.add_argument("--jobs", "-j", type=whole_number(1), metavar="K",
                   help="test K candidates at once, each in its own workspace (a clone "
                        "sharing objects with yours; kept between runs so builds stay warm); "
                        "1 tests in your own tree (default: git config bisectkit.jobs, else 1)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the steps on a Dask cluster (tcp://HOST:PORT of a 'dask "
                        "scheduler'; pip install 'bisectkit[dask]'); each worker builds in its "
                        "own workspace (default: git config bisectkit.scheduler)")
    _add_workspace_root(g)
    g.add_argument("--resources", action="append", default=[], type=resource,
                   metavar="NAME=N",
                   help="with --scheduler: what a step needs of a worker, e.g. GPU=1 routes "
                        "steps to workers started with --resources GPU=1 (repeatable)")


def _add_workspace_root(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--workspace-root", metavar="DIR",
                   help="where the workspaces live (default: git config "
                        "bisectkit.workspace-root, else .git/bisectkit/workspaces locally and "
                        "~/.cache/bisectkit/workspaces/WORKER on a Dask worker)")


def _add_plugin_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    # Read before parsing by plugins.scan_argv; declared here for --help and validation.
    p.add_argument("-p", "--plugin", action="append", default=[], metavar="NAME|PATH",
                   help="load a plugin: a bundled one (iree_devices, flaky, cmake_ninja), a "
                        "module, or a .py file; no:NAME blocks one (repeatable; before the "
                        "repro)")


def _add_repro(p: argparse.ArgumentParser) -> None:
    p.add_argument("repro", nargs=argparse.REMAINDER, metavar="[--] REPRO [ARGS...]",
                   help="command that exits 0 when good, 1-127 (not 125) when bad, 125 to skip")


def build_parser(git_mode: bool = False,
                 pm: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """Parser for ``git bisect-patched`` (``git_mode``) or for ``bisectkit``.

    With ``pm``, plugins add their options to ``run`` (``bisectkit_addoption``).
    """
    parser = argparse.ArgumentParser(
        prog=GIT_PROG if git_mode else "bisectkit",
        description="Bisect regressions in a project that pins a patched submodule: the "
                    "submodule's upstream commits (re-applying the local patch stack at "
                    "every step), the superproject's integrate branch (--integrate), or the "
                    "patch stack itself (--stack).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if git_mode:
        _add_git_commands(sub, pm)
    else:
        _add_bisectkit_commands(sub, pm)
    _add_show_step(sub)
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
    _add_run_options(p)
    _add_plugin_group(p, pm)
    _add_repro(p)
    p.set_defaults(handler="oneshot")
    p = sub.add_parser(
        "status", help="show a patched submodule against its upstream",
        usage="bisectkit status [--submodule PATH] [--upstream REF] [--json] [--limit N] "
              "[-- PATHSPEC...]")
    p.add_argument("--submodule", metavar="PATH",
                   help="default: git config bisectkit.submodule, or the only submodule")
    p.add_argument("--upstream", metavar="REF", help=UPSTREAM_HELP)
    p.add_argument("--json", action="store_true", help="print JSON instead")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="show the newest N affecting upstream commits (0: all; default 20)")
    p.add_argument("pathspec", nargs="*", metavar="PATHSPEC",
                   help="count only upstream commits touching these path prefixes")
    p.set_defaults(handler="stack_status")
    p = sub.add_parser("workspaces", help="list the workspaces of --jobs (or remove them)")
    _add_workspace_root(p)
    p.add_argument("--prune", action="store_true",
                   help="remove every workspace no run is using (their builds go too)")
    p.set_defaults(handler="workspaces")
    p = sub.add_parser("plugins", help="list loaded plugins, their origin and hooks")
    _add_plugin_option(p)
    p.set_defaults(handler="plugins")


def _add_git_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                      pm: pluggy.PluginManager | None) -> None:
    """``git bisect-patched start|good|bad|skip|old|new|run|status|log|replay|reset``."""
    p = sub.add_parser(
        "start", help="start a session and check out the first candidate",
        usage=f"{GIT_PROG} start (--submodule PATH [--upstream REF] | --integrate "
              "[--submodule PATH]...) [--first-parent] [--on-conflict skip|drop] [--find-fix] "
              "BAD GOOD... "
              "[-- PATHSPEC...]  |  start --submodule PATH --stack --at REV",
        epilog="PATHSPEC (after --) keeps only candidates that change those path prefixes.")
    _add_target_options(p)
    p.add_argument("bad", nargs="?", metavar="BAD", help="a known bad revision")
    p.add_argument("good", nargs="*", metavar="GOOD", help="known good revisions")
    p.set_defaults(handler="start", pathspec=[])
    for verdict in (*VERDICTS, "old", "new"):
        what = ("the old/new side (--term-old/--term-new)" if verdict in ("old", "new")
                else f"{verdict} (the repro's outcome)")
        p = sub.add_parser(verdict, help=f"mark revisions (default: the one under test) {what}")
        p.add_argument("revs", nargs="*", metavar="REV")
        _add_force_ignored(p)
        p.set_defaults(handler="mark", verdict=verdict)
    p = sub.add_parser("run", help="build and test candidates automatically until done")
    _add_run_options(p)
    _add_force_ignored(p)
    _add_plugin_group(p, pm)
    _add_repro(p)
    p.set_defaults(handler="run")
    sub.add_parser("status", help="show the session").set_defaults(handler="status")
    sub.add_parser("log", help="print a log that 'replay' accepts").set_defaults(
        handler="log")
    p = sub.add_parser("replay", help="start over from a log")
    p.add_argument("file")
    p.set_defaults(handler="replay")
    sub.add_parser("reset", help="restore every HEAD and end the session").set_defaults(
        handler="reset")


def _add_show_step(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("show-step", help="print the kept build and repro output of step N")
    p.add_argument("index", type=int, metavar="N")
    p.set_defaults(handler="show_step")


def _add_plugin_group(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    if pm is None:
        return
    group = p.add_argument_group("plugin options")
    Hooks(pm).addoption(group)
    # Remember the options plugins added: their values are part of the cache key
    # and of follow-up commands.
    p.set_defaults(plugin_actions=list(group._group_actions))
