"""A compiler-actions search run for a command: here (``bisectkit actions``), at a commit
materialised as a step would be (``actions --at REV``), or at the first bad commit a
bisection found (``bisectkit run --then-actions KIND``).

The procedure is :mod:`bisectkit.actions.search`; this module gives it the repro, the
console and the hooks, and shows its answer. At a commit, the session machinery of
``bisectkit run`` owns the trees: the lock, the journal, the restore however the
command ends (:func:`bisectkit.commands.running.run_restoring`).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bisectkit.actions.kinds import DEFAULT_MLIR_TAG, Kind
from bisectkit.actions.search import Answer, Search
from bisectkit.actions.tester import Command as ReproCommand
from bisectkit.actions.tester import Ran, Tester, scratch_dir
from bisectkit.commands import running
from bisectkit.commands.context import Context
from bisectkit.commands.starting import new_session, start_request
from bisectkit.engine import Found
from bisectkit.errors import BadInput, BisectkitError
from bisectkit.model import short
from bisectkit.pipeline.atcommit import materialise
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.finish import finish, finish_aborted
from bisectkit.pipeline.trace import Tracer
from bisectkit.ui.report.actions import headline, render_terminal


@dataclass(frozen=True)
class Settings:
    """What the command line asked of the search: the kind, ``--jobs``, ``--probe``,
    ``--ir`` and ``--confirm`` (``details``: ``"ir"``, ``"confirm"``)."""

    kind: Kind
    jobs: int = 1
    probes: int = 0
    details: tuple[str, ...] = ()


def search(ctx: Context, settings: Settings, workdir: str, env: Mapping[str, str],
           tracer: Tracer, runs: list[Ran]) -> Answer:
    """Run the procedure with the repro in ``workdir`` (``env``: its environment before
    bisectkit's variables); the answer, or the refusal raised. ``runs`` collects every
    repro run, for the outputs of a search that stops."""
    opts = ctx.options
    if not opts.repro and settings.jobs > 1:
        raise BadInput("--jobs needs a repro command (a plugin's repro runs one at a time)")
    if settings.jobs > 1 and ctx.hooks.has_repro_plugin():
        busy = ", ".join(ctx.hooks.runs_commands_itself())
        raise BadInput(f"plugin {busy} runs the repro itself, one run at a time: use "
                       "--jobs 1 with it")
    # Lines the rules would match survive the --keep-output cut, as in ``run``.
    watch = tuple(p for patterns in opts.rules.compiled().values() for p in patterns)
    command = ReproCommand(opts.repro, workdir, opts.timeout, opts.keep_output, watch,
                           ctx.console.file)
    scratch = scratch_dir()
    try:
        tester = Tester(ctx.hooks, command, env, tracer, scratch)
        tester.runs = runs
        ctx.console.line(f"bisecting the {settings.kind.name} actions of: "
                         f"{' '.join(opts.repro)}", style="bold")
        procedure = Search(settings.kind, tester, opts.repro, ctx.hooks.message,
                           jobs=settings.jobs, probes=settings.probes,
                           details=settings.details)
        return procedure.run()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def aborted(kind: Kind, exc: BaseException, runs: list[Ran]) -> dict[str, Any]:
    """The result of a search that stopped (its outputs still say so, and why)."""
    return {"strategy": "actions", "status": "aborted", "kind": kind.name,
            "reason": str(exc) or type(exc).__name__,
            "steps": [r.to_json() for r in sorted(runs, key=lambda r: r.index)]}


def show(ctx: Context, result: Mapping[str, Any]) -> None:
    """Print the answer (its JSON document): prose within the width, the IR diff (last)
    whole, as diff prints it."""
    diff = str(result.get("ir_diff") or "").rstrip("\n")
    lines = render_terminal(result)
    cut = len(lines) - (len(diff.split("\n")) if diff else 0)
    for line in lines[:cut]:
        ctx.console.line(line)
    for line in lines[cut:]:
        ctx.console.whole(line)


def exit_code(answer: Answer) -> int:
    """0 found, 1 only skips separate good from bad."""
    return 0 if answer.first_bad is not None else 1


def here(ctx: Context, settings: Settings, workdir: str, env: Mapping[str, str]) -> int:
    """``bisectkit actions`` in ``workdir``: search, show, write the outputs."""
    tracer, runs = Tracer(), list[Ran]()
    try:
        answer = search(ctx, settings, workdir, env, tracer, runs)
    except (BisectkitError, KeyboardInterrupt) as exc:
        finish_aborted(ctx.hooks, aborted(settings.kind, exc, runs), tracer)
        raise
    result = {**answer.to_json(), **_second_level(answer, ctx.options.repro)}
    show(ctx, result)
    finish(ctx.hooks, result, tracer)
    return exit_code(answer)


#: Options that do not carry over to the second level's command (its own outputs, and
#: the kind, which it names itself).
_OWN = {"--json", "--report", "--trace", "--probe", "--within", "--kind", "--tag"}
_OWN_FLAGS = {"--ir", "--confirm"}


def _second_level(answer: Answer, repro: Sequence[str]) -> dict[str, str]:
    """``second_level``: the command that bisects inside the first bad action, where one
    applies: the patterns of an MLIR pass execution, or the queries of the LLVM debug
    counter the first bad pass makes most (:attr:`Answer.counter_inside`). It is
    ``bisectkit actions`` as typed, with ``--within N``, without its own outputs."""
    kind, typed = answer.kind, sys.argv[1:]
    if answer.first_bad is None or kind.within is not None or "actions" not in typed:
        return {}
    if kind.mlir and kind.tag == DEFAULT_MLIR_TAG:
        chosen = ["--kind", "mlir-counter"]
    elif kind.family == "opt-bisect" and answer.counter_inside is not None:
        chosen = ["--kind", f"llvm-counter:{answer.counter_inside[0]}"]
    else:
        return {}
    words = typed[typed.index("actions") + 1:len(typed) - len(repro)]
    kept: list[str] = []
    skip = False
    for word in words:
        name = word.split("=", 1)[0]
        if skip or word == "--" or name in _OWN_FLAGS:
            skip = False
        elif name in _OWN:
            skip = "=" not in word
        else:
            kept.append(word)
    return {"second_level": shlex.join(["bisectkit", "actions", *chosen, *kept, "--within",
                                        str(answer.first_bad), "--", *repro])}


def at_commit(ctx: Context, args: argparse.Namespace, settings: Settings, rev: str) -> int:
    """``bisectkit actions --at REV``: REV checked out and built as a step of a bisection
    of the same target would be (``--submodule``: the patched upstream candidate;
    ``--integrate``: a superproject commit with its submodules), the actions searched
    there, everything restored however it ends."""
    # A session of one candidate: REV, with its first parent as the good end; the
    # strategy validates REV as it validates a bad end.
    sp, _ = ctx.open()
    args.bad, args.good = rev, [f"{rev}~1"]
    request = start_request(ctx, args)
    with ctx.run(sp) as run:
        run.require_idle()
        session = new_session(sp, request, ctx.deepener())
        ctx.check_outputs(sp, session)
        code, _ = running.run_restoring(
            ctx, run, session, body=lambda b: _at(ctx, b, settings, session.bad))
        return code


def _at(ctx: Context, b: Bisection, settings: Settings, commit: str) -> int:
    """The search at ``commit`` inside the run ``b``; shown and written."""
    tracer, runs = b.tracer, list[Ran]()
    try:
        answer = _search_at(ctx, b, settings, commit, runs)
    except (BisectkitError, KeyboardInterrupt) as exc:
        finish_aborted(ctx.hooks, {**aborted(settings.kind, exc, runs), "commit": commit},
                       tracer)
        raise
    result = {**answer.to_json(), "commit": commit,
              **_second_level(answer, ctx.options.repro)}
    show(ctx, result)
    finish(ctx.hooks, result, tracer)
    return exit_code(answer)


def _search_at(ctx: Context, b: Bisection, settings: Settings, commit: str,
               runs: list[Ran]) -> Answer:
    """Materialise and build ``commit``, search its actions, check the trees held."""
    done = materialise(b, commit, f"the {settings.kind.name} actions")
    answer = search(ctx, settings, done.step.workdir, done.step.env, b.tracer, runs)
    done.check("after the actions search")
    return answer


def then_actions(ctx: Context, settings: Settings, b: Bisection, decision: Found
                 ) -> dict[str, Any]:
    """``bisectkit run --then-actions``: the actions search at the first bad commit the
    run found (before the run restores); its JSON, or why it could not answer (the
    commit answer stands either way)."""
    commit = decision.first_bad
    ctx.console.line("")
    ctx.console.line(f"then the {settings.kind.name} actions at {short(commit)}:", style="bold")
    runs: list[Ran] = []
    try:
        answer = _search_at(ctx, b, settings, commit, runs)
    except BisectkitError as exc:
        ctx.console.error(f"actions at {short(commit)}: {exc}")
        return {**aborted(settings.kind, exc, runs), "commit": commit,
                "exit_code": int(exc.exit_code)}
    result = {**answer.to_json(), "commit": commit}
    show(ctx, result)
    ctx.console.line(f"first bad commit {short(commit)}; inside it, {headline(result)}",
                     style="bold")
    return result
