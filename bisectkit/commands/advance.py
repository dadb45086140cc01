"""``bisectkit advance``: how far the submodule's pin can move toward upstream; ``--apply``
moves it (a new submodule branch, checked out, and a superproject commit).

The search is a session like a bisection's (lock, journal, steps, verdict
cache shared with ``run``, Ctrl-C restores everything); it ends, and every
repository is back where it was, before ``--apply`` writes anything, and
only if nothing moved since the advance started.
"""

from __future__ import annotations

import argparse
from typing import Any

import pluggy

from bisectkit.cli import about, argtypes
from bisectkit.cli.advancing import apply_request
from bisectkit.cli.options import (
    UPSTREAM_HELP,
    add_force_ignored,
    add_plugin_group,
    add_repro,
    add_run_options,
)
from bisectkit.cli.parser import add_deepen
from bisectkit.cli.targets import add_options
from bisectkit.commands import answer, running
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.reproduce import advance_command, reproduce_command
from bisectkit.commands.starting import new_session, start_request
from bisectkit.engine import Clear, Decision, Found, Inconclusive
from bisectkit.errors import BadInput
from bisectkit.git.repo import open_submodule
from bisectkit.model import ON_CONFLICT, AdvanceRequest, ApplyRequest, short
from bisectkit.model.params import AdvanceParams
from bisectkit.patches.stack import Stack
from bisectkit.pipeline import loops, results
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.finish import finish
from bisectkit.pipeline.lifecycle import Run
from bisectkit.safety import signals
from bisectkit.safety.worktree import Mover
from bisectkit.store.cache import VerdictCache
from bisectkit.strategies import advance as advance_strategy
from bisectkit.strategies import pinning, pinwrite
from bisectkit.text import plural


def cmd_advance(ctx: Context, request: AdvanceRequest, apply: ApplyRequest | None) -> int:
    """Search (always restored), then apply when asked; write the result and the report."""
    sp, _ = ctx.open()
    if ctx.flags.verify_range:
        raise BadInput("--verify-range goes with a bisection: an advance has no known-bad end "
                       "(it tests the far end first)")
    shown: dict[str, Any] = {}

    def show(ctx: Context, b: Bisection, decision: Decision, checks: dict[str, Any],
             cache: VerdictCache | None) -> int:
        # Written once --apply is done (or refused): the result says what it did.
        shown.update(result=_result(ctx, b, decision, checks), bisection=b)
        _print(ctx, b, decision, shown["result"])
        if cache is not None:
            loops.note_cache_use(b, cache)
        return results.exit_code(decision)

    with ctx.run(sp) as run:
        run.require_idle()
        session = new_session(sp, request, ctx.deepener())  # validates; nothing touched yet
        ctx.check_outputs(sp, session)
        ctx.check_workspaces(sp)
        branch = (apply.branch or pinning.default_branch()) if apply else ""
        base = None
        if apply is not None:
            path = session.params_as(AdvanceParams).submodule
            sub = open_submodule(sp, path)[1]
            pinning.check(sp, path, sub, branch)
            base = pinning.base(sp, path, sub)  # the apply builds on this, or on nothing

        code, stop = running.run_restoring(ctx, run, session, show)
        if stop is not None and apply is not None:
            # Ctrl-C while the repositories were being restored: the user asked to stop
            # before anything was written, so --apply must not go on.
            raise signals.Interrupted(stop)
        result = shown["result"]
        try:
            if apply is not None and base is not None:
                _apply(ctx, shown["bisection"], result, (branch, base), apply, run)
            elif result["crossed"]:
                ctx.console.line(f"dry run: nothing was changed; --apply moves the pin to "
                                 f"{short(result['to'])}", style="dim")
        finally:
            finish(ctx.hooks, result, shown["bisection"].tracer)
    return code


def show_result(ctx: Context, b: Bisection, decision: Decision, checks: dict[str, Any],
                cache: VerdictCache | None) -> int:
    """``git bisect-patched run`` on an advance session: print and write the result."""
    result = _result(ctx, b, decision, checks)
    _print(ctx, b, decision, result)
    if cache is not None:
        loops.note_cache_use(b, cache)
    finish(ctx.hooks, result, b.tracer)
    return results.exit_code(decision)


