"""``run``: build and test candidates until the answer.

``bisectkit run`` does it in one go: it starts a session (refused, nothing touched,
unless the superproject is idle), runs it, reports, and restores every HEAD however
it ends. ``git bisect-patched run`` runs the session in progress (its ends known) and
keeps it, answered or stopped, for ``reset`` to end. Both take the run options, the
plugins' options and the repro.
"""

from __future__ import annotations

import argparse
import functools

import pluggy

from bisectkit import strategies
from bisectkit.cli import about
from bisectkit.cli.options import add_force_ignored, add_plugin_group, add_repro, add_run_options
from bisectkit.cli.parser import add_target_options
from bisectkit.commands import advance, running
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.starting import new_session, start_request
from bisectkit.errors import Aborted, BadInput
from bisectkit.model import GIT_PROG
from bisectkit.strategies import kind_named


def _bisectkit_arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    add_target_options(p, strategies.options(for_run=True))
    p.add_argument("--good", "--old", dest="good", action="append", default=[],
                   metavar="REV", help="a revision on the old side: good (repeatable; "
                   "with --find-fix: still broken; not with --stack)")
    p.add_argument("--bad", "--new", dest="bad", metavar="REV",
                   help="a revision on the new side: bad (with --find-fix: already fixed)")
    add_run_options(p)
    p.add_argument("--then-actions", metavar="KIND[:TAG]",
                   help="once the first bad commit is found, check it out, build it and "
                        "bisect the compiler's actions there with the same repro, as "
                        "'bisectkit actions --kind KIND' would (opt-bisect, "
                        "mlir-counter[:TAG], llvm-counter:NAME); both answers are printed")
    add_plugin_group(p, pm)
    add_repro(p)


def run_in_one_go(ctx: Context, args: argparse.Namespace) -> int:
    """``bisectkit run``: start + run + report + reset; always restores."""
    if args.then_actions is not None:
        # Imported here: only --then-actions needs the actions search, and every other
        # run starts without it.
        from bisectkit.actions import kinds  # noqa: PLC0415
        from bisectkit.commands import actionsearch  # noqa: PLC0415

        if args.find_fix:
            raise BadInput("--then-actions looks for what broke the first bad commit; not "
                           "with --find-fix")
        try:
            kind = kinds.parse(args.then_actions, None)
        except BadInput as exc:  # in the words of the option the user typed
            raise exc.reworded(str(exc).replace("--kind", "--then-actions")) from None
        settings = actionsearch.Settings(kind)
        ctx.then = functools.partial(actionsearch.then_actions, ctx, settings)
        ctx.then_words = ("--then-actions", args.then_actions)
    request = start_request(ctx, args)
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        run.require_idle()
        session = new_session(sp, request, ctx.deepener())  # validates; nothing touched yet
        ctx.check_outputs(sp, session)
        ctx.check_workspaces(sp)
        run.claim_bisect_head(args.no_checkout)
        return running.run_restoring(ctx, run, session)[0]


def _git_arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    add_run_options(p)
    add_force_ignored(p)
    add_plugin_group(p, pm)
    add_repro(p)


def run_session(ctx: Context, args: argparse.Namespace) -> int:
    """``git bisect-patched run``: test until done; on abort the session is kept."""
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        b = run.resume()
        ctx.check_outputs(sp, b.session)
        ctx.check_workspaces(sp)
        # An advance's answer is shown as one (where the pin can go), not as a bisection's.
        kind = kind_named(b.session.strategy)
        show = advance.show_result if kind is not None and kind.report == "advance" else None
        try:
            return running.run_with(ctx, b, show)
        except (Aborted, KeyboardInterrupt):
            ctx.console.error(f"stopped; the session is kept: fix things, then '{GIT_PROG} run' "
                              f"again or '{GIT_PROG} reset'")
            raise


#: ``bisectkit run``.
BISECTKIT = Command(
    "run",
    description="Bisect in one go: start a session, build and test candidates until the first "
                "bad commit is found, report it and restore every HEAD.",
    examples=(f"run --submodule third_party/llvm-project --good v1.0 --bad HEAD "
              f"{about.EXAMPLE_BUILD} -- ./repro.sh",),
    arguments=_bisectkit_arguments, handler=run_in_one_go, runs=True)

#: ``git bisect-patched run``.
GIT = Command(
    "run",
    description="Build and test candidates one after the other (or --jobs at once) until the "
                "first bad commit is found; the session is kept ('reset' ends it).",
    examples=(f"run {about.EXAMPLE_BUILD} -- ./repro.sh",),
    arguments=_git_arguments, handler=run_session, runs=True)
