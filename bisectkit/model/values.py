"""Pure shared values: verdicts and terms, commits, outcomes, steps and their records.

Nothing here does I/O or imports another bisectkit module (except
:mod:`bisectkit.errors`' nothing): every module may import this one, so the
types that cross layers live here rather than in the module that happens to
produce them. Plugin authors get them from :mod:`bisectkit`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import pluggy

from bisectkit.model.documents import PatchJSON
from bisectkit.model.sha import Sha, short

#: bisectkit's version (``bisectkit.__version__``).
VERSION = "0.1.0"
#: The pluggy project name; hooks are prefixed ``bisectkit_``.
PROJECT = "bisectkit"
#: Marks a hook specification (only :mod:`bisectkit.plugin.hookspecs` uses it).
hookspec = pluggy.HookspecMarker(PROJECT)
#: Marks a hook implementation: ``@hookimpl def bisectkit_classify(step, outcome): ...``.
hookimpl = pluggy.HookimplMarker(PROJECT)

# -- verdicts and the words for them ------------------------------------------------
Verdict = Literal["good", "bad", "skip"]
VERDICTS: tuple[Verdict, ...] = ("good", "bad", "skip")
#: ``--on-conflict``: skip the step, or test it without the conflicting local patch.
OnConflict = Literal["skip", "drop"]
ON_CONFLICT: tuple[OnConflict, ...] = ("skip", "drop")
#: Characters of output kept per command by default (``--keep-output``).
DEFAULT_KEEP = 8 << 20
#: ``--max-env-skips`` default: three machine failures in a row are not bad luck.
DEFAULT_MAX_ENV_SKIPS = 3
#: ``--max-skips`` default: ten tested steps skipped in a row for the same reason (a repro
#: that always exits 125) would skip the rest the same.
DEFAULT_MAX_SKIPS = 10
#: ``--no-workers-timeout`` default: seconds steps wait for a Dask worker to connect.
DEFAULT_NO_WORKERS_TIMEOUT = 300.0
#: The git config key that names a submodule's upstream ref for every command.
UPSTREAM_KEY = "bisectkit.upstream"
#: How to choose the upstream instead of letting bisectkit guess (ends every refusal).
HOW_TO_CHOOSE_UPSTREAM = f"pass --upstream REF or set git config {UPSTREAM_KEY} REF"
#: The superproject's key among the repositories a session moves.
SUPERPROJECT = "."
#: The phase (``bisectkit_phase``) and the word for a parallel step stopped because its
#: verdict could no longer change the answer: the message, the panel and the summary agree.
CANCELLED = "cancelled"
#: How the git subcommand is typed (in messages and logs).
GIT_PROG = "git bisect-patched"


@dataclass(frozen=True)
class Terms:
    """The words for the two sides of a bisection, and which side a passing repro is on.

    The engine always speaks of ``good`` (old side) and ``bad`` (new side);
    users may name the sides (``--term-old/--term-new``) or look for a fix
    (``--find-fix``: a passing repro is the new side). Every translation
    between the two vocabularies goes through here.
    """

    old: str = "good"
    new: str = "bad"
    find_fix: bool = False

    @classmethod
    def of(cls, find_fix: bool = False, old: str | None = None, new: str | None = None) -> Terms:
        """The terms the options ask for (``--find-fix`` defaults to broken/fixed)."""
        return cls(old or ("broken" if find_fix else "good"),
                   new or ("fixed" if find_fix else "bad"), find_fix)

    @property
    def is_default(self) -> bool:
        """Plain good/bad: marks and logs need no translation."""
        return not self.find_fix and (self.old, self.new) == ("good", "bad")

    def word(self, verdict: str) -> str:
        """The word shown for an engine verdict."""
        return {"good": self.old, "bad": self.new}.get(verdict, verdict)

    def side(self, repro: Verdict) -> Verdict:
        """The engine side of a repro verdict (good = the repro passes)."""
        if not self.find_fix or repro == "skip":
            return repro
        return "bad" if repro == "good" else "good"

    def mark(self, word: str) -> Verdict:
        """The engine side of a mark: ``old``/``new`` are sides, ``good``/``bad``/``skip``
        repro outcomes (swapped when looking for a fix)."""
        if word == "old":
            return "good"
        if word == "new":
            return "bad"
        if word not in VERDICTS:
            raise ValueError(f"not a mark: {word!r}")
        return self.side(word)

    def as_dict(self) -> dict[str, str]:
        return {"old": self.old, "new": self.new}


# -- commits and repositories --------------------------------------------------------
@dataclass(frozen=True)
class HeadState:
    """Where a repository's HEAD points: a branch (``ref``) or a detached ``sha``."""

    ref: str | None
    sha: str

    def to_json(self) -> dict[str, str | None]:
        return {"ref": self.ref, "sha": self.sha}

    @classmethod
    def from_json(cls, data: Mapping[str, str | None]) -> HeadState:
        return cls(ref=data.get("ref"), sha=str(data["sha"]))

    def describe(self) -> str:
        if self.ref:
            return f"{self.ref.removeprefix('refs/heads/')} ({short(self.sha)})"
        return f"detached at {short(self.sha)}"


@dataclass(frozen=True)
class CommitInfo:
    """The parts of a commit that bisectkit shows and reasons about."""

    sha: Sha
    subject: str
    message: str
    author: str
    date: str
    parents: tuple[str, ...]

    def __post_init__(self) -> None:
        # A Sha whoever built it (a test, a plugin passing a plain str): ``.sha.short`` works.
        object.__setattr__(self, "sha", Sha(self.sha))