def _result(ctx: Context, b: Bisection, decision: Decision,
            checks: dict[str, Any]) -> dict[str, Any]:
    result = results.advance_json(b, decision)
    result.update(checks, command=ctx.command)
    first_bad = result.get("first_bad")
    if first_bad and (result.get("stopped_by") or {}).get("conflict"):
        # Its stack does not apply there: only the advance itself can show that again.
        result["reproduce"] = advance_command(ctx, b, first_bad)
    elif first_bad:
        result["reproduce"] = reproduce_command(ctx, b, (result["to"], first_bad))
    return result


def _print(ctx: Context, b: Bisection, decision: Decision, result: dict[str, Any]) -> None:
    """The answer: where the pin can go, the first commit it cannot (as a bisect shows a
    first bad commit), what could not be decided."""
    console, params = ctx.console, b.session.params_as(AdvanceParams)
    path = params.submodule
    status, to, total = result["status"], result["to"], len(b.session.candidates)
    builds = plural(result['builds'], 'build')
    if status == "up-to-date":
        console.line(f"up-to-date: {path} already contains {params.to_ref} "
                     f"({short(b.session.bad)}); {builds}", style="bold")
    elif status == "advanced":
        console.line(f"advanced: {path} can move {result['crossed']} of {total} upstream "
                     f"commits, to {short(to)} {result['to_subject']} ({builds})", style="bold")
    else:
        console.line(f"stuck: {path} cannot move past its merge-base {short(to)} ({builds})",
                     style="bold")
    stop = result.get("stopped_by")
    if stop:
        console.line(f"stopped at {short(stop['commit'])} (step {stop['step']}): "
                     f"{stop['reason']}", style="bold")
    if isinstance(decision, Found | Inconclusive):
        answer.show_result(ctx, b, decision)
    elif isinstance(decision, Clear) and decision.skipped:
        console.line(f"the {len(decision.skipped)} commit(s) after it could not be tested "
                     f"(skipped): {' '.join(short(c) for c in decision.skipped[:8])}",
                     style="yellow")


def _apply(ctx: Context, b: Bisection, result: dict[str, Any],
           onto: tuple[str, pinning.Base], apply: ApplyRequest, run: Run) -> None:
    """Rebase the stack onto each target for real, commit the pins, check the submodule
    out on the new branch ``onto[0]``; what was written goes in ``result["applied"]``.
    Refused, nothing written, if the repositories moved since ``onto[1]``."""
    s, sp = b.session, b.superproject
    branch, base = onto
    if not result["crossed"]:
        ctx.console.line("--apply: nothing to apply, the pin stays where it is", style="dim")
        result["applied"] = None
        return
    params = s.params_as(AdvanceParams)
    path = params.submodule
    _, sub = open_submodule(sp, path)
    lo = result["crossed"] - 1
    verdicts = s.verdict_map()
    ends = [i for i in range(lo) if verdicts.get(s.candidates[i]) == "good"] \
        if apply.step_commits else []
    ends.append(lo)
    targets = [s.candidates[i] for i in ends]
    # Each move crosses the candidates after the previous one, up to its own.
    crossed = [s.candidates[a + 1:i + 1] for a, i in zip([-1, *ends], ends, strict=False)]
    stack = Stack.from_json(params.stack)
    moves = pinning.plan(sub, stack, params.on_conflict, targets, crossed)
    steps = len(result["steps"])
    tested = f"{' '.join(ctx.typed_repro).removeprefix('-- ')} ({plural(steps, 'step')})"
    messages = [pinning.message(path, sub, m, branch, tested) for m in moves]
    # A stop signal waits until the apply is written *and* reported (exit 130 with the
    # pin moved but not said, nor in --json, would read as "nothing was done").
    mover = Mover(run.journal, run.store.backups_dir, note=ctx.console.line)
    with signals.held():
        try:
            done, lines = pinwrite.write(sp, path, sub, moves, branch, messages,
                                         run.apply_record, base, mover)
        except BadInput as exc:
            result.update(applied=None, apply_refused=str(exc))
            raise
        result["applied"] = _report(ctx, path, branch, done, messages,
                                    sp.worktree.head_state().ref is None)
        for line in lines:
            ctx.console.line(f"  {line}", style="yellow")


