"""``bisectkit actions``: the first compiler action (an LLVM pass execution, an MLIR
action, an LLVM debug-counter query) after which the repro's output turns bad.

Runs in any directory (no git needed): the repro splices ``$BISECTKIT_ACTIONS`` into
its compiler's command line; :mod:`bisectkit.actions.search` is the procedure.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pluggy

from bisectkit.actions import kinds
from bisectkit.cli.argtypes import command, jobs, nonempty, whole_number
from bisectkit.cli.options import (
    add_force_ignored,
    add_plugin_group,
    add_plugin_option,
    add_repro,
    add_verdict_options,
)
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput
from bisectkit.model import ON_CONFLICT

#: Options of ``run`` that ``actions`` does not take, at the values that mean "none".
_NOT_TAKEN: dict[str, object] = {
    "no_cache": True, "cache_input": [], "cache_env": [], "no_verify": False,
    "max_env_skips": 0, "max_skips": 0, "verify_range": False, "check_stack": False,
    "scheduler": None, "workspace_root": None, "resources": [], "no_workers_timeout": None}


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    """``actions``' options: the kind and the search, the repro's verdicts and outputs,
    ``--at``, the plugins' options, the repro."""
    g = p.add_argument_group("actions")
    g.add_argument("--kind", metavar="KIND",
                   help="opt-bisect (LLVM pass executions: opt, llc, clang -mllvm, "
                        "iree-compile), mlir-counter (MLIR actions: mlir-opt, iree-opt) or "
                        "llvm-counter:NAME (the queries of LLVM debug counter NAME)")
    g.add_argument("--tag", metavar="TAG",
                   help="with --kind mlir-counter: the action tag counted "
                        f"({', '.join(kinds.MLIR_TAGS)}; default {kinds.DEFAULT_MLIR_TAG})")
    g.add_argument("--within", type=whole_number(1), metavar="N",
                   help="bisect inside action N of a first answer: with --kind mlir-counter, "
                        "the apply-pattern actions of pass-execution N; with --kind "
                        "llvm-counter:NAME, the queries of NAME inside OptBisect pass N "
                        "(later passes do not run)")
    g.add_argument("--ir", action="store_true",
                   help="print the IR of the unit before and after the first bad action, as "
                        "a diff (also in --json and --report)")
    g.add_argument("--confirm", action="store_true",
                   help="run every action but the first bad one, where the tool takes "
                        "intervals (--opt-bisect=1-6,8-169), and say whether the output "
                        "turns good")
    g.add_argument("--jobs", "-j", type=jobs, metavar="K",
                   help="test K limits at once (default 1)")
    g.add_argument("--probe", type=whole_number(0), default=0, metavar="K",
                   help="once found, test K more limits spread over the range: a bad one "
                        "below the answer or a good one above is reported as non-monotone")
    r = p.add_argument_group("repro options")
    add_verdict_options(r)
    r.add_argument("--json", metavar="FILE",
                   help="write the answer as JSON (atomically); '-' writes it to stdout")
    r.add_argument("--report", metavar="FILE",
                   help="write a Markdown report ready to paste into an upstream bug")
    r.add_argument("--trace", metavar="FILE",
                   help="write a Chrome trace-event JSON of every repro run (Perfetto)")
    add_plugin_option(r)
    _at_arguments(p)
    p.set_defaults(**_NOT_TAKEN)
    add_plugin_group(p, pm)
    add_repro(p)


def _at_arguments(p: argparse.ArgumentParser) -> None:
    at = p.add_argument_group("at a commit of a superproject (--at)")
    # Not ``at``: that is ``--stack``'s upstream commit, which the strategies read.
    at.add_argument("--at", dest="actions_at", metavar="REV", type=nonempty,
                    help="check out and build REV first, exactly as a bisection step would "
                         "(the submodule's patched candidate; with --integrate a "
                         "superproject commit), search there, then restore everything")
    at.add_argument("--submodule", action="append", default=[], metavar="PATH", type=nonempty,
                    help="with --at: the patched submodule REV belongs to (default: git "
                         "config bisectkit.submodule, else the only submodule)")
    at.add_argument("--integrate", action="store_true",
                    help="with --at: REV is a superproject commit, its submodules updated")
    at.add_argument("--upstream", metavar="REF", type=nonempty,
                    help="with --at: the submodule's upstream ref (as in run)")
    at.add_argument("--on-conflict", choices=ON_CONFLICT, default=None,
                    help="with --at: what a conflicting local patch does (as in run)")
    at.add_argument("--build", metavar="CMD", type=command,
                    help="with --at: shell command run in the superproject root once REV is "
                         "checked out (default: git config bisectkit.build)")
    add_force_ignored(at)


def run_actions(ctx: Context, args: argparse.Namespace) -> int:
    """Bisect the compiler's actions under the repro; print (and write) the answer."""
    if not args.kind:
        raise BadInput("give the kind of action to bisect: --kind opt-bisect, --kind "
                       "mlir-counter or --kind llvm-counter:NAME")
    # Imported here, not at the top: the search (and what it pulls in) serves this
    # command alone, and every other command starts without it.
    from bisectkit.commands import actionsearch  # noqa: PLC0415

    settings = actionsearch.Settings(
        kinds.parse(args.kind, args.tag, args.within), jobs=args.jobs or 1, probes=args.probe,
        details=tuple(d for d in ("ir", "confirm") if getattr(args, d)))
    if args.actions_at is not None:
        return actionsearch.at_commit(ctx, args, settings, args.actions_at)
    given = [flag for flag, value in (("--build", args.build), ("--submodule", args.submodule),
                                      ("--integrate", args.integrate),
                                      ("--upstream", args.upstream),
                                      ("--on-conflict", args.on_conflict),
                                      ("--force-ignored", args.force_ignored)) if value]
    if given:
        raise BadInput(f"{given[0]} goes with --at REV (the commit to check out and build)")
    return actionsearch.here(ctx, settings, str(Path.cwd()), os.environ)


#: ``bisectkit actions``.
COMMAND = Command(
    "actions",
    description="Bisect inside one compiler run: the first LLVM pass execution (OptBisect), "
                "MLIR action (debug counter) or LLVM debug-counter query after which the "
                "repro's output turns bad. The repro puts $BISECTKIT_ACTIONS, unquoted, on "
                "the compiler's command line and lets its stderr reach its own output (or "
                "appends it to $BISECTKIT_ACTION_LOG). No git repository is needed.",
    examples=("actions --kind opt-bisect -- ./repro.sh",
              "actions --kind mlir-counter --tag apply-pattern --report bug.md -- ./repro.sh"),
    arguments=_arguments, handler=run_actions, runs=True,
    needs_repository=lambda args: args.actions_at is not None)
