"""``git bisect-patched start``: start a session and check out the first candidate (with the
local patch stack applied); with fewer than both ends, as git allows, a session that waits
for them (nothing is checked out until ``bad``/``good`` give them). Refused, nothing
touched, unless the superproject is idle."""

from __future__ import annotations

import argparse

import pluggy

from bisectkit import strategies
from bisectkit.cli.parser import add_target_options
from bisectkit.commands import waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.starting import given, new_session, start_session
from bisectkit.model import GIT_PROG, StartRequest


def start(ctx: Context, args: argparse.Namespace) -> int:
    """With both ends (or an advance, or a stack), the first candidate; with fewer, a
    session waiting for them."""
    what = given(ctx, args)
    if strategies.lacks_ends(what):
        return _start_waiting(ctx, strategies.request_from(waiting.with_unknown_ends(what)),
                              args.no_checkout)
    return _start_session(ctx, strategies.request_from(what), args.no_checkout)


def _start_session(ctx: Context, request: StartRequest, no_checkout: bool) -> int:
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        run.require_idle()
        session = new_session(sp, request, ctx.deepener())
        run.claim_bisect_head(no_checkout)
        return start_session(ctx, run, session)


def _start_waiting(ctx: Context, request: StartRequest, no_checkout: bool) -> int:
    """Check what can be checked (the target, the new end if given), then wait: nothing
    moves."""
    sp, store = ctx.open()
    ends = waiting.waiting_for(ctx, sp, request)
    waiting.repo_of(sp, ends.template)  # a submodule that is none is refused now, not later
    with ctx.run(sp) as run:
        run.require_idle()
        run.claim_bisect_head(no_checkout)
        store.save_waiting(ends)
    waiting.say_status(ctx, ends)
    return 0


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    add_target_options(p, strategies.options())
    p.add_argument("bad", nargs="?", metavar="BAD",
                   help="a known bad revision (or later: 'bad [REV]')")
    p.add_argument("good", nargs="*", metavar="GOOD",
                   help="known good revisions (or later: 'good REV')")
    # '-- PATHSPEC...' is split off before parsing (argparse cannot tell it from GOOD...).
    p.set_defaults(pathspec=[])


#: ``git bisect-patched start``.
COMMAND = Command(
    "start",
    usage=f"{GIT_PROG} start ([--submodule PATH] [--upstream REF] | --integrate "
          "[--submodule PATH]...) [--first-parent | --all-parents] "
          "[--on-conflict skip|drop] [--find-fix] [--term-new WORD] [--term-old WORD] "
          "[--no-checkout] [--deepen] [BAD [GOOD...]] "
          "[-- PATHSPEC...]  |  start --submodule PATH --stack --at REV",
    synopsis=f"{GIT_PROG} start [options] [BAD [GOOD...]] [-- PATHSPEC...]",
    description="Start a session: record every HEAD, resolve the candidates between the GOOD "
                "and BAD revisions, and check out the first one (with the local patch stack "
                "applied); then build, test and mark it. As with git, the ends may come "
                "later: with fewer, the session waits (nothing is checked out) for 'bad "
                "[REV]' and 'good REV' (old/new in your terms); 'bad' with no REV is the "
                "superproject's HEAD with --integrate, else the upstream commit the "
                "submodule's pin sits on.",
    note="PATHSPEC (after --) keeps only candidates that change those path prefixes.",
    examples=("start --submodule third_party/llvm-project HEAD v1.0",
              "start --submodule third_party/llvm-project",
              "start --integrate --all-parents main v1.0"),
    arguments=_arguments, handler=start)
