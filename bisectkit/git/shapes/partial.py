"""Partial clones: fetching the objects libgit2 needs from the promisor remotes, in batches.

A ``--filter=blob:none`` clone has every commit and tree but only the blobs
that were checked out; the git CLI fetches a missing blob when it reads one,
libgit2 never does. bisectkit therefore predicts what each phase will read
(the patch-stack analysis, a full merge, a checkout) and asks for all of it
in one ``git fetch`` per promisor remote, exactly as git's own lazy fetch
does; :meth:`Prefetcher.retrying` is the net for what a prediction missed
(libgit2's rename detection reads blobs no patch touches).

Nothing here runs for a full clone: :attr:`Prefetcher.partial` is false and
every call returns :data:`NOTHING` at once.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import bisectkit.git.cli as gitcli
import bisectkit.git.objects as gitobjects
from bisectkit.errors import BisectkitError, ExitCode, GitFailure
from bisectkit.git.shapes.base import NOTHING, Fetched, Narrowing, PathFilter
from bisectkit.git.trees import Trees

T = TypeVar("T")

#: How many times one operation may stop on a missing object before bisectkit gives up.
MAX_RETRIES = 64
#: git's words for a remote that cannot be reached at all (as opposed to one that lacks
#: an object): such a remote is not asked again in this process.
_UNREACHABLE = re.compile(r"Could not read from remote repository|does not appear to be a git "
                          r"repository|unable to access|Could not resolve host|"
                          r"Connection refused|No such file or directory")


class PromisorUnreachable(BisectkitError):
    """An object a step needs is on no promisor remote that answers (exit 2)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Promisor:
    """A remote that promises the objects a partial clone left out."""

    name: str
    url: str
    #: ``remote.<name>.partialclonefilter`` (``blob:none``), if set.
    filter: str | None


class Prefetcher:
    """Batch fetches of missing objects for one repository (a no-op for a full clone).

    ``remotes`` reads the promisor remotes (``extensions.partialClone``'s first)
    when first needed; ``missing`` says which ids the object database lacks
    without fetching anything. :attr:`total` counts everything fetched so far.
    """

    def __init__(self, workdir: Path, git_dir: Path, remotes: Callable[[], list[Promisor]],
                 missing: Callable[[Iterable[str]], list[str]]) -> None:
        self.workdir = workdir
        self.git_dir = git_dir
        self._read_remotes = remotes
        self._remotes: list[Promisor] | None = None
        self._missing = missing
        self._dead: dict[str, str] = {}
        #: Everything this repository fetched in this process.
        self.total = NOTHING

    @property
    def remotes(self) -> list[Promisor]:
        """The promisor remotes, the one named by ``extensions.partialClone`` first."""
        if self._remotes is None:
            self._remotes = self._read_remotes()
        return self._remotes

    @property
    def partial(self) -> bool:
        """Is this a partial clone (some remote promises objects)?"""
        return bool(self.remotes)

    def describe(self) -> str:
        """``blob:none from origin, upstream`` (for ``status`` and messages)."""
        filters = sorted({r.filter for r in self.remotes if r.filter}) or ["a filter"]
        return f"{', '.join(filters)} from {', '.join(r.name for r in self.remotes)}"

    def check_trees(self) -> None:
        """Refuse a clone filtered beyond blobs (``tree:0``): libgit2 reads trees everywhere
        (every diff, every walk by path), and fetching them one by one is no remedy."""
        odd = [r for r in self.remotes if r.filter and not r.filter.startswith("blob:")]
        if odd:
            here = str(self.workdir)
            fix = " && ".join(
                gitcli.shown("-C", here, "config", f"remote.{r.name}.partialclonefilter",
                             "blob:none") + " && " +
                gitcli.shown("-C", here, "fetch", "--refetch", r.name) for r in odd)
            raise PromisorUnreachable(
                f"{self.workdir} is a partial clone without trees (--filter="
                f"{odd[0].filter} from {', '.join(r.name for r in odd)}): bisectkit needs "
                f"every tree here; run: {fix}")

    def missing(self, oids: Iterable[str]) -> list[str]:
        """The ids among ``oids`` that are not here (nothing is fetched)."""
        return self._missing(dict.fromkeys(oids)) if self.partial else []

    def ensure(self, oids: Iterable[str]) -> Fetched:
        """Fetch whichever of ``oids`` are missing, in one batch per promisor remote.

        :class:`PromisorUnreachable` when one is on no remote that answers.
        """
        wanted = self.missing(oids)
        if not wanted:
            return NOTHING
        started = time.perf_counter()
        packs = self._packs()
        self._fetch_any(wanted)
        new = sum(p.stat().st_size for p in self._packs() - packs if p.exists())
        done = Fetched(len(wanted), new, time.perf_counter() - started)
        self.total = self.total + done
        return done

    def retrying(self, call: Callable[[], T], predicted: Callable[[], Iterable[str]]) -> T:
        """``call()``; when libgit2 stops on an object missing here, fetch it (and, the
        first time, ``predicted()``: what the operation will read next) and call again."""
        asked: set[str] = set()
        for _ in range(MAX_RETRIES):
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 - only a missing object is handled
                oid = gitobjects.missing_oid(exc) if self.partial else None
                if oid is None or oid in asked:
                    raise
                batch = [oid] if asked else [oid, *predicted()]
                asked.add(oid)
                self.ensure(batch)
        raise GitFailure(f"{self.workdir}: more than {MAX_RETRIES} objects went missing one "
                         "by one; fetch them first (git fetch --refetch) and run again")

    # -- fetching ---------------------------------------------------------------
    def _fetch_any(self, oids: Sequence[str]) -> None:
        """Fetch ``oids`` from the first remote that has them all; a batch no remote
        serves whole (blobs of our own patches and of upstream commits, say) is split."""
        problems: list[str] = []
        for remote in self.remotes:
            if remote.name in self._dead:
                problems.append(f"{remote.name} ({remote.url}): {self._dead[remote.name]}")
                continue
            error = self._fetch(remote, oids)
            if error is None:
                oids = self.missing(oids)
                if not oids:
                    return
                continue
            problems.append(f"{remote.name} ({remote.url}): {error}")
            if _UNREACHABLE.search(error):
                self._dead[remote.name] = error
        if len(oids) > 1:
            half = len(oids) // 2
            self._fetch_any(oids[:half])
            self._fetch_any(self.missing(oids[half:]))
            return
        raise PromisorUnreachable(
            f"cannot fetch object {oids[0]} that {self.workdir} (a partial clone) needs: "
            f"{'; '.join(problems)}; make a promisor remote reachable again ('git -C "
            f"{shlex.quote(str(self.workdir))} remote set-url <remote> <url>') and run the "
            "command again")

    def _fetch(self, remote: Promisor, oids: Sequence[str]) -> str | None:
        """One ``git fetch`` of ``oids`` by id, as git's own lazy fetch runs it; git's
        words on failure (one line), else None."""
        proc = subprocess.run(
            gitcli.argv("-c", "fetch.negotiationAlgorithm=noop", "fetch", remote.name,
                        "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
                        f"--filter={remote.filter or 'blob:none'}", "--stdin"),
            cwd=self.workdir, env=gitcli.git_env(), input="\n".join(oids) + "\n", text=True,
            capture_output=True, check=False, start_new_session=True)
        if proc.returncode == 0:
            return None
        said = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        return said[0][:200] if said else f"git fetch exit {proc.returncode}"

    def _packs(self) -> set[Path]:
        return set((self.git_dir / "objects" / "pack").glob("*.pack"))


