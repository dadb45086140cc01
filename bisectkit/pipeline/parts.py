"""What the pieces of one run share: the session and where it is saved, the strategy, the
hooks, the trace and the commands as shown.

One :class:`RunParts` per run, made by the run's owner (:class:`~bisectkit.pipeline.
bisection.Bisection`) and handed as a typed argument to its collaborators (the step
tester, ``--all-parents`` descent, the parallel loop, which shares it instead of
copying fields): none of them holds the bisection itself.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from bisectkit.engine import ContradictoryVerdicts
from bisectkit.errors import BadInput, PluginFailed
from bisectkit.model import Sha, Step, Terms, short
from bisectkit.pipeline.trace import NullTracer, Tracer
from bisectkit.plugin.facade import Hooks
from bisectkit.safety.bisecthead import BisectHead
from bisectkit.safety.undertest import Held
from bisectkit.store.session import Session, SessionStore
from bisectkit.store.steplog import append_failure
from bisectkit.strategies.base import Prepared, Strategy
from bisectkit.strategies.common import step_env

T = TypeVar("T")


@dataclass
class RunParts:
    """The state one run's pieces share (the session is saved through ``store``)."""

    session: Session
    store: SessionStore
    strategy: Strategy
    hooks: Hooks
    #: The ``--trace`` recorder (a no-op unless the run traces).
    tracer: Tracer = field(default_factory=NullTracer)
    #: The build and repro commands as shown to the user (the trace names them).
    commands: dict[str, str] = field(default_factory=dict)

    @property
    def terms(self) -> Terms:
        """The session's words for its two sides."""
        return self.session.terms

    def term(self, verdict: str) -> str:
        """The word shown for an engine verdict (``--term-old/--term-new``)."""
        return self.terms.word(verdict)

    def contradiction(self, exc: ContradictoryVerdicts) -> str:
        """The engine's complaint in the session's words (``--find-fix``, ``--term-*``)."""
        return (f"{short(exc.old)} is marked {self.term('good')} but is not older than "
                f"{short(exc.new)}, which is {self.term('bad')}")

    @functools.cached_property
    def bisect_head(self) -> BisectHead:
        """``--no-checkout``: candidates are named by BISECT_HEAD, no work tree moves."""
        return BisectHead(self.store.bisect_head_path)

    @functools.cached_property
    def no_checkout(self) -> bool:
        return self.bisect_head.wanted

    def place(self, prep: Prepared) -> int:
        """Check ``prep`` out (files written); with ``--no-checkout``, point BISECT_HEAD of
        the repository bisected at the commit it would check out there (none written)."""
        if not self.no_checkout:
            return self.strategy.checkout_fetching(prep)
        repo = self.strategy.history
        top = self.strategy.superproject.workdir
        key = "." if repo.workdir == top else repo.workdir.relative_to(top).as_posix()
        commit = prep.checkouts.get(key)
        if commit is None:
            raise BadInput(f"--no-checkout: a {self.strategy.name} bisection has no commit "
                           "to point BISECT_HEAD at; start without it")
        self.bisect_head.point(key, repo, commit)
        self.hooks.message(f"BISECT_HEAD of {key if key != '.' else 'the superproject'} is "
                           f"{short(commit)} (--no-checkout: no work tree moved)", "note")
        return 0

    def watched(self, prep: Prepared) -> dict[str, Held]:
        """What must still hold for a step on ``prep`` to give a verdict: what it checked out
        and what it leaves as found; with ``--no-checkout``, only the latter."""
        held = self.strategy.under_test(prep)
        if not self.no_checkout:
            return dict(held)
        return {key: h for key, h in held.items() if not h.checked_out}

    def new_step(self, index: int, commit: str, prep: Prepared) -> Step:
        """Step ``index`` testing ``commit``: the build/repro environment is ours plus the
        strategy's (``prep.env``) plus ``BISECTKIT_STEP``."""
        env = {**os.environ, **prep.env, **step_env(step=index)}
        return Step(index=index, commit=Sha(commit), strategy=self.strategy.name, env=env,
                    workdir=self.session.root)

    def call_step_hook(self, step: Step, call: Callable[[], T]) -> T:
        """Call a step hook; a plugin that raises stops the run, its traceback in the step log."""
        try:
            return call()
        except PluginFailed as exc:
            path = append_failure(self.store.logs_dir, step, f"{exc}\n{exc.traceback_text}")
            if path is None:
                raise exc from None  # the one line is what matters; the log is a bonus
            raise PluginFailed(exc.plugin, exc.hook, exc.cause, exc.traceback_text,
                               log=str(path)) from exc.cause
