"""Shallow clones: which graph answers a truncated history can give, and the fetch that
fixes the rest.

libgit2 reads ``<git dir>/shallow``: the boundary commits listed there have no
parents locally, so every graph query answers on the truncated graph. Edges
that exist are real, so a "yes, A is an ancestor of D" is always right; a
"no" can be wrong. It is certain unless some boundary commit S reachable from
D (S == D included) is not itself an ancestor of A: A could be behind S's
hidden parents (if S is an ancestor of A, A cannot be without a cycle). The same
reasoning decides merge-bases, first-parent lines and commit ranges
(:class:`Boundary`). What cannot be answered raises :class:`ShallowCut`: one
line with the exact ``git fetch`` that makes it answerable; ``--deepen`` runs
it (:func:`fetch`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import bisectkit.git.cli as gitcli
from bisectkit.errors import BadInput
from bisectkit.git.shapes.base import NOTHING, Fetched, Narrowing, PathFilter
from bisectkit.model import CommitInfo, short
from bisectkit.text import plural

#: "Is A an ancestor of D?" on the local (truncated) graph.
Reaches = Callable[[str, str], bool]
#: The committer time of a commit present here (seconds since the epoch).
DateOf = Callable[[str], int]
#: Deeper and deeper fetches ``--deepen`` tries when no date bounds what is missing.
DEEPEN_STEPS = (100, 1000)


def shown_dir(workdir: Path) -> str:
    """``workdir`` as ``git -C`` takes it from here: relative when under the current
    directory (``third_party/llvm-project``, ``.``), absolute otherwise."""
    try:
        rel = workdir.relative_to(Path.cwd().resolve())
    except ValueError:
        return str(workdir)
    return rel.as_posix() or "."


class ShallowCut(BadInput):
    """A question about a shallow repository's history that its boundary leaves open.

    ``fix`` is the fetch the message offers (certain to make it answerable, or
    as near as a date can say); ``tries`` what ``--deepen`` runs, cheapest first.
    """

    def __init__(self, workdir: Path, question: str, fix: tuple[str, ...],
                 tries: Sequence[tuple[str, ...]]) -> None:
        self.workdir = workdir
        self.fix = fix
        self.tries = tuple(tries)
        self.command = gitcli.shown("-C", shown_dir(workdir), "fetch", *fix)
        super().__init__(f"{shown_dir(workdir)} is a shallow clone: {question} cannot be "
                         f"known without history behind its boundary; run: {self.command} "
                         "(or pass --deepen)")


class Boundary:
    """The shallow boundary of one repository (empty for a complete one), and the checks
    that keep answers given on the truncated graph exact."""

    def __init__(self, git_dir: Path, workdir: Path, reaches: Reaches, date_of: DateOf,
                 branches: Callable[[], Mapping[str, str]]) -> None:
        self._file = git_dir / "shallow"
        self.workdir = workdir
        self._reaches = reaches
        self._date_of = date_of
        self._branches = branches
        self._cached: tuple[tuple[int, int], frozenset[str]] | None = None
        #: The remote to fetch from when several could (the upstream ref's, set once known).
        self.preferred_remote: str | None = None

    def commits(self) -> frozenset[str]:
        """The boundary commits (``.git/shallow``), re-read only when that file changes."""
        try:
            st = self._file.stat()
        except FileNotFoundError:
            return frozenset()
        stamp = (st.st_mtime_ns, st.st_size)
        if self._cached is None or self._cached[0] != stamp:
            text = self._file.read_text(encoding="ascii")
            self._cached = (stamp, frozenset(text.split()))
        return self._cached[1]

    @property
    def active(self) -> bool:
        """Is this repository shallow?"""
        return bool(self.commits())

    def cuts_below(self, tips: Iterable[str]) -> list[str]:
        """Boundary commits reachable from any of ``tips``."""
        tips = list(tips)
        return sorted(s for s in self.commits() if any(self._reaches(s, t) for t in tips))

    def check_not_ancestor(self, ancestor: str, descendant: str) -> None:
        """Raise unless "``ancestor`` is not an ancestor of ``descendant``" (as answered on
        the local graph) is certain."""
        if not self.active:
            return
        open_cuts = [s for s in self.cuts_below([descendant]) if not self._reaches(s, ancestor)]
        if open_cuts:
            raise self.cut(f"whether {short(ancestor)} is an ancestor of {short(descendant)}",
                           [ancestor], open_cuts)

    def check_merge_base(self, a: str, b: str, base: str | None) -> None:
        """Raise unless ``base`` (None: no shared history) is the true merge-base of a, b."""
        if not self.active:
            return
        open_cuts = [s for s in self.cuts_below([a, b])
                     if base is None or not self._reaches(s, base)]
        if open_cuts:
            raise self.cut(f"the merge-base of {short(a)} and {short(b)}", [], open_cuts)

    def check_line(self, tip: str, oldest: str | None, hide: Sequence[str],
                   rootless: bool) -> None:
        """Raise unless the first-parent line from ``tip`` down to ``oldest`` (its last
        commit walked; ``rootless``: it has no parent here) is the whole line above
        ``hide``: not cut short at a boundary, and no commit of it hidden in ``hide``'s
        missing history."""
        if oldest is None or not self.active:
            return
        boundary = self.commits()
        if rootless and oldest in boundary:
            raise self.cut(f"the first-parent line of {short(tip)} below {short(oldest)}",
                           list(hide), [oldest])
        self._check_hidden(hide, oldest)

    def check_range(self, tips: Sequence[str], hide: Sequence[str]) -> None:
        """Raise unless every commit reachable from ``tips`` and not from ``hide`` is here:
        a boundary reachable from a tip must be hidden too."""
        if not self.active:
            return
        open_cuts = [s for s in self.cuts_below(tips)
                     if not any(self._reaches(s, h) for h in hide)]
        if open_cuts:
            raise self.cut(f"part of the range {','.join(short(h) for h in hide)}.."
                           f"{','.join(short(t) for t in tips)}", list(hide), open_cuts)

    def _check_hidden(self, hide: Sequence[str], oldest: str) -> None:
        # A commit of the line could be in ``hide``'s history behind a boundary S
        # reachable from ``hide``, unless S is an ancestor of the line's oldest commit
        # (then of every commit on the line, which cannot also be behind S).
        open_cuts = [s for s in self.cuts_below(hide) if not self._reaches(s, oldest)]
        if open_cuts:
            raise self.cut(f"the history of {','.join(short(h) for h in hide)}", [oldest],
                           open_cuts)

    def missing(self, question: str) -> ShallowCut:
        """The error for ``question`` about a commit this shallow clone lacks: behind the
        boundary or in no history here, only a fetch can say."""
        return self.cut(question, [], sorted(self.commits()))

    def cut(self, question: str, needed: Sequence[str], at: Sequence[str]) -> ShallowCut:
        """The error for ``question``, whose answer needs ``needed`` (commits here, whose
        dates bound the fetch; none: nothing bounds it) connected across boundary ``at``."""
        remote = self._remote(at)
        dates = [self._date_of(c) for c in needed]
        if dates:
            day = datetime.fromtimestamp(min(dates), UTC) - timedelta(days=1)
            since = (f"--shallow-since={day:%Y-%m-%d}", remote)
            return ShallowCut(self.workdir, question, since, [since, ("--unshallow", remote)])
        steps = [(f"--deepen={n}", remote) for n in DEEPEN_STEPS]
        return ShallowCut(self.workdir, question, ("--unshallow", remote),
                          [*steps, ("--unshallow", remote)])

    def _remote(self, at: Sequence[str]) -> str:
        """The remote whose branches have a boundary of ``at`` (only their server can
        deepen it): the upstream ref's when it is one of them, else origin, else the
        first; with none, the upstream ref's, origin or the first remote there is."""
        branches = self._branches()
        remotes = sorted({b.split("/", 1)[0] for b in branches})
        having = sorted({b.split("/", 1)[0] for b, sha in branches.items()
                         if any(self._reaches(s, sha) for s in at)})
        for pool in (having, remotes):
            for name in (self.preferred_remote, "origin"):
                if name in pool:
                    return name
            if pool:
                return pool[0]
        return self.preferred_remote or "origin"