@dataclass(frozen=True)
class Upstream:
    """The upstream ref of a submodule, its commit, and why it was picked when guessed."""

    ref: str
    sha: str
    #: Why this ref, when it was guessed; ``None`` when it was given.
    guessed: str | None = None

    def note(self) -> str | None:
        """The line that tells the user a guess was made (``None`` for a given ref)."""
        if self.guessed is None:
            return None
        return (f"upstream: {self.ref} (guessed: {self.guessed}; "
                f"to choose, {HOW_TO_CHOOSE_UPSTREAM})")


# -- commands and their outcome -----------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What one command did: ``Outcome(exit_status, output)``, the rest optional.

    A plugin's ``bisectkit_build``/``bisectkit_repro`` may build one from its
    own run: ``Outcome(1, text)`` is a command that exited 1 after printing
    ``text``. Classifiers always see ``output`` with terminal escapes removed.
    """

    #: Exit status, or ``None`` when the command was killed by a signal.
    exit_status: int | None
    #: stdout and stderr, combined, with ``\\r\\n`` folded to ``\\n``.
    output: str = ""
    #: The signal that killed it, if any.
    signal: int | None = None
    timed_out: bool = False
    #: Seconds the command ran.
    duration: float = 0.0
    #: The time limit the command ran under, if any.
    timeout: float | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out

    def describe(self) -> str:
        """Short human reason, e.g. ``exit 1`` or ``killed by SIGSEGV``."""
        if self.timed_out:
            return f"timed out after {self.timeout or self.duration:g} s"
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit {self.exit_status}"


@dataclass(frozen=True)
class Rules:
    """Regexes searched in the repro's combined output; they override the exit status."""

    good_if: tuple[str, ...] = ()
    bad_if: tuple[str, ...] = ()
    skip_if: tuple[str, ...] = ()

    def compiled(self) -> dict[Verdict, list[re.Pattern[str]]]:
        return {
            "bad": [re.compile(p, re.MULTILINE) for p in self.bad_if],
            "skip": [re.compile(p, re.MULTILINE) for p in self.skip_if],
            "good": [re.compile(p, re.MULTILINE) for p in self.good_if],
        }


@dataclass
class Step:
    """One test of one candidate, as plugins see it."""

    #: 1-based step number within this bisection.
    index: int
    #: The candidate under test (an upstream commit for ``submodule``, a
    #: superproject commit for ``integrate``); ``step.commit.short`` is how it is shown.
    commit: Sha
    #: The strategy's name: ``"submodule"``, ``"integrate"``, ``"stack"`` or ``"advance"``.
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
    #: Set when a command of the step (its build, a repro run) timed out: whatever the
    #: verdict, the verdict cache does not keep it (a timeout may be the machine's load).
    timed_out: bool = False
    #: Short notes shown in the final report (e.g. "runs disagree").
    flags: list[str] = field(default_factory=list)
    #: Extra data kept in the step's JSON record.
    extra: dict[str, Any] = field(default_factory=dict)
    #: Output of each phase that ran ("build", "repro"), for observers.
    outputs: dict[str, str] = field(default_factory=dict)
    #: The step's JSON record (:meth:`StepRecord.to_json`), filled in when the verdict
    #: is recorded; observers may add keys (the step log adds ``log``).
    record: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.commit = Sha(self.commit)  # a plain str from a plugin or a test, too


@dataclass
class StepRecord:
    """One recorded verdict on one commit: what the session, the log, the JSON result
    and the report say about a step. Serialised flat (``extra`` keys beside the
    core ones), as ``--json`` documents it."""

    index: int
    commit: str
    #: The engine's side (``good`` = old), whatever the terms.
    verdict: Verdict
    reason: str
    #: ``run``, ``cache``, ``auto`` (decided without a test), ``manual``, ``replay``,
    #: ``verify``, ``check-stack``, ``confirm``.
    source: str
    #: What the strategy did to the patch stack: one dict per patch (commit, kind,
    #: action, why...), as in the JSON result.
    patches: list[PatchJSON] = field(default_factory=list)
    files_written: int = 0
    #: What a partial clone fetched for the step: ``{"objects", "bytes", "seconds"}``.
    fetched: dict[str, Any] | None = None
    prepare_s: float | None = None
    build_s: float | None = None
    repro_s: float | None = None
    #: The verdict in the session's words (only when they are not good/bad).
    term: str | None = None
    flags: list[str] = field(default_factory=list)
    #: Why the machine, not the commit, decided a skip.
    environment: str | None = None
    #: Everything else: strategy details (``submodules``...), plugin extras, the log path.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The verdict as the user reads it."""
        return self.term or self.verdict

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"index": self.index, "commit": self.commit,
                                "verdict": self.verdict, "reason": self.reason,
                                "source": self.source, "patches": self.patches,
                                "files_written": self.files_written,
                                "prepare_s": self.prepare_s, "build_s": self.build_s,
                                "repro_s": self.repro_s}
        if self.fetched is not None:
            data["fetched"] = self.fetched
        if self.term is not None:
            data["term"] = self.term
        if self.flags:
            data["flags"] = self.flags
        if self.environment is not None:
            data["environment"] = self.environment
        for key, value in self.extra.items():
            data.setdefault(key, value)  # extras never replace core fields
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepRecord:
        core = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in core}
        return cls(**known, extra={k: v for k, v in data.items() if k not in core})
