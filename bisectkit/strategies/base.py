"""What a bisection strategy provides to the pipeline: the :class:`Strategy` interface.

A strategy turns candidates into trees on disk: ``prepare`` works in memory
(and may say the candidate cannot be tested), ``checkout`` writes it with as
few file writes as git allows, through the session's journaled
:class:`~bisectkit.safety.worktree.Mover` (which also restores everything at the end).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from bisectkit.cli.targets import Given, Option
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.git.shapes.base import NOTHING, Fetched, add_fetched
from bisectkit.model import (
    SUPERPROJECT,
    CommitInfo,
    FollowUp,
    HeadState,
    StartRequest,
    Terms,
    Verdict,
    short,
)
from bisectkit.model.documents import StepDetails
from bisectkit.model.params import KINDS as SAVED_KINDS
from bisectkit.model.params import Params
from bisectkit.safety.undertest import Held
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session


@dataclass(frozen=True)
class Replay:
    """How a machine without our patched commit makes it again: the patch stack
    (``stack``, as :meth:`~bisectkit.patches.stack.Stack.to_json`) replayed onto ``onto``
    in submodule ``path`` by the same rules must give ``tree``."""

    path: str
    onto: str
    stack: dict[str, Any]
    on_conflict: str
    tree: str


@dataclass(frozen=True)
class Prepared:
    """A candidate made ready in memory."""

    candidate: str
    #: What a verdict depends on (tree ids and pins), for the verdict cache.
    trees: tuple[str, ...]
    #: Merged into the step record (``patches`` and/or ``submodules``); a ``flags``
    #: list is added to the step's flags.
    details: StepDetails = field(default_factory=lambda: StepDetails())
    #: Extra environment for the build and the repro.
    env: dict[str, str] = field(default_factory=dict)
    #: Set when the candidate cannot be tested; the step is skipped unbuilt.
    skip_reason: str | None = None
    #: Strategy-private description of what ``checkout`` writes.
    target: Any = None
    #: What a workspace checks out (``.`` for the superproject, else a submodule path ->
    #: commit): the same trees ``checkout`` writes to the user's.
    checkouts: dict[str, str] = field(default_factory=dict)
    #: How to make ``checkouts[replay.path]`` where that commit cannot be fetched (it
    #: exists only in the user's repository): a cluster worker replays the stack itself.
    replay: Replay | None = None


class Strategy(ABC):
    """Candidates of one kind (upstream submodule commits, superproject commits)."""

    name: ClassVar[str]

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        self.superproject = superproject
        self.session = session
        self._mover = mover

    @property
    def mover(self) -> Mover:
        """What checks candidates out (journaled); only commands that move things have one."""
        if self._mover is None:
            raise AssertionError("this command does not move repositories")
        return self._mover

    @property
    def history(self) -> Repo:
        """The repository whose commits the candidates are: revision ranges walk it, and
        ``--all-parents`` bisects into its merges."""
        return self.superproject

    @abstractmethod
    def describe(self, sha: str) -> CommitInfo:
        """Subject, author, date of a candidate."""

    @abstractmethod
    def resolve(self, rev: str) -> str:
        """Full sha of a revision given on the command line (``good <rev>``)."""

    @abstractmethod
    def prepare(self, candidate: str) -> Prepared:
        """Compute, without touching any work tree, what testing ``candidate`` needs."""

    @abstractmethod
    def checkout(self, prepared: Prepared) -> int:
        """Write ``prepared`` to the work tree(s); return the number of files written."""

    @abstractmethod
    def under_test(self, prepared: Prepared) -> dict[str, Held]:
        """Every repository a step on ``prepared`` depends on (journal key -> what it must
        hold): those :meth:`checkout` moves, at the commit it checks out there, and those
        the strategy leaves as the run found them. What must still hold after the build
        and the repro for the step's outcome to be a verdict."""

    @abstractmethod
    def target_argv(self) -> list[str]:
        """What is bisected, as ``bisectkit run`` options (``--submodule PATH --upstream
        REF``...): with the range (:meth:`range_argv`), the same bisection again."""

    def range_argv(self, good: Sequence[str], bad: str) -> list[str]:
        """The range ``good`` .. ``bad`` as ``bisectkit run`` options."""
        return [*(w for g in good for w in ("--good", g)), "--bad", bad]

    def _parents_argv(self) -> list[str]:
        return ["--all-parents"] if self.session.params.all_parents else []

    @abstractmethod
    def header_lines(self) -> list[str]:
        """Lines describing the bisection, shown before the first step and by ``status``."""

    def begin_run(self) -> None:
        """A run (a command that may test) begins: read now what it keeps as it found it,
        before the verdict cache's key is read. Nothing here."""
        return None

    def fetched(self) -> Fetched:
        """Everything fetched so far into the repositories this strategy reads and moves
        (partial clones); a step's share is the difference around it. None here."""
        return NOTHING

    def prepare_fetching(self, candidate: str) -> Prepared:
        """:meth:`prepare`; what it fetched into partial clones is the ``fetched`` detail."""
        mark = self.fetched()
        prepared = self.prepare(candidate)
        add_fetched(prepared.details, self.fetched() - mark)
        return prepared

    def checkout_fetching(self, prepared: Prepared) -> int:
        """:meth:`checkout`; what it fetched into partial clones is added to ``fetched``."""
        mark = self.fetched()
        written = self.checkout(prepared)
        add_fetched(prepared.details, self.fetched() - mark)
        return written

    def candidates_changed(self) -> None:
        """The session's candidates were replaced (``--all-parents``): drop what was
        computed from the old ones."""
        return None

    def stack_unchecked(self) -> str | None:
        """Why ``--check-stack`` has nothing to check here (None: it can test the answer
        without the local patch stack, :meth:`prepare_pristine`)."""
        return (f"not checked: an {self.name} bisect has no patch stack to take away (bisect "
                "the submodule move it found, with --check-stack)")

    def prepare_pristine(self, commit: str) -> Prepared | None:
        """``commit`` without any local patches (``--check-stack``); None if not meaningful."""
        return None

    def followup(self, first_bad: str) -> list[FollowUp]:
        """Bisections to run next once ``first_bad`` is known (the caller words them)."""
        return []

    def judged(self, verdict: Verdict, reason: str) -> tuple[Verdict, str]:
        """A step's verdict and reason as this strategy counts them (unchanged here; an
        advance counts a failed build or a conflicting stack as bad)."""
        return verdict, reason

    @property
    def terms(self) -> Terms:
        """The session's words for its two sides, for the requests it suggests."""
        return self.session.terms

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        """Strategy-specific fields of the JSON result (``first_bad`` when found)."""
        return {}

    def closing_lines(self, first_bad: str | None) -> list[str]:
        """Notes printed after the result (``first_bad`` when found), e.g. patches to rebase."""
        return []


