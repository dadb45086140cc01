"""Which loop tests a run's candidates, and with what: the user's tree or a pool of
workspaces (``--jobs``, ``--scheduler``), the verdict cache and its notes, the trace.

The pipeline's choices, made from typed run options: :mod:`bisectkit.pipeline.drive`
asks for a loop (:func:`loop_for`) and its cache (:func:`open_cache`) and runs it to the
answer (:func:`~bisectkit.pipeline.verify.run_to_end`). What the user should know about
the cache is said through the hooks (``bisectkit_message``), like everything the pipeline says.
"""

from __future__ import annotations

import os
import secrets
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from bisectkit.errors import BadInput
from bisectkit.model import SUPERPROJECT, RunOptions
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.parallel.loop import ParallelBisection
from bisectkit.pipeline.parallel.pools import open_pool
from bisectkit.pipeline.parallel.workspace import default_root
from bisectkit.pipeline.trace import Tracer
from bisectkit.safety import signals
from bisectkit.store.cache import VerdictCache
from bisectkit.store.cachekey import Skipped, run_identity, workspace_gaps
from bisectkit.text import plural


@contextmanager
def loop_for(b: Bisection, opts: RunOptions, outputs: Sequence[str]) -> Iterator[Bisection]:
    """The loop that runs ``b``'s steps: ``b`` itself, or (parallel options) a
    :class:`ParallelBisection` on a pool that is closed when the block ends, however it
    ends. ``outputs``: the files this run writes (never inputs of the cache key). Every
    step is traced (a few events each): the trace goes to ``bisectkit_session_finish``,
    where ``--trace`` writes it."""
    b.trace_to(Tracer(), {"build": opts.build or "", "repro": shlex.join(opts.repro)})
    if not opts.parallel.enabled:
        yield b
        return
    if b.parts.no_checkout:  # workspaces check out what BISECT_HEAD would name: one only
        raise BadInput("--no-checkout names one candidate at a time (BISECT_HEAD): not with "
                       "--jobs or --scheduler")
    pool = open_pool(opts.parallel, default_root(b.superproject.git_dir), secrets.token_hex(4),
                     opts.timeout)
    parallel: ParallelBisection | None = None

    def close() -> None:
        if parallel is not None:
            parallel.stop_all()  # a verify step in flight when Ctrl-C came, say
        pool.close()

    try:
        parallel = ParallelBisection(b, pool, opts)
        b.hooks.message(f"testing up to {pool.slots} candidates at once: {pool.description}",
                        "info")
        _note_workspace_gaps(b, workspace_gaps(opts, b.superproject, moved(b),
                                               skipped(b, outputs)))
        yield parallel
    finally:
        signals.run_shielded(close)


def open_cache(b: Bisection, opts: RunOptions, cache_env: Sequence[str],
               outputs: Sequence[str]) -> VerdictCache | None:
    """The verdict cache of this run (None with ``--no-cache``), its key read now."""
    if not opts.use_cache:
        return None
    # Read once, before the first step: what the build writes during the run
    # does not change the key; the run's own output files are not inputs, nor
    # those earlier runs wrote while they hold what was written. Steps run in
    # workspaces are keyed by what the workspaces hold: committed files only.
    sp = b.superproject
    identity = run_identity(opts, sp, moved(b), skipped(b, outputs), cache_env,
                            workspaces=opts.parallel.enabled, no_checkout=b.parts.no_checkout)
    cache = VerdictCache(b.store, identity, lambda text: b.hooks.message(text, "note"),
                         changed=lambda: identity.changed_local_files(sp))
    if cache.problem:
        b.hooks.message(f"note: the verdict cache {b.store.cache_path} is unreadable "
                        f"({cache.problem}); it is being rebuilt", "warning")
    elif cache.damaged:
        b.hooks.message(f"note: {plural(cache.damaged, 'damaged entry', 'damaged entries')} "
                        f"of the verdict cache {b.store.cache_path} ignored (tested again)",
                        "warning")
    return cache


def note_cache_use(b: Bisection, cache: VerdictCache) -> None:
    """At the end of a run: known verdicts not reused and why; local files that changed
    during the run (then none of its verdicts were kept)."""
    missed = cache.not_reused()
    if missed:
        b.hooks.message(f"note: {missed}", "warning")
    cache.unchanged()  # checked once more: a change after the last verdict counts too
    changed = cache.changed_files
    if not changed:
        return
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    b.hooks.message(
        f"note: {len(changed)} untracked or edited file(s) of the superproject changed during "
        f"this run ({', '.join(changed[:3])}{more}); they are part of the verdict cache's key, "
        "so none of this run's verdicts were kept in the cache. If the build writes them, "
        "write its outputs outside the work tree or ignore them (.gitignore, "
        ".git/info/exclude, git config bisectkit.cacheIgnore)", "warning")


def _note_workspace_gaps(b: Bisection, gaps: list[str]) -> None:
    """Before the steps run in workspaces: what of the user's tree they will not see."""
    if not gaps:
        return
    more = f" (and {plural(len(gaps) - 1, 'more thing', 'more things')})" if len(gaps) > 1 else ""
    b.hooks.message(
        f"note: the workspaces hold only committed files: the steps will not see {gaps[0]}"
        f"{more} of your tree; commit what the build or the repro reads, or use --jobs 1 "
        "(verdicts tested in workspaces and in your tree are cached apart)", "warning")


def moved(b: Bisection) -> list[str]:
    """The submodules the strategy checks out (their trees are in the key); none with
    ``--no-checkout``: their work trees are the user's, keyed as found."""
    if b.parts.no_checkout:
        return []
    return [p for p in b.session.orig if p != SUPERPROJECT]


def skipped(b: Bisection, outputs: Sequence[str]) -> Skipped:
    """What of the superproject is not an input: this run's outputs, earlier runs'."""
    return Skipped.of(b.superproject, [os.path.realpath(f) for f in outputs],
                      b.store.own_outputs())
