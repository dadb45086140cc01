"""``bisectkit workspaces [--prune]``: list the workspaces ``--jobs`` and ``--scheduler``
keep between runs (a clone per job, reused so builds stay warm), or remove those no run is
using."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pluggy

from bisectkit.cli.options import add_workspace_root
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.model import short
from bisectkit.pipeline.parallel import workspace, wsroot
from bisectkit.text import plural


def cmd_workspaces(ctx: Context, root_given: str | None, prune: bool) -> int:
    """List the workspaces under the root (or remove the idle ones with ``prune``)."""
    root = _root(ctx, root_given)
    if prune:
        removed, busy = wsroot.prune(root)
        for path in removed:
            ctx.console.line(f"removed {path}")
        for path in busy:
            ctx.console.line(f"kept {path}: a run is using it", style="yellow")
        if not removed and not busy:
            ctx.console.line(f"no workspaces under {root}")
        return 0
    found = wsroot.listing(root)
    if not found:
        ctx.console.line(f"no workspaces under {root}")
        return 0
    ctx.console.line(f"{plural(len(found), 'workspace')} under {root}:")
    for ws in found:
        held = short(ws.commit) if ws.commit else "(empty)"
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(ws.last_used)) \
            if ws.last_used else "never"
        state = "in use" if ws.busy else "idle"
        ctx.console.line(f"  {ws.path.name:<6} {state:<6} holds {held}  last used {used}  "
                         f"{ws.path}")
    ctx.console.line("'bisectkit workspaces --prune' removes them (and their builds)",
                     style="dim")
    return 0


def _root(ctx: Context, given: str | None) -> Path:
    if given:
        return Path(given).expanduser().resolve()
    sp, _ = ctx.open()
    configured = sp.config_get("bisectkit.workspace-root")
    if configured:
        return Path(configured).expanduser().resolve()
    return workspace.default_root(sp.git_dir)


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    add_workspace_root(p)
    p.add_argument("--prune", action="store_true",
                   help="remove every workspace no run is using (their builds go too)")


#: ``bisectkit workspaces``.
COMMAND = Command(
    "workspaces",
    description="List the workspaces kept for --jobs and --scheduler (a clone per job, "
                "reused so builds stay warm), or remove the unused ones with --prune.",
    examples=("workspaces --prune",),
    arguments=_arguments,
    handler=lambda ctx, args: cmd_workspaces(ctx, args.workspace_root, args.prune))
