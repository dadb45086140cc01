"""``show-step N`` (both programs): print the kept build and repro output of step N of the
session in progress, or of the last one."""

from __future__ import annotations

import argparse

import pluggy

from bisectkit import safetext
from bisectkit.cli import argtypes
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput
from bisectkit.store import steplog


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("index", type=argtypes.whole_number(1), metavar="N",
                   help="the step's number, as printed")


def show_step(ctx: Context, args: argparse.Namespace) -> int:
    """Print the kept output of step ``args.index`` (exit 2 when none is kept)."""
    _, store = ctx.open()
    path = steplog.step_log_path(store.logs_dir, args.index)
    if not path.is_file():
        listed = ", ".join(map(str, steplog.kept_steps(store.logs_dir))) or "none"
        raise BadInput(f"no output kept for step {args.index} (steps with output: {listed})")
    ctx.console.file.write(safetext.lines(path.read_text(encoding="utf-8", errors="replace")))
    return 0


#: ``show-step``, in both programs.
COMMAND = Command(
    "show-step",
    description="Print the kept build and repro output of step N of the session in progress, "
                "or of the last one.",
    examples=("show-step 3",),
    arguments=_arguments, handler=show_step)
