"""The step under test, as plugins see it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Step:
    """One test of one candidate."""

    #: 1-based step number within this bisection.
    index: int
    #: The candidate under test (an upstream commit for ``submodule``).
    commit: str
    strategy: str
    #: Environment given to the build and the repro.
    env: dict[str, str] = field(default_factory=dict)
    #: Directory the build and the repro run in (the superproject root).
    workdir: str = "."
    #: Why the verdict was reached; classifiers may set it.
    reason: str | None = None