def new_session(superproject: Repo, *, bad: str, good: list[str],
                candidates: list[str], moves: Sequence[str], params: Params,
                terms: Terms, pathspec: Sequence[str] = (),
                ancestry: dict[str, Any] | None = None) -> Session:
    """A new session of the strategy ``params`` belong to that may move ``moves``
    (submodule paths) and the superproject: their HEADs now are what a reset restores. The
    command line is the caller's (it words the request), so ``start_argv`` starts empty.
    ``ancestry``: the ancestry answers start asked (kept for the session's commands)."""
    return Session(strategy=params.strategy, root=str(superproject.workdir), bad=bad, good=good,
                   pathspec=list(pathspec), candidates=candidates,
                   orig=head_states(superproject, moves), params=params, start_argv=[],
                   terms=terms, ancestry=ancestry or {})


def head_states(superproject: Repo, paths: Sequence[str]) -> dict[str, HeadState]:
    """The HEADs to restore: the superproject's and those of ``paths``."""
    states = {SUPERPROJECT: superproject.worktree.head_state()}
    for p in paths:
        states[p] = Repo(superproject.workdir / p).worktree.head_state()
    return states


def resolve_range(repo: Repo, bad_rev: str, good_revs: Sequence[str],
                  terms: Terms) -> tuple[str, list[str]]:
    """Full shas of the bad and good revisions, each good an ancestor of bad (else BadInput).

    ``terms``: the words of the old and new sides in messages (``--find-fix``).
    """
    old, new = terms.old, terms.new
    if not good_revs:
        raise BadInput(f"at least one {old} revision is needed")
    bad = _resolve(repo, bad_rev)
    goods = [_resolve(repo, g) for g in good_revs]
    for rev, sha in zip(good_revs, goods, strict=True):
        if sha == bad:
            raise BadInput(f"{old} revision '{rev}' is the {new} revision itself")
        if not repo.is_ancestor(sha, bad):
            raise BadInput(f"{old} revision '{rev}' ({short(sha)}) is not an ancestor of "
                           f"{new} '{bad_rev}' ({short(bad)})")
    return bad, goods


