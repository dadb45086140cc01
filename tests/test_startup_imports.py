"""A process imports what its command needs: in a manual session every ``good``, ``bad`` or
``status`` is a new process (``git bisect run`` calls nothing of ours), so importing every
command's module, and all they import (the compiler-actions level, the workspaces of
``--jobs`` and asyncio with them), would be paid again at every step.

Each command line runs in a fresh interpreter, through the entry point the console
scripts call, which then names the modules imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.worlds import SUBMODULE, World, git_cli

from bisectkit.commands import registry

#: One command line through the entry point (``git``: git bisect-patched's), then the names
#: of the modules imported, one a line, into the file named.
_PROBE = """
import sys
from pathlib import Path
from bisectkit import app
entry = app.git_main if sys.argv[1] == "git" else app.main
code = entry(sys.argv[3:])
Path(sys.argv[2]).write_text("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""

#: The module of every command of both programs.
COMMAND_MODULES = {f"bisectkit.commands.{entry.module}"
                   for entry in (*registry.BISECTKIT, *registry.GIT)}
#: What only some commands need: the compiler-actions level, the workspaces of --jobs and
#: the Dask client (asyncio).
NOT_FOR_A_SESSION_STEP = ("bisectkit.actions", "bisectkit.pipeline.parallel", "asyncio")


def _imported(cwd: Path, env: dict[str, str], program: str, *words: str) -> set[str]:
    listing = cwd.parent / "imported.txt"
    r = subprocess.run([sys.executable, "-c", _PROBE, program, str(listing), *words], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr + r.stdout
    return set(listing.read_text().split())


def _families(modules: set[str]) -> set[str]:
    return {m for m in modules for family in NOT_FOR_A_SESSION_STEP
            if m == family or m.startswith(f"{family}.")}


# Demonstrates: every 'git bisect-patched good' or 'status' imported the module of every
# command of both programs (advance, actions, replay, visualize...) and with them the
# compiler-actions level and asyncio, to build a parser of every command.
def test_a_session_step_imports_only_its_own_command(world: World) -> None:
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    for words, own in [(["status"], "status"), (["terms"], "terms"), (["good"], "mark"),
                       (["bad"], "mark")]:
        imported = _imported(world.superproject, world.env, "git", *words)
        assert imported & COMMAND_MODULES == {f"bisectkit.commands.{own}"}, words
        assert _families(imported) == set(), words


def test_the_programs_help_and_a_read_only_command_import_no_other_command(
        world: World) -> None:
    assert _imported(world.superproject, world.env, "bisectkit", "-h") & COMMAND_MODULES == set()
    assert _imported(world.superproject, world.env, "git", "-h") & COMMAND_MODULES == set()
    imported = _imported(world.superproject, world.env, "bisectkit", "status")
    assert imported & COMMAND_MODULES == {"bisectkit.commands.stack_status"}
    assert _families(imported) == set()
