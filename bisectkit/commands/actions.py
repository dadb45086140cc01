"""``bisectkit actions``: the first compiler action (an LLVM pass execution, an MLIR
action, an LLVM debug-counter query) after which the repro's output turns bad.

Runs in any directory (no git needed): the repro splices ``$BISECTKIT_ACTIONS`` into
its compiler's command line; :mod:`bisectkit.actions.search` is the procedure.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pluggy

from bisectkit.actions import kinds
from bisectkit.actions.search import Answer, Search
from bisectkit.actions.tester import Command as ReproCommand
from bisectkit.actions.tester import Tester, scratch_dir
from bisectkit.cli.argtypes import jobs, whole_number
from bisectkit.cli.options import (
    add_plugin_group,
    add_plugin_option,
    add_repro,
    add_verdict_options,
)
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput, BisectkitError
from bisectkit.pipeline.finish import finish, finish_aborted
from bisectkit.pipeline.trace import Tracer
from bisectkit.ui.report.actions import render_terminal

#: Options of ``run`` that ``actions`` does not take, at the values that mean "none".
_NOT_TAKEN: dict[str, object] = {
    "build": None, "no_cache": True, "cache_input": [], "cache_env": [], "no_verify": False,
    "max_env_skips": 0, "verify_range": False, "check_stack": False, "scheduler": None,
    "workspace_root": None, "resources": [], "no_workers_timeout": None}


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
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
                        "the apply-pattern actions of pass-execution N (later passes do not "
                        "run)")
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
    p.set_defaults(**_NOT_TAKEN)
    add_plugin_group(p, pm)
    add_repro(p)


def run_actions(ctx: Context, args: argparse.Namespace) -> int:
    """Bisect the compiler's actions under the repro; print (and write) the answer."""
    if not args.kind:
        raise BadInput("give the kind of action to bisect: --kind opt-bisect, --kind "
                       "mlir-counter or --kind llvm-counter:NAME")
    kind = kinds.parse(args.kind, args.tag, args.within)
    opts = ctx.options
    if not opts.repro and (args.jobs or 1) > 1:
        raise BadInput("--jobs needs a repro command (a plugin's repro runs one at a time)")
    watch = tuple(re.compile(p, re.MULTILINE)
                  for patterns in opts.rules.compiled().values() for p in patterns)
    command = ReproCommand(opts.repro, str(Path.cwd()), opts.timeout, opts.keep_output,
                           watch, ctx.console.file)
    tracer = Tracer()
    scratch = scratch_dir()
    tester = Tester(ctx.hooks, command, os.environ, tracer, scratch)
    ctx.console.line(f"bisecting the {kind.name} actions of: {' '.join(opts.repro)}",
                     style="bold")
    search = Search(kind, tester, opts.repro, ctx.hooks.message, jobs=args.jobs or 1,
                    probes=args.probe,
                    details=[d for d in ("ir", "confirm") if getattr(args, d)])
    try:
        answer = search.run()
    except (BisectkitError, KeyboardInterrupt) as exc:
        finish_aborted(ctx.hooks, _aborted(kind, tester, exc), tracer)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    data = answer.to_json()
    deeper = _second_level(answer, opts.repro)
    if deeper:
        data["second_level"] = deeper
    for line in render_terminal(data):
        ctx.console.line(line)
    finish(ctx.hooks, data, tracer)
    return _exit_code(answer)


#: Options that do not carry over to the second level's command (its own outputs).
_OWN = {"--json", "--report", "--trace", "--probe", "--within"}
_OWN_FLAGS = {"--ir", "--confirm"}


def _second_level(answer: Answer, repro: tuple[str, ...]) -> str | None:
    """The command that bisects inside the first bad action, where one applies: the
    command as typed, with ``--within N`` and without its own outputs."""
    kind = answer.kind
    if answer.first_bad is None or kind.within is not None or not (
            kind.mlir and kind.tag == kinds.DEFAULT_MLIR_TAG):
        return None
    typed = sys.argv[1:]
    at = typed.index("actions") if "actions" in typed else -1
    words = typed[at + 1:len(typed) - len(repro)] if repro else typed[at + 1:]
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
    return shlex.join(["bisectkit", "actions", *kept, "--within", str(answer.first_bad),
                       "--", *repro])


def _aborted(kind: kinds.Kind, tester: Tester, exc: BaseException) -> dict[str, object]:
    """The result of a procedure that stopped (its outputs still say so)."""
    return {"strategy": "actions", "status": "aborted", "kind": kind.name,
            "reason": str(exc) or type(exc).__name__,
            "steps": [r.to_json() for r in sorted(tester.runs, key=lambda r: r.index)]}


def _exit_code(answer: Answer) -> int:
    """0 found, 1 only skips separate good from bad."""
    return 0 if answer.first_bad is not None else 1


#: ``bisectkit actions``.
COMMAND = Command(
    "actions", help="find the first compiler action (pass, pattern) that turns the output bad",
    description="Bisect inside one compiler run: the first LLVM pass execution (OptBisect), "
                "MLIR action (debug counter) or LLVM debug-counter query after which the "
                "repro's output turns bad. The repro puts $BISECTKIT_ACTIONS, unquoted, on "
                "the compiler's command line and lets its stderr reach its own output (or "
                "appends it to $BISECTKIT_ACTION_LOG). No git repository is needed.",
    examples=("actions --kind opt-bisect -- ./repro.sh",
              "actions --kind mlir-counter --tag apply-pattern --report bug.md -- ./repro.sh"),
    arguments=_arguments, handler=run_actions, runs=True)