def _resolve(repo: Repo, rev: str) -> str:
    """The full sha of ``rev``; in a shallow clone a revision not here may be behind the
    boundary, and the error says which fetch would bring it."""
    if repo.shallow.active and repo.try_resolve(rev) is None and _maybe_behind(repo, rev):
        raise repo.shallow.missing(f"revision '{rev}' (not here: behind the boundary, or "
                                   "mistyped)")
    return repo.resolve(rev)


#: A revision's base (before ``~N``, ``^N``, ``@{...}``) written as an object id.
_HEX_BASE = re.compile(r"[0-9a-fA-F]{4,40}")


def _maybe_behind(repo: Repo, rev: str) -> bool:
    """Could a fetch bring ``rev``? Only an object id, or a walk (``X~N``) from a commit
    here, can be behind the boundary: a shallow clone has every ref it has, so a name
    that names nothing is mistyped, and fetching history would only cost time."""
    base = re.split(r"[~^@]", rev, maxsplit=1)[0]
    return bool(_HEX_BASE.fullmatch(base)) or (base != rev and repo.try_resolve(base) is not None)


_R = TypeVar("_R", bound=StartRequest)


@dataclass(frozen=True)
class Argv(Generic[_R]):
    """A strategy's command line: the options only it takes, how its request is built from
    what was given (its refusals in its own words), and the request as words again."""

    #: The option that chooses it (None: the strategy bisected when none is given).
    selector: Option | None
    #: Its own options besides the selector (those several strategies take are shared,
    #: :func:`bisectkit.cli.parser.add_target_options`).
    options: tuple[Option, ...]
    #: Its request from what the command line gave (``BadInput`` if it cannot be one).
    build: Callable[[Given], _R]
    #: What its request bisects as ``start``/``run`` words, the ends and terms aside.
    words: Callable[[_R], list[str]]
    #: It is given good and bad revisions (else its candidates are its own).
    takes_ends: bool = True
    #: ``bisectkit run`` starts it (else only ``start`` and a command of its own).
    in_run: bool = True

    def own(self) -> tuple[Option, ...]:
        """Its selector and options, as ``--help`` shows them."""
        return (self.selector, *self.options) if self.selector else self.options


