"""``bisectkit status``: a patched submodule against its upstream: the local patch stack,
how far the pin is behind, and the newest upstream commits that affect it. Read-only, with
or without a session (``git bisect-patched status`` shows the session:
:mod:`bisectkit.commands.status`)."""

from __future__ import annotations

import argparse
import json

import pluggy

from bisectkit.cli import argtypes
from bisectkit.cli.options import UPSTREAM_HELP
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.patches import status as stack_status


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("--submodule", metavar="PATH", type=argtypes.nonempty,
                   help="default: git config bisectkit.submodule, or the only submodule")
    p.add_argument("--upstream", metavar="REF", type=argtypes.nonempty, help=UPSTREAM_HELP)
    p.add_argument("--json", action="store_true", help="print JSON instead")
    p.add_argument("--limit", type=argtypes.whole_number(0), default=20, metavar="N",
                   help="show the newest N affecting upstream commits (0: all; default 20)")
    p.add_argument("pathspec", nargs="*", metavar="PATHSPEC", type=argtypes.pathspec,
                   help="count only upstream commits touching these path prefixes")


def show_stack_status(ctx: Context, args: argparse.Namespace) -> int:
    """Collect the stack's status, then print it (as text, or ``--json``)."""
    sp, _ = ctx.open()
    data = stack_status.collect(sp, args.submodule, args.upstream, list(args.pathspec))
    if args.json:
        ctx.console.file.write(json.dumps(data, indent=2) + "\n")
    else:
        ctx.console.stack_status(data, args.limit)
    return 0


#: ``bisectkit status``.
COMMAND = Command(
    "status",
    usage="bisectkit status [--submodule PATH] [--upstream REF] [--json] [--limit N] "
          "[-- PATHSPEC...]",
    synopsis="bisectkit status [options] [-- PATHSPEC...]",
    description="Show a patched submodule against its upstream: the local patch stack, how far "
                "the pin is behind, and the newest upstream commits affecting it (read-only; "
                "with or without a session).",
    examples=("status --limit 5 -- mlir/",),
    arguments=_arguments, handler=show_stack_status)