class Promised(Protocol):
    """What the partial shape reads of a repository (:class:`~bisectkit.git.repo.Repo` has it)."""

    @property
    def promisor(self) -> Prefetcher:
        """The repository's :class:`Prefetcher` (one per repository: it counts the total)."""
        ...

    @property
    def trees(self) -> Trees:
        """The repository's trees (:meth:`~bisectkit.git.trees.Trees.changed_blobs`: what a
        checkout writes)."""
        ...


class PartialShape:
    """A partial clone, as a :class:`~bisectkit.git.shapes.Shape`: blobs that are not
    here until fetched, and a prefetch before every checkout."""

    name = "partial"
    key_changed: str | None = None

    def detect(self, repo: Promised) -> bool:
        """Does some remote promise objects this repository left out?"""
        return repo.promisor.partial

    def cache_material(self, repo: Promised) -> dict[str, Any] | None:
        """Nothing: a blob fetched is the very blob the tree names, and the trees are keyed."""
        return None

    def narrowing(self, repo: Promised, index: bool) -> Narrowing | None:
        """None: a checkout writes every blob it needs, fetched first (:meth:`prefetch`)."""
        return None

    def prefetch(self, repo: Promised, old: str | None, new: str,
                 wanted: PathFilter | None) -> Fetched:
        """Fetch, in one batch per remote, the blobs a checkout from tree ``old`` to ``new``
        writes (at the paths ``wanted`` keeps): libgit2 and a workspace's git cannot
        fetch one lazily."""
        if not repo.promisor.partial:
            return NOTHING
        return repo.promisor.ensure(repo.trees.changed_blobs(old, new, wanted))

    def mirror(self, user: object, workspace: Path) -> None:
        """Nothing: a workspace borrows the user's objects and is no partial clone itself;
        what it checks out is fetched into the user's repository first (:meth:`prefetch`)."""

    def status(self, repo: Promised) -> dict[str, Any]:
        """The filter, the promisor remotes, and what this process fetched so far."""
        return {"shape": repo.promisor.describe(),
                "remotes": [dataclasses.asdict(r) for r in repo.promisor.remotes],
                "fetched": repo.promisor.total.to_json()}

    def status_line(self, data: dict[str, Any]) -> str:
        """``partial clone (blob:none from origin); blobs fetched per step``."""
        return f"partial clone ({data['shape']}); blobs fetched per step"


#: The partial shape (registered in :data:`bisectkit.git.shapes.SHAPES`).
SHAPE = PartialShape()