@dataclass(frozen=True)
class Kind(Generic[_R]):
    """A strategy as the rest of bisectkit sees it, declared once by its own module and
    registered in :mod:`bisectkit.strategies` (:func:`register`): nothing outside
    :mod:`bisectkit.strategies` asks for a strategy by name to decide what to do."""

    #: What its sessions keep; their ``strategy`` is its name.
    params: type[Params]
    #: What tests the candidates of a saved session.
    strategy: type[Strategy]
    #: The request that starts one (:class:`~bisectkit.model.SubmoduleRequest`...).
    request: type[_R]
    #: Validate a request into a new session (nothing touched).
    start: Callable[[Repo, _R], Session]
    #: The request as the session understood it (full shas, the upstream found).
    settled: Callable[[_R, Session], _R]
    #: Its command line.
    argv: Argv[_R]
    #: Steps check candidates out in the user's superproject itself (so no output may go
    #: to a file a candidate tracks).
    moves_superproject: bool = False
    #: Its candidates are local patches of the submodule (commit links go to the fork).
    candidates_are_patches: bool = False
    #: The report it gets: ``"bisection"`` (a first bad commit) or ``"advance"`` (where the
    #: pin can go).
    report: str = "bisection"

    @property
    def name(self) -> str:
        """The name a session records (``Session.strategy``, the JSON result's
        ``strategy``): its parameters' (:attr:`Params.strategy`)."""
        return self.params.strategy

    def where(self, path: str | None) -> str:
        """Where it ran, for a report's title: `` in PATH`` (``path`` as the caller shows
        it), `` on the integrate branch``..."""
        if self.moves_superproject:
            return " on the integrate branch"
        if self.candidates_are_patches:
            return f" in the patch stack of {path}" if path else " in the patch stack"
        return f" in {path}" if path else ""


_KINDS: dict[str, Kind[Any]] = {}


def register(*kinds: Kind[Any]) -> tuple[Kind[Any], ...]:
    """Make ``kinds`` known by their names and request types, in this order (the order of
    their options in ``--help``; of several selected, the last decides). A registry that
    does not hold together is a bug, refused here (exit 70) rather than found by a user."""
    problems = registry_problems(kinds, SAVED_KINDS)
    if problems:
        raise AssertionError("the strategies' registry: " + "; ".join(problems))
    _KINDS.update((kind.name, kind) for kind in kinds)
    return kinds


def registry_problems(kinds: Sequence[Kind[Any]],
                      saved: Mapping[str, type[Params]]) -> list[str]:
    """What is wrong with ``kinds`` as the whole registry: a name, a request type or an
    option declared twice, a strategy named unlike its parameters, parameters ``saved``
    (:data:`bisectkit.model.params.KINDS`: what ``session.json`` may name) does not know,
    a saved kind with no strategy, not exactly one strategy chosen when none is selected."""
    problems: list[str] = []
    for kind in kinds:
        if kind.strategy.name != kind.name:
            problems.append(f"{kind.strategy.__name__} is named {kind.strategy.name!r}, its "
                            f"parameters {kind.params.__name__} {kind.name!r}")
        if saved.get(kind.name) is not kind.params:
            problems.append(f"{kind.params.__name__} is not model.params.KINDS[{kind.name!r}]")
    missing = sorted(set(saved) - {kind.name for kind in kinds})
    if missing:
        problems.append(f"no strategy for the saved kinds {', '.join(missing)}")
    for what, values in (("name", [k.name for k in kinds]),
                         ("request", [k.request.__name__ for k in kinds]),
                         ("option", [o.flag for k in kinds for o in k.argv.own()])):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            problems.append(f"{what} declared twice: {', '.join(twice)}")
    defaults = [k.name for k in kinds if k.argv.selector is None]
    if len(defaults) != 1:
        problems.append(f"one strategy has no selector, not {len(defaults)}: "
                        f"{', '.join(defaults)}")
    return problems


def kinds() -> tuple[Kind[Any], ...]:
    """Every strategy, in the order they were registered."""
    return tuple(_KINDS.values())


def kind_named(name: str) -> Kind[Any] | None:
    """The strategy a session or a JSON result names (None: not one of this bisectkit)."""
    return _KINDS.get(name)


def kind_of(request: StartRequest) -> Kind[Any]:
    """The strategy ``request`` starts."""
    for kind in _KINDS.values():
        if type(request) is kind.request:
            return kind
    raise AssertionError(f"no strategy starts a {type(request).__name__}")
