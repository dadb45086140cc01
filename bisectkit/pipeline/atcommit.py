"""One commit checked out and built exactly as a bisection step would, for work that is
not a step's repro: the compiler-actions search of ``bisectkit actions --at REV`` and
``bisectkit run --then-actions``.

The commit is prepared by the session's strategy (the patched candidate: the stack
replayed in memory), checked out through the journaled mover and built through the
hooks, inside the run that owns the lock and the journal: a kill at any instant is
restored as any step's is. :class:`Materialised` watches the trees from the checkout
on; :meth:`Materialised.check` refuses (:class:`~bisectkit.errors.TreeMoved`) work
whose trees moved meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

from bisectkit.errors import Aborted
from bisectkit.model import Step, short
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.testing import cleaned
from bisectkit.safety import undertest


@dataclass
class Materialised:
    """``commit`` checked out and built: the step (its environment and directory) whose
    work runs there, and the watch over its trees."""

    commit: str
    step: Step
    watch: undertest.Watch

    def check(self, when: str) -> None:
        """:class:`~bisectkit.errors.TreeMoved` unless the trees still hold ``commit``."""
        self.watch.check(self.step.index, when)


def materialise(b: Bisection, commit: str, why: str) -> Materialised:
    """Check ``commit`` out as a step would (its patched candidate) and build it; a commit
    that cannot be prepared (a patch conflicts) or built stops the command (exit 3):
    nothing could be bisected inside a compiler that does not exist. ``why`` names the
    work in the trace and the messages (``actions``)."""
    index = b.next_index()
    b.tracer.name_track(index, f"{why}: {short(commit)}")
    with b.tracer.span("prepare", index):
        prep = b.strategy.prepare_fetching(commit)
    if prep.skip_reason is not None:
        raise Aborted(f"{short(commit)} cannot be checked out for {why}: {prep.skip_reason}")
    b.session.current = None  # the work tree will hold this commit, not a candidate
    b.store.save(b.session)
    b.hooks.message(f"checking out {short(commit)} for {why}", "progress")
    with b.tracer.span("checkout", index):
        written = b.parts.place(prep)
    b.hooks.prepared(index, prep.details, written)
    step = b.parts.new_step(index, commit, prep)
    watch = undertest.Watch(b.parts.watched(prep))
    b.hooks.phase(index, "build")
    with b.tracer.span("build", index):
        built = cleaned(b.parts.call_step_hook(step, lambda: b.hooks.build(step)))
    done = Materialised(commit, step, watch)
    done.check("after the build")
    if built is not None and not built.ok:
        raise Aborted(f"the build failed at {short(commit)} ({built.describe()}): no compiler "
                      f"to bisect the {why} of")
    return done
