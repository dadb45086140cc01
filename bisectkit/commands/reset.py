"""``git bisect-patched reset [COMMIT]``: restore every HEAD, index and work tree to where
the session found them and end the session, from whatever record survives (the journal,
even after a crash; a session waiting for its ends has moved nothing); with COMMIT, then
check it out in the superproject, as ``git bisect reset <commit>`` does."""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput
from bisectkit.git import cli as gitcli
from bisectkit.git.repo import Repo
from bisectkit.safety import signals


def reset(ctx: Context, args: argparse.Namespace) -> int:
    """``reset``, then ``git checkout COMMIT`` when one is given."""
    if args.commit is None:
        reset_session(ctx)
        return 0
    return reset_to(ctx, args.commit)


def reset_session(ctx: Context) -> bool:
    """Restore every repository and end the session; False when there was nothing to reset
    (not bisecting)."""
    sp, _ = ctx.open()
    console = ctx.console
    with ctx.run(sp) as run:
        had_session = run.has_session()
        lines: list[str] = []
        # Even without a session or journal: a reflog may show bisectkit's
        # checkout still in place (someone deleted .git/bisectkit).
        signals.run_shielded(lambda: lines.extend(run.end()))
    for line in lines:
        console.line(line)
    if not had_session and not lines:
        console.line("not bisecting; nothing to reset")
        return False
    if not any(line.startswith("restored ") for line in lines):
        console.line("nothing had moved; session ended")
    return True


def reset_to(ctx: Context, commit: str) -> int:
    """``reset <commit>``: restore everything, then check out ``commit`` in the
    superproject (``git bisect reset <commit>``: ``git checkout <commit>`` after the reset).

    ``commit`` is resolved first, as it names a commit now (``reset HEAD`` stays on
    what is checked out): a bad one is refused with nothing touched. A branch name
    checks the branch out; anything else leaves HEAD detached. Submodules stay where
    the reset put them (``git checkout`` does not move them either); a note says
    which no longer match the commit's pins.
    """
    sp, _ = ctx.open()
    sha = sp.try_resolve(commit)
    if sha is None:
        raise BadInput(f"'{commit}' is not a valid commit in {sp.workdir}; nothing was reset")
    is_branch = sp.try_resolve(f"refs/heads/{commit}") == sha
    if not reset_session(ctx):
        ctx.console.line(f"not checking out '{commit}' (there was no bisection to end)",
                         style="dim")
        return 0
    gitcli.checked(sp.workdir, f"everything is restored, but 'git checkout {commit}' failed",
                   "checkout", "-q", commit if is_branch else sha)
    ctx.console.line(f"checked out '{commit}': {sp.worktree.head_state().describe()}")
    for path in _unmatched_pins(sp):
        ctx.console.line(f"  submodule {path} is not at the commit '{commit}' pins; 'git "
                         f"submodule update {path}' moves it there", style="yellow")
    return 0


def _unmatched_pins(sp: Repo) -> list[str]:
    """Checked-out submodules whose HEAD is not the commit the index (just checked out)
    pins."""
    out = []
    for path, pinned in sorted(sp.worktree.gitlinks().items()):
        if not (sp.workdir / path / ".git").exists():
            continue  # not initialised: there is nothing to move
        if Repo(sp.workdir / path).worktree.head_state().sha != pinned:
            out.append(path)
    return out


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("commit", nargs="?", metavar="COMMIT",
                   help="a superproject commit or branch to check out after the reset")


#: ``git bisect-patched reset``.
COMMAND = Command(
    "reset",
    description="Restore every HEAD, index and work tree to where the session found them and "
                "end the session (from the journal, even after a crash). With COMMIT, then "
                "check it out in the superproject, like 'git bisect reset <commit>' (a branch "
                "is checked out, anything else detaches HEAD; submodules stay as restored). "
                "COMMIT is resolved first: 'reset HEAD' stays on what is checked out now, and "
                "a bad COMMIT changes nothing.",
    examples=("reset", "reset main"),
    arguments=_arguments, handler=reset)