def fetch(workdir: Path, args: Sequence[str]) -> str:
    """Run ``git fetch args`` in ``workdir`` (the user's remotes and credentials); the
    note saying what it brought. A failure is one line naming the command (exit 2)."""
    before = _objects(workdir)
    started = time.monotonic()
    proc = gitcli.run(workdir, "fetch", "--quiet", *args)
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        raise BadInput(f"{gitcli.shown('-C', shown_dir(workdir), 'fetch', *args)} failed: "
                       f"{detail}")
    got = _objects(workdir) - before
    return (f"deepened {shown_dir(workdir)}: git fetch {' '.join(args)} "
            f"({plural(got, 'object')}, {time.monotonic() - started:.1f} s)")


def _objects(workdir: Path) -> int:
    """Objects stored here, loose and packed (what a fetch added is the difference;
    commits reachable would not do: a deepening fetch may move another ref's boundary
    up, hiding history it had)."""
    proc = gitcli.run(workdir, "count-objects", "-v")
    counts = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    return int(counts.get("count", 0)) + int(counts.get("in-pack", 0))


def fetch_commit(workdir: Path, remotes: Sequence[str], sha: str, shallow: bool,
                 has: Callable[[str], bool]) -> bool:
    """Fetch commit ``sha`` from ``remotes`` in turn; True once it is here (``has``).

    The git CLI, so that the user's credentials, protocols and ``insteadOf``
    rules apply exactly as for ``git submodule update``. Asking for the sha
    first is cheap; servers that refuse unadvertised objects get a full fetch of
    the remote instead. In a ``shallow`` clone the sha comes with ``--depth=1``:
    only its tree is needed (the integrate strategy asks no ancestry question
    to test a pin), and a plain fetch would stop at the boundary anyway.
    """
    depth = ["--depth=1"] if shallow else []
    for remote in remotes:
        for args in ([*depth, remote, sha], [*depth, remote]):
            gitcli.run(workdir, "fetch", "--quiet", *args)
            if has(sha):
                return True
    return False


