"""``bisectkit workspaces [--prune]``: the workspaces ``--jobs`` keeps between runs."""

from __future__ import annotations

import time
from pathlib import Path

from bisectkit.commands.context import Context
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
        held = ws.commit[:12] if ws.commit else "(empty)"
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
