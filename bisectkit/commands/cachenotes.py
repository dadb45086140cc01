"""What the user is told about the verdict cache, and the files runs write that it skips.

Lines for the user: a cache file that could not be used (it is rebuilt), known
verdicts a run could not reuse and why (``0 of 9 known verdicts reused:
untracked notes.txt is new``), local files that changed during a run (its
verdicts are not kept), what workspaces will not see of the user's tree. And
:func:`remember_output`: ``--json``, ``--report`` and ``--trace`` files written
in the work tree are recorded, so the next runs' keys skip them.
"""

from __future__ import annotations

import contextlib
import os

from bisectkit.commands.context import Context
from bisectkit.git.repo import Repo
from bisectkit.store.cache import VerdictCache
from bisectkit.store.session import SessionStore
from bisectkit.text import plural


def note_cache_file(ctx: Context, store: SessionStore, cache: VerdictCache) -> None:
    """At the start of a run: the cache file was unusable, or some entries were."""
    if cache.problem:
        ctx.console.line(f"note: the verdict cache {store.cache_path} is unreadable "
                         f"({cache.problem}); it is being rebuilt", style="yellow")
    elif cache.damaged:
        ctx.console.line(f"note: {plural(cache.damaged, 'damaged entry', 'damaged entries')} "
                         f"of the verdict cache {store.cache_path} ignored (tested again)",
                         style="yellow")


def note_cache_use(ctx: Context, sp: Repo, cache: VerdictCache) -> None:
    """At the end of a run: known verdicts not reused and why; local files that changed
    during the run (then none of its verdicts were kept)."""
    missed = cache.not_reused()
    if missed:
        ctx.console.line(f"note: {missed}", style="yellow")
    cache.unchanged()  # checked once more: a change after the last verdict counts too
    changed = cache.changed_files
    if not changed:
        return
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    ctx.console.line(
        f"note: {len(changed)} untracked or edited file(s) of the superproject changed during "
        f"this run ({', '.join(changed[:3])}{more}); they are part of the verdict cache's key, "
        "so none of this run's verdicts were kept in the cache. If the build writes them, "
        "write its outputs outside the work tree or ignore them (.gitignore, "
        ".git/info/exclude, git config bisectkit.cacheIgnore)", style="yellow")


def note_workspace_gaps(ctx: Context, gaps: list[str]) -> None:
    """Before the steps run in workspaces: what of the user's tree they will not see."""
    if not gaps:
        return
    more = f" (and {plural(len(gaps) - 1, 'more thing', 'more things')})" if len(gaps) > 1 else ""
    ctx.console.line(
        f"note: the workspaces hold only committed files: the steps will not see {gaps[0]}"
        f"{more} of your tree; commit what the build or the repro reads, or use --jobs 1 "
        "(verdicts tested in workspaces and in your tree are cached apart)", style="yellow")


def remember_output(ctx: Context, path: str) -> None:
    """Record ``path``, just written by this run, if it is in the superproject's work tree:
    while it holds what was written, it is not an input of later runs' cache keys."""
    sp = ctx.superproject
    if sp is None:
        return
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(sp.workdir) + os.sep):
        return
    with contextlib.suppress(OSError):  # only an optimisation: the file stays an input
        SessionStore(sp.git_dir).remember_output(real)