def _report(ctx: Context, path: str, branch: str, done: list[pinning.PinMove],
            messages: list[str], detached: bool) -> dict[str, Any]:
    """Say what ``--apply`` wrote; its ``applied`` record."""
    last = done[-1]
    ctx.console.line(f"applied: {path} branch {branch} at {short(last.tip)} (the stack on "
                     f"{short(last.upstream)}); superproject commit "
                     f"{short(last.superproject_commit)} "
                     f"{messages[-1].splitlines()[0]}", style="bold green")
    if len(done) > 1:
        ctx.console.line(f"  {len(done)} superproject commits, one per good step "
                         f"(submodule branches {branch}-step-1..{len(done) - 1})")
    for action in last.actions:
        if action.conflicts:  # --on-conflict drop: the user's own patch is not carried over
            ctx.console.line(f"  warning: the new branch lacks local patch "
                             f"{short(action.patch.sha)} {action.patch.subject}: it conflicts "
                             f"at {short(last.upstream)} (--on-conflict drop); rebase it by hand",
                             style="yellow")
    if detached:
        ctx.console.line("  note: the superproject's HEAD is detached: the commit is on no "
                         "branch ('git branch NAME' keeps it)", style="yellow")
    ctx.console.line(f"  {path} is checked out on {branch}; the superproject is clean",
                     style="dim")
    return {"branch": branch, "submodule_commit": last.tip,
            "superproject_commits": [m.superproject_commit for m in done],
            "moves": [{"upstream": m.upstream, "submodule_commit": m.tip,
                       "superproject_commit": m.superproject_commit,
                       "crossed": len(m.crossed),
                       "patches": [a.to_json() for a in m.actions]} for m in done]}


# -- the command line -------------------------------------------------------------

def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("--submodule", action="append", default=[], metavar="PATH",
                   type=argtypes.nonempty,
                   help="the patched submodule (default: git config bisectkit.submodule, or "
                        "the only submodule)")
    p.add_argument("--upstream", metavar="REF", type=argtypes.nonempty, help=UPSTREAM_HELP)
    add_options(p, advance_strategy.KIND.argv.options)
    p.add_argument("--pathspec", action="append", default=[], metavar="PREFIX",
                   type=argtypes.pathspec,
                   help="only upstream commits that change these path prefixes are "
                        "candidates (repeatable), like 'bisectkit status -- PREFIX'")
    add_deepen(p)
    p.add_argument("--on-conflict", choices=ON_CONFLICT, default=None,
                   help="when a local patch conflicts at a candidate: the candidate blocks "
                        "the advance (skip, the default), or drop the patch there")
    _add_apply_options(p)
    add_run_options(p)
    add_force_ignored(p)
    add_plugin_group(p, pm)
    add_repro(p)
    # The option that chooses the advance strategy (its request reads what it gave).
    p.set_defaults(**{advance_strategy.ADVANCE.dest: True})


def _add_apply_options(p: argparse.ArgumentParser) -> None:
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


def _handle(ctx: Context, args: argparse.Namespace) -> int:
    request = start_request(ctx, args)
    assert isinstance(request, AdvanceRequest)
    return cmd_advance(ctx, request, apply_request(args))


#: ``bisectkit advance``.
COMMAND = Command(
    "advance",
    usage="bisectkit advance [--submodule PATH] [--upstream REF] [--to REV] [--linear] "
          "[--deepen] "
          "[--pathspec PREFIX]... [--apply [--branch NAME] [--step-commits]] "
          "[RUN OPTIONS] [--] SMOKETEST [ARGS...]",
    synopsis="bisectkit advance [options] [--] SMOKETEST [ARGS...]",
    description="Test the affecting upstream commits after the pin's merge-base (the "
                "patch stack replayed at each, as a bisect does): the far end first, then "
                "splits biased toward the pin: about 2*log2(d) builds when the first "
                "failure is d commits ahead, never more than a bisection of the range "
                "(log2(N)+1 for N commits). Prints the last good commit and the first bad "
                "one; --apply moves the pin there.",
    examples=(f"advance {about.EXAMPLE_BUILD} -- ./smoketest.sh",
              f"advance --apply {about.EXAMPLE_BUILD} -- ./smoketest.sh"),
    arguments=_arguments, handler=_handle, runs=True)
