"""What the pieces of one run share: the session and where it is saved, the strategy, the
hooks, the trace and the commands as shown.

One :class:`RunParts` per run, made by the run's owner (:class:`~bisectkit.pipeline.
bisection.Bisection`) and handed as a typed argument to its collaborators (the step
tester, ``--all-parents`` descent, the parallel loop, which shares it instead of
copying fields): none of them holds the bisection itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from bisectkit.engine import ContradictoryVerdicts
from bisectkit.errors import PluginFailed
from bisectkit.model import Sha, Step, Terms, short
from bisectkit.pipeline.trace import NullTracer, Tracer
from bisectkit.plugin.facade import Hooks
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
