"""Pure shared values: what the layers of bisectkit hand each other.

Nothing here does I/O or imports another bisectkit module: every module may
import this package, so the types that cross layers live here rather than in
the module that happens to produce them. Plugin authors get the public ones
from :mod:`bisectkit`.

- :mod:`.sha`: commit and tree ids (:class:`Sha`) and how they are shortened;
- :mod:`.values`: verdicts and terms, commits, outcomes, steps and step records;
- :mod:`.requests`: start requests, run options, follow-ups, plugin configuration;
- :mod:`.params`: each strategy's parameters, as a session keeps them;
- :mod:`.dropped`: the lines written where a command's output was dropped.
"""

from bisectkit.model.requests import (
    AdvanceRequest,
    ApplyRequest,
    Config,
    FollowUp,
    IntegrateRequest,
    OptionGroup,
    Parallel,
    RunOptions,
    StackRequest,
    StartRequest,
    SubmoduleRequest,
)
from bisectkit.model.sha import Sha, short
from bisectkit.model.values import (
    CANCELLED,
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    DEFAULT_MAX_SKIPS,
    DEFAULT_NO_WORKERS_TIMEOUT,
    GIT_PROG,
    HOW_TO_CHOOSE_UPSTREAM,
    ON_CONFLICT,
    PROJECT,
    SUPERPROJECT,
    UPSTREAM_KEY,
    VERDICTS,
    VERSION,
    CommitInfo,
    HeadState,
    OnConflict,
    Outcome,
    Rules,
    Step,
    StepRecord,
    Terms,
    Upstream,
    Verdict,
    hookimpl,
    hookspec,
)

__all__ = [
    "CommitInfo",
    "Config",
    "DEFAULT_KEEP",
    "DEFAULT_MAX_ENV_SKIPS",
    "DEFAULT_MAX_SKIPS",
    "DEFAULT_NO_WORKERS_TIMEOUT",
    "FollowUp",
    "GIT_PROG",
    "HOW_TO_CHOOSE_UPSTREAM",
    "HeadState",
    "AdvanceRequest",
    "ApplyRequest",
    "IntegrateRequest",
    "ON_CONFLICT",
    "OnConflict",
    "OptionGroup",
    "Outcome",
    "Parallel",
    "PROJECT",
    "Rules",
    "RunOptions",
    "CANCELLED",
    "SUPERPROJECT",
    "Sha",
    "UPSTREAM_KEY",
    "StackRequest",
    "StartRequest",
    "Step",
    "StepRecord",
    "SubmoduleRequest",
    "Terms",
    "Upstream",
    "VERDICTS",
    "VERSION",
    "Verdict",
    "hookimpl",
    "hookspec",
    "short",
]
