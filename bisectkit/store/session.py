"""Bisection state kept in the superproject's git dir, so separate commands continue one session.

Layout of ``<git dir>/bisectkit/``:

- ``session.json`` and ``candidates.json``: the session in progress (removed
  by ``reset``);
- ``waiting.json``: a ``start`` given fewer than both ends, waiting for them
  (:class:`Waiting`; nothing is checked out; removed by ``reset``);
- ``verdicts.json``: verdicts of finished steps keyed by what was tested, kept
  across sessions so a repeated ``bisectkit run`` reuses them (format:
  :mod:`bisectkit.store.cachefile`);
- ``written.json``: the files in the work tree that bisectkit wrote itself
  (``--json``, ``--report``, ``--trace``) with their content's digest: while
  they hold what it wrote, they are not inputs of the cache key;
- ``last-log``: the log of the last session, kept after ``reset``;
- ``logs/step-N.log``: build and repro output of each step of the current or
  last session (``show-step N``);
- ``journal``, ``lock``, ``backup/``: every change made during the session,
  the lock of the command running now, files set aside (see ``pipeline``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bisectkit.engine import search
from bisectkit.errors import BadInput
from bisectkit.model import GIT_PROG, HeadState, StepRecord, Terms, Verdict
from bisectkit.model.params import Params, UnknownStrategy, params_from_json
from bisectkit.safety.fileio import write_json_atomic, writing
from bisectkit.store import cachefile, sessionshape, steplog
from bisectkit.store.cachefile import CacheData
from bisectkit.store.fingerprint import file_digest
from bisectkit.store.waitstate import Waiting

_P = TypeVar("_P", bound=Params)

SESSION_VERSION = 3


def no_session() -> BadInput:
    """The refusal of a command that needs a session when there is none."""
    return BadInput(f"no bisect-patched session in progress (start one with '{GIT_PROG} "
                    "start')")


def unknown_strategy(name: str) -> BadInput:
    """The refusal of a session naming a strategy this bisectkit does not have."""
    return BadInput(f"the session uses an unknown strategy {name!r}; run '{GIT_PROG} reset'")


def not_started(waiting: Waiting) -> BadInput:
    """The refusal of a command that needs the candidates while ``start`` waits for ends."""
    return BadInput(f"the session has not started: {waiting.status()}; give "
                    f"{waiting.missing()} first (or '{GIT_PROG} reset')")


def state_dir(git_dir: Path) -> Path:
    return git_dir / "bisectkit"


@dataclass
class VerdictEntry:
    """One verdict, as given by the user, by ``run``, by a replayed log or by the cache."""

    commit: str
    verdict: Verdict
    reason: str
    source: str


@dataclass
class Session:
    """Everything needed to continue, report, log and undo one bisection."""

    strategy: str
    root: str
    bad: str
    good: list[str]
    pathspec: list[str]
    candidates: list[str]
    #: HEAD of every repository the session may move, to restore on reset:
    #: ``"."`` is the superproject, other keys are submodule paths.
    orig: dict[str, HeadState]
    #: The strategy's parameters (submodule path, upstream, patch stack...).
    params: Params
    start_argv: list[str]
    #: Words for the two sides, and whether a passing repro is the new side (find-fix).
    terms: Terms = field(default_factory=Terms)
    verdicts: list[VerdictEntry] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    current: str | None = None
    #: Step details of the checked-out candidate (patches, files_written, prepare_s).
    current_step: dict[str, Any] = field(default_factory=dict)
    #: The last candidate announced (``[step N] testing C``) and its number N: its step
    #: keeps N whatever is recorded meanwhile (marks of other revisions, skip ranges).
    announced: tuple[str, int] | None = None
    #: Ancestry answers about the bisected repository, asked once per session (start asks
    #: those the patch-stack rules need; see strategies.common.LineAncestry): ``line``
    #: (the digest of the candidate list the positions are about), ``first`` (target ->
    #: position of the first candidate containing it), ``pairs`` ("A D" -> is A an
    #: ancestor of D). A cache of facts about commits: one missing or damaged is asked again.
    ancestry: dict[str, Any] = field(default_factory=dict)

    def params_as(self, kind: type[_P]) -> _P:
        """The parameters, as the ``kind`` of parameters its strategy keeps (a session file
        naming one strategy and holding another's parameters is damaged)."""
        if not isinstance(self.params, kind):
            raise BadInput(f"the session's {self.strategy} parameters are damaged (not "
                           f"{kind.__name__}); run '{GIT_PROG} reset'")
        return self.params

    # -- verdicts ----------------------------------------------------------
    def verdict_map(self) -> dict[str, Verdict]:
        """Latest verdict per commit (later entries override earlier ones)."""
        # An advance's far end is a question, not a known bad end: its search says so.
        open_end = search.named(self.params.search).open_end
        known: dict[str, Verdict] = {} if open_end else {self.bad: "bad"}
        for entry in self.verdicts:
            known[entry.commit] = entry.verdict
        return known

    def next_step_index(self) -> int:
        """The number of a step never announced: after every one recorded or announced."""
        # The highest plus one, not the count: a parallel step cancelled in flight, or a
        # candidate announced and then left for another (a mark moved the range), leaves
        # its number unused.
        announced = self.announced[1] if self.announced is not None else 0
        return max(max((step.index for step in self.steps), default=0), announced) + 1

    def step_index_for(self, commit: str) -> int:
        """The number of a step of ``commit``: the one it was announced with while no step
        has taken it, else a new one (:meth:`next_step_index`)."""
        if self.announced is not None and self.announced[0] == commit:
            index = self.announced[1]
            if all(step.index != index for step in self.steps):
                return index
        return self.next_step_index()

    # -- persistence -------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "version": SESSION_VERSION,
            "strategy": self.strategy,
            "root": self.root,
            "bad": self.bad,
            "good": self.good,
            "pathspec": self.pathspec,
            "orig": {k: v.to_json() for k, v in self.orig.items()},
            "params": self.params.to_json(),
            "start_argv": self.start_argv,
            "terms": self.terms.as_dict(),
            "find_fix": self.terms.find_fix,
            "verdicts": [vars(v) for v in self.verdicts],
            "steps": [st.to_json() for st in self.steps],
            "current": self.current,
            "current_step": self.current_step,
            "announced": (None if self.announced is None else
                          {"commit": self.announced[0], "index": self.announced[1]}),
            "ancestry": self.ancestry,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], candidates: list[str]) -> Session:
        if not isinstance(data, dict) or data.get("version") != SESSION_VERSION:
            raise BadInput("the bisect session was written by another bisectkit version; "
                           "run 'git bisect-patched reset'")
        sessionshape.check(data, candidates)
        try:
            params = params_from_json(data["strategy"], data["params"])
        except UnknownStrategy:
            raise unknown_strategy(data["strategy"]) from None
        return cls(
            strategy=data["strategy"],
            root=data["root"],
            bad=data["bad"],
            good=list(data["good"]),
            pathspec=list(data["pathspec"]),
            candidates=candidates,
            orig={k: HeadState.from_json(v) for k, v in data["orig"].items()},
            params=params,
            start_argv=list(data["start_argv"]),
            terms=Terms(str(data["terms"]["old"]), str(data["terms"]["new"]),
                        bool(data["find_fix"])),
            verdicts=[VerdictEntry(**v) for v in data["verdicts"]],
            steps=[StepRecord.from_json(st) for st in data["steps"]],
            current=data.get("current"),
            current_step=dict(data.get("current_step", {})),
            announced=_announced(data.get("announced")),
            ancestry=sessionshape.ancestry(data.get("ancestry")),
        )


