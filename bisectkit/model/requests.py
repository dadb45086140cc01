"""Pure shared values: what to bisect (the start requests), how to test (run options),
follow-ups, and what plugins are configured with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from bisectkit.model.values import (
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    DEFAULT_MAX_SKIPS,
    DEFAULT_NO_WORKERS_TIMEOUT,
    OnConflict,
    Rules,
    Terms,
    Verdict,
)

if TYPE_CHECKING:
    from pathlib import Path


# -- what to bisect ------------------------------------------------------------------
@dataclass(frozen=True)
class SubmoduleRequest:
    """Bisect upstream commits of a patched submodule, the stack replayed at each."""

    submodule: str
    bad: str
    good: tuple[str, ...]
    upstream: str | None = None
    pathspec: tuple[str, ...] = ()
    on_conflict: OnConflict = "skip"
    terms: Terms = Terms()
    #: ``--all-parents``: bisect into the merges found bad (:mod:`bisectkit.pipeline.descent`).
    all_parents: bool = False


@dataclass(frozen=True)
class IntegrateRequest:
    """Bisect the superproject's own commits, submodules updated at each."""

    bad: str
    good: tuple[str, ...]
    #: Submodules to update at each step; empty means every initialised one.
    submodules: tuple[str, ...] = ()
    upstream: str | None = None
    pathspec: tuple[str, ...] = ()
    terms: Terms = Terms()
    #: ``--all-parents``: bisect into the merges found bad (:mod:`bisectkit.pipeline.descent`).
    all_parents: bool = False


@dataclass(frozen=True)
class StackRequest:
    """Bisect a submodule's own patch stack at one upstream commit."""

    submodule: str
    at: str
    upstream: str | None = None
    terms: Terms = Terms()


@dataclass(frozen=True)
class AdvanceRequest:
    """Find how far a patched submodule's pin can move toward upstream (``advance``): the
    affecting upstream commits after the merge-base up to ``to`` (None: the upstream's
    head), the stack replayed at each; a pin-biased search, or each in order (``linear``)."""

    submodule: str
    upstream: str | None = None
    to: str | None = None
    pathspec: tuple[str, ...] = ()
    linear: bool = False
    on_conflict: OnConflict = "skip"
    terms: Terms = Terms()


@dataclass(frozen=True)
class ApplyRequest:
    """``advance --apply``: the new submodule branch ("": the default name) and whether
    each good step of a linear advance gets its own superproject commit."""

    branch: str = ""
    step_commits: bool = False


#: What ``start`` (or ``bisectkit run``) was asked to bisect, before validation.
StartRequest = SubmoduleRequest | IntegrateRequest | StackRequest | AdvanceRequest


@dataclass(frozen=True)
class Parallel:
    """Where steps run: the user's tree (``jobs`` 1), ``jobs`` local workspaces, or a Dask
    cluster (``scheduler``). Never part of the verdict cache's key: where a tree was
    tested does not change its verdict."""

    #: Steps tested at once (``--jobs``); 1 keeps the user's own tree, no workspace.
    jobs: int = 1
    #: ``--scheduler ADDRESS`` of a Dask ``distributed`` scheduler (its workers run the steps).
    scheduler: str | None = None
    #: ``--workspace-root DIR``: where the workspaces live (None: the default).
    workspace_root: str | None = None
    #: ``--resources NAME=N``: what a step needs of a Dask worker (e.g. ``GPU=1``).
    resources: tuple[tuple[str, float], ...] = ()
    #: ``--no-workers-timeout``: seconds steps wait with no Dask worker before the run stops.
    no_workers_timeout: float = DEFAULT_NO_WORKERS_TIMEOUT

    @property
    def enabled(self) -> bool:
        """Do steps run in workspaces (several at once, or on a cluster)?"""
        return self.jobs > 1 or self.scheduler is not None


@dataclass(frozen=True)
class RunOptions:
    """How each step is built and tested."""

    repro: tuple[str, ...]
    build: str | None = None
    rules: Rules = Rules()
    timeout: float | None = None
    timeout_verdict: Verdict = "skip"
    use_cache: bool = True
    #: Plugin-added option values that change verdicts (part of the cache key).
    plugin_options: tuple[tuple[str, str], ...] = ()
    #: ``-p`` plugins and their options as command-line words (for follow-up commands).
    plugin_argv: tuple[str, ...] = ()
    #: Characters of each command's output kept (``--keep-output``). The lines of the
    #: dropped middle that a rule matches on its own are kept; a match spanning lines
    #: there is lost, so a value other than the default is part of the cache key.
    keep_output: int = DEFAULT_KEEP
    #: Test an untested end the answer rests on (``--no-verify`` turns it off).
    verify_ends: bool = True
    #: Consecutive steps skipped for the machine's sake that stop the run (0: never).
    max_env_skips: int = DEFAULT_MAX_ENV_SKIPS
    #: Consecutive tested steps skipped for the same reason that stop the run (0: never).
    max_skips: int = DEFAULT_MAX_SKIPS
    #: ``--cache-input`` paths (absolute): more files or directories the verdict depends on.
    cache_inputs: tuple[str, ...] = ()
    #: ``--cache-env`` names: environment variables the verdict depends on that no command
    #: names (their values join the cache key).
    cache_env: tuple[str, ...] = ()
    #: Where and how many steps run at once (``--jobs``, ``--scheduler``).
    parallel: Parallel = Parallel()


@dataclass(frozen=True)
class FollowUp:
    """A bisection to run next (e.g. the submodule move an integrate bisect found)."""

    request: StartRequest
    #: Why, in one line, shown above the command.
    note: str


class OptionGroup(Protocol):
    """What ``bisectkit_addoption`` gets: add options as with argparse's ``add_argument``."""

    def add_argument(self, *flags: str, **settings: Any) -> Any:
        """Declare an option (``"--my-opt", type=int, default=1, help=...``)."""


@dataclass
class Config:
    """What ``bisectkit_configure`` gets: parsed options and the run's context."""

    #: The parsed options (an attribute per option, plugins' own included).
    option: Any
    pluginmanager: pluggy.PluginManager
    root: Path | None = None
    #: The console to print to (:class:`bisectkit.ui.console.Console`).
    console: Any = None
    #: How steps are built and tested (``run`` commands only).
    run: RunOptions | None = None
    #: name -> where it came from, for ``bisectkit plugins``.
    origins: dict[str, str] = field(default_factory=dict)
    #: Environment variables the plugins' own commands read (a plugin's
    #: ``bisectkit_configure`` adds them): their values join the verdict cache's key.
    cache_env: list[str] = field(default_factory=list)