class Bounded(Protocol):
    """What the shallow shape reads of a repository (:class:`~bisectkit.git.repo.Repo` has it)."""

    @property
    def shallow(self) -> Boundary:
        """The repository's :class:`Boundary`."""
        ...

    def commit_info(self, sha: str) -> CommitInfo:
        """Subject, message, author, date and parents of commit ``sha``."""
        ...


class ShallowShape:
    """A shallow clone, as a :class:`~bisectkit.git.shapes.Shape`: a history that stops at
    a boundary (what it leaves open raises :class:`ShallowCut`)."""

    name = "shallow"
    key_changed: str | None = None

    def detect(self, repo: Bounded) -> bool:
        """Does ``<git dir>/shallow`` list boundary commits?"""
        return repo.shallow.active

    def cache_material(self, repo: Bounded) -> dict[str, Any] | None:
        """Nothing: the trees tested are the same, and what the boundary hides is never
        answered, it raises."""
        return None

    def narrowing(self, repo: Bounded, index: bool) -> Narrowing | None:
        """None: a shallow clone has every file of the commits it has."""
        return None

    def prefetch(self, repo: Bounded, old: str | None, new: str,
                 wanted: PathFilter | None) -> Fetched:
        """Nothing: a commit behind the boundary is fetched by its own question
        (:class:`ShallowCut`, ``--deepen``), never by a checkout."""
        return NOTHING

    def mirror(self, user: object, workspace: Path) -> None:
        """Nothing: bisectkit writes no boundary into a workspace; it holds what its clone
        and fetches by id bring."""

    def status(self, repo: Bounded) -> dict[str, Any] | None:
        """The boundary commits, the oldest date there, and the fetch that bisects reaching
        further back need."""
        boundary = sorted(repo.shallow.commits())
        if not boundary:
            return None
        dates = {c: repo.commit_info(c).date for c in boundary}
        oldest = min(boundary, key=dates.__getitem__)
        return {"boundary": boundary, "oldest": dates[oldest][:10],
                "fetch": repo.shallow.cut("", [oldest], boundary).command}

    def status_line(self, data: dict[str, Any]) -> str:
        """``shallow (history stops at 2 commits, oldest 2024-01-01); older bisects need
        e.g.: git -C ... fetch ...``."""
        return (f"shallow (history stops at {plural(len(data['boundary']), 'commit')}, "
                f"oldest {data['oldest']}); older bisects need e.g.: {data['fetch']}")


#: The shallow shape (registered in :data:`bisectkit.git.shapes.SHAPES`).
SHAPE = ShallowShape()
