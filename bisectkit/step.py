"""The step under test, as plugins see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Step:
    """One test of one candidate."""

    #: 1-based step number within this bisection.
    index: int
    #: The candidate under test (an upstream commit for ``submodule``, a
    #: superproject commit for ``integrate``).
    commit: str
    #: ``"submodule"`` or ``"integrate"``.
    strategy: str
    #: Environment given to the build and the repro (``BISECTKIT_*`` included).
    env: dict[str, str] = field(default_factory=dict)
    #: Directory the build and the repro run in (the superproject root).
    workdir: str = "."
    #: Why the verdict was reached; classifiers may set it.
    reason: str | None = None
    #: Set (to a short why) when the machine, not the commit, decided a ``skip``: a
    #: driver missing on a machine that should have it, a timeout, a command that
    #: cannot run. ``--max-env-skips`` consecutive such steps stop the run.
    environment: str | None = None
    #: Short notes shown in the final report (e.g. "runs disagree").
    flags: list[str] = field(default_factory=list)
    #: Extra data kept in the step's JSON record.
    extra: dict[str, Any] = field(default_factory=dict)
    #: Output of each phase that ran ("build", "repro"), for observers.
    outputs: dict[str, str] = field(default_factory=dict)
    #: The step's JSON record, filled in when the verdict is recorded.
    record: dict[str, Any] = field(default_factory=dict)