def _announced(data: Any) -> tuple[str, int] | None:
    """The announced step as read back (a session written before it was kept has none)."""
    return None if data is None else (str(data["commit"]), int(data["index"]))


class SessionStore:
    """Reads and writes the session and the verdict cache under one git dir."""

    def __init__(self, git_dir: Path) -> None:
        self.dir = state_dir(git_dir)
        self.session_path = self.dir / "session.json"
        # Written once per session: a range can hold 100k candidates, and the
        # session itself is saved after every step.
        self.candidates_path = self.dir / "candidates.json"
        self._candidates_of: Session | None = None
        #: Inside :meth:`saved_once`: the session to write when it ends.
        self._held: list[Session] | None = None
        self.cache_path = self.dir / "verdicts.json"
        self.written_path = self.dir / "written.json"
        self.last_log_path = self.dir / "last-log"
        self.logs_dir = self.dir / "logs"
        #: See :mod:`bisectkit.safety.journal`, :mod:`~bisectkit.safety.lock`,
        #: :mod:`~bisectkit.safety.worktree`.
        self.journal_path = self.dir / "journal"
        self.lock_path = self.dir / "lock"
        self.backups_dir = self.dir / "backup"
        self.waiting_path = self.dir / "waiting.json"
        #: ``--no-checkout``: see :mod:`bisectkit.safety.bisecthead`.
        self.bisect_head_path = self.dir / "bisect-head.json"

    def exists(self) -> bool:
        return self.session_path.exists()

    def load(self) -> Session:
        if not self.exists():
            waiting = self.load_waiting()
            raise not_started(waiting) if waiting is not None else no_session()
        try:
            data = json.loads(self.session_path.read_text(encoding="utf-8"))
            candidates = json.loads(self.candidates_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # ValueError: bad JSON or bad UTF-8
            raise BadInput(f"cannot read the session in {self.dir}: {exc}; run "
                           "'git bisect-patched reset'") from exc
        try:
            session = Session.from_json(data, candidates)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(f"the session in {self.dir} is damaged ({type(exc).__name__}: "
                           f"{exc}); run 'git bisect-patched reset'") from exc
        self._candidates_of = session
        return session

    def save(self, session: Session) -> None:
        if self._held is not None:
            self._held[:] = [session]
            return
        if self._candidates_of is not session:
            write_json_atomic(self.candidates_path, session.candidates)
            self._candidates_of = session
        write_json_atomic(self.session_path, session.to_json())

    @contextlib.contextmanager
    def saved_once(self) -> Iterator[None]:
        """The saves inside are one save when the block ends (``replay``'s thousands of marks:
        each save writes every step so far). Only for what moves nothing: on disk the session
        stays as it was until then, whatever kills the process, which is consistent as long
        as no repository moves meanwhile; an exception leaves it so too."""
        self._held = []
        try:
            yield
            held = self._held
        finally:
            self._held = None
        if held:
            self.save(held[0])

    def candidates_changed(self) -> None:
        """The session's candidates were replaced (``--all-parents`` bisecting into a
        merge): the next :meth:`save` writes them again."""
        self._candidates_of = None

    def delete(self) -> None:
        for path in (self.session_path, self.candidates_path, self.waiting_path):
            with writing(path):
                path.unlink(missing_ok=True)
        self._candidates_of = None

    # -- a session waiting for its ends ------------------------------------
    def load_waiting(self) -> Waiting | None:
        """The session waiting for its ends, if there is one."""
        try:
            data = json.loads(self.waiting_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise BadInput(f"cannot read {self.waiting_path}: {exc}; run "
                           f"'{GIT_PROG} reset'") from exc
        try:
            return Waiting.from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(f"{self.waiting_path} is damaged ({type(exc).__name__}: {exc}); "
                           f"run '{GIT_PROG} reset'") from exc

    def pending(self) -> Waiting | None:
        """The session waiting for its ends, unless a started one exists: a kill between
        saving a session and removing the waiting one leaves both, and the session is the
        newer."""
        return None if self.exists() else self.load_waiting()

    def save_waiting(self, waiting: Waiting) -> None:
        # A session that waits has moved nothing: a failed save leaves nothing to reset.
        write_json_atomic(self.waiting_path, waiting.to_json(), started=False)

    def delete_waiting(self) -> None:
        with writing(self.waiting_path):
            self.waiting_path.unlink(missing_ok=True)

    def clear_logs(self) -> None:
        """Forget the previous session's step outputs (a new session numbers from 1)."""
        steplog.clear(self.logs_dir)

    def load_cache(self) -> CacheData:
        """The verdict cache's valid entries; a missing file is an empty cache, a damaged
        one too (with its ``problem`` said): it only costs rebuilds, never a wrong answer."""
        try:
            text = self.cache_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return CacheData()
        except OSError as exc:
            return CacheData(problem=f"cannot be read ({exc.strerror})")
        except ValueError:
            return CacheData(problem="not UTF-8 text")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return CacheData(problem="not valid JSON")
        return cachefile.parse(data)

    def save_cache(self, cache: CacheData) -> None:
        write_json_atomic(self.cache_path, cachefile.to_json(cache))

    def own_outputs(self) -> dict[str, str]:
        """Files bisectkit wrote in the work tree: real path -> sha256 of what it wrote."""
        try:
            data = json.loads(self.written_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}

    def remember_output(self, path: str) -> None:
        """Record ``path`` (a real path) as written by bisectkit, with its content now;
        the records of files changed or gone since are dropped."""
        own = {p: d for p, d in self.own_outputs().items() if p != path and file_digest(p) == d}
        own[path] = file_digest(path)
        write_json_atomic(self.written_path, own)
