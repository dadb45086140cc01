"""``bisectkit plugins``: list the loaded plugins (built-in, bundled, installed or given
with ``-p``), where each comes from and the hooks it implements."""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.cli.options import add_plugin_option
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.plugin import manager as plugins


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    add_plugin_option(p)


def list_plugins(ctx: Context, args: argparse.Namespace) -> int:
    """List every loaded plugin, where it came from and the hooks it implements."""
    for name, origin, hooks in plugins.describe(ctx.pm, ctx.config.origins):
        ctx.console.line(f"{name}")
        ctx.console.line(f"    from:  {origin}")
        ctx.console.line(f"    hooks: {hooks or '(none)'}")
    return 0


#: ``bisectkit plugins``.
COMMAND = Command(
    "plugins",
    description="List the loaded plugins (built-in, bundled, installed or given with -p): "
                "where each comes from and the hooks it implements.",
    examples=("plugins -p flaky",),
    arguments=_arguments, handler=list_plugins)
