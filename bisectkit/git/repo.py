"""The repository: everything bisectkit asks of git goes through one :class:`Repo`.

``Repo`` is the repository's identity (work tree, git dir, config, remotes) and
its history: it resolves revisions, answers ancestry questions, lists
first-parent candidates and computes patch ids. What else git holds is a part
of it, each a plain class in a module of its own, built by ``Repo.__init__``:

- ``Repo.worktree`` (:mod:`bisectkit.git.checkout`): what HEAD, index and work
  tree hold, and the primitives that move them;
- ``Repo.trees`` (:mod:`bisectkit.git.trees`): what a tree holds at a path, and
  what changes between two trees;
- ``Repo.refs`` (:mod:`bisectkit.git.refs`): refs, HEAD's reflog, the commits no
  ref keeps;
- ``Repo.merger`` (:mod:`bisectkit.git.merge`): patches replayed onto trees in
  memory, and commits created without moving a ref;
- ``Repo.promisor`` and ``Repo.shallow`` (:mod:`bisectkit.git.shapes`): what a
  partial clone lacks, and the graph answers a shallow clone leaves open;
- ``Repo.graph`` (:mod:`bisectkit.git.graph`): ancestry, merge-bases and range walks
  asked of the git CLI, which reads git's commit-graph (libgit2 does not).

Beside them, :mod:`bisectkit.git.cli` is the git CLI (for what it does better
than libgit2) and :mod:`bisectkit.git.objects` typed lookups of pygit2 objects.
pygit2 is imported in :mod:`bisectkit.git` only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pygit2
from pygit2.enums import SortMode

import bisectkit.git.cli as gitcli
import bisectkit.git.objects as gitobjects
from bisectkit.errors import BadInput
from bisectkit.git.checkout import WorkTree
from bisectkit.git.graph import Graph
from bisectkit.git.merge import Merger
from bisectkit.git.objects import GITLINK_MODE, entry_id
from bisectkit.git.refs import Refs
from bisectkit.git.shapes.partial import Prefetcher, Promisor
from bisectkit.git.shapes.shallow import Boundary, fetch_commit
from bisectkit.git.trees import Trees
from bisectkit.model import CommitInfo, Sha


class Repo:
    """A git repository with a work tree (a superproject or a submodule checkout)."""

    #: What HEAD, index and work tree hold, and the primitives that move them.
    worktree: WorkTree
    #: Trees read by id: entries at a path, what changes between two.
    trees: Trees
    #: Refs, HEAD's reflog, and the commits no ref keeps.
    refs: Refs
    #: The in-memory merge engine on this repository's objects.
    merger: Merger
    #: Ancestry, merge-bases and range walks, asked of the git CLI (the commit-graph).
    graph: Graph
    _repo: pygit2.Repository
    _ancestry: dict[tuple[str, str], bool]

    def __init__(self, path: str | Path) -> None:
        try:
            repo = pygit2.Repository(str(path))
        except pygit2.GitError as exc:
            raise BadInput(f"not a git repository: {path}") from exc
        if repo.workdir is None:
            raise BadInput(f"{path} is a bare repository; bisectkit needs a work tree")
        self.workdir = Path(repo.workdir).resolve()
        #: The repository's private directory (``.git`` or ``.git/modules/<name>``).
        self.git_dir = Path(repo.path).resolve()
        #: Fetches what a partial clone lacks (a no-op for a full clone).
        self.promisor = Prefetcher(self.workdir, self.git_dir, lambda: [
            Promisor(*r) for r in gitobjects.promisor_remotes(self._repo)],
            lambda oids: gitobjects.missing(self._repo, oids))
        self.graph = Graph(self.workdir, self.git_dir)
        self._open(repo)
        #: The shallow boundary (empty for a complete clone) and the checks that keep
        #: answers given on the truncated graph exact. It asks through lambdas: ``reopen``
        #: replaces the parts, which a bound method would keep reading.
        self.shallow = Boundary(self.git_dir, self.workdir, self._reaches,
                                lambda sha: self._commit(sha).commit_time,
                                lambda: self.refs.remote_branches())

    def _open(self, repo: pygit2.Repository) -> None:
        """Use libgit2 view ``repo``: every part reads through the same one."""
        self._repo, self._ancestry = repo, {}
        self.worktree = WorkTree(repo, self.workdir)
        self.trees = Trees(repo)
        self.refs = Refs(repo, self.workdir)
        self.merger = Merger(repo, self.promisor)

    def reopen(self) -> None:
        """A fresh libgit2 view: after a deepening fetch the old one still cuts the graph."""
        self._open(pygit2.Repository(str(self.git_dir)))

    @classmethod
    def discover(cls, start: str | Path) -> Repo:
        """Open the repository that contains ``start`` (like ``git rev-parse --show-toplevel``)."""
        found = pygit2.discover_repository(str(start))
        if found is None:
            raise BadInput(f"not inside a git repository: {start}; cd into your "
                           "superproject first")
        return cls(found)

    # -- revisions -------------------------------------------------------
    def resolve(self, rev: str) -> Sha:
        """Full sha of the commit ``rev`` names; :class:`BadInput` if there is none."""
        try:
            obj = self._repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise BadInput(f"unknown revision '{rev}' in {self.workdir}") from exc
        return Sha(commit.id)

    def try_resolve(self, rev: str) -> Sha | None:
        """Like :meth:`resolve` but ``None`` when ``rev`` names no commit here."""
        try:
            return self.resolve(rev)
        except BadInput:
            return None

    def commit_info(self, sha: str) -> CommitInfo:
        """Subject, message, author, date and parents of commit ``sha``."""
        c = self._commit(sha)
        sig = c.author
        when = datetime.fromtimestamp(sig.time, UTC).strftime("%Y-%m-%d %H:%M:%S +0000")
        message = c.message
        return CommitInfo(
            sha=Sha(c.id),
            # git's first line: up to a line feed (a carriage return or a form feed in it
            # is part of the subject, shown by whatever prints it, not a line break).
            subject=message.split("\n", 1)[0].removesuffix("\r"),
            message=message,
            author=f"{sig.name} <{sig.email}>",
            date=when,
            parents=tuple(str(p) for p in c.parent_ids),
        )

    def tree_of(self, sha: str) -> Sha:
        """Tree id of commit ``sha``."""
        return Sha(self._commit(sha).tree_id)

    def gitlink_at(self, commit: str, path: str) -> Sha | None:
        """The submodule commit that superproject ``commit`` pins at ``path``, if any."""
        tree = self._commit(commit).tree
        try:
            entry = tree[path]
        except KeyError:
            return None
        return Sha(entry.id) if entry.filemode == GITLINK_MODE else None

    def has_commit(self, sha: str) -> bool:
        """Is ``sha`` a commit in this repository's object database?"""
        return gitobjects.has_commit(self._repo, sha)

    def _commit(self, sha: str) -> pygit2.Commit:
        return gitobjects.commit(self._repo, sha)

    # -- what a commit changes against its first parent (patch-stack analysis asks these
    # of every stacked patch and of the upstream commits that may be the same change; in
    # a partial clone the blobs a patch id reads are fetched first) -------------------
    def _touches(self, commit: pygit2.Commit, paths: Sequence[str]) -> bool:
        return any(_changes(commit, p) for p in paths)

    def touches_all(self, sha: str, paths: Iterable[str]) -> bool:
        """Cheap pre-filter for patch-id matching: does ``sha`` change every one of ``paths``?"""
        commit = self._commit(sha)
        return all(_changes(commit, p) for p in paths)

    # -- patches ------------------------------------------------------------
    def changed_paths(self, sha: str) -> frozenset[str]:
        """Paths a commit changes compared with its first parent."""
        paths: set[str] = set()
        for delta in self._first_parent_diff(sha).deltas:
            paths.add(delta.old_file.path)
            paths.add(delta.new_file.path)
        return frozenset(paths)

    def patch_id(self, sha: str) -> str:
        """Stable patch id of a commit's change against its first parent (as ``git patch-id``;
        it reads both sides' blobs, which a partial clone fetches)."""
        return self.promisor.retrying(lambda: str(self._first_parent_diff(sha).patchid),
                                      lambda: self.patch_blobs(sha))

    def patch_blobs(self, sha: str) -> set[str]:
        """Ids of the blobs on both sides of a commit's change (what its patch id reads)."""
        c = self._commit(sha)
        return gitobjects.diff_blobs(c.parents[0].tree if c.parents else
                                     gitobjects.empty_tree(self._repo), c.tree)

    def _first_parent_diff(self, sha: str) -> pygit2.Diff:
        self.promisor.check_trees()  # a tree:0 clone: one line, not libgit2's error
        commit = self._commit(sha)
        if commit.parents:
            return gitobjects.diff(commit.parents[0].tree, commit.tree)
        return commit.tree.diff_to_tree(swap=True)

    # -- ancestry (asked of the git CLI, which reads the commit-graph: Repo.graph) -----
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """``ancestor`` is ``descendant`` or reachable from it (ShallowCut: unknown here)."""
        if self._reaches(ancestor, descendant):
            return True
        self.shallow.check_not_ancestor(ancestor, descendant)
        return False

    def _reaches(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        key = (ancestor, descendant)
        hit = self._ancestry.get(key)
        if hit is None:
            hit = self.graph.is_ancestor(ancestor, descendant)
            self._ancestry[key] = hit
        return hit

    def merge_base(self, a: str, b: str) -> Sha | None:
        """The best common ancestor of commits ``a`` and ``b`` (``None``: no shared history).

        git finds them (on its commit-graph); where there are several (criss-cross
        merges), the one libgit2 picks, as bisectkit always took.
        """
        bases = self.graph.merge_bases(a, b)
        if len(bases) > 1:
            found = self._repo.merge_base(a, b)
            bases = [str(found)] if found is not None else []
        base = Sha(bases[0]) if bases else None
        self.shallow.check_merge_base(a, b, base)
        return base

    def first_parent_range(
        self, tip: str, hide: Sequence[str], paths: Sequence[str] = (), keep_tip: bool = True
    ) -> list[str]:
        """First-parent line from ``tip`` back to (excluding) anything reachable from ``hide``.

        Oldest first. With ``paths``, only commits that change one of those
        path prefixes compared with their first parent are kept; the tip is
        kept regardless when ``keep_tip`` (a bisect's known-bad end). The line is
        walked by git (:meth:`Graph.first_parents`: on the commit-graph, bounded by
        the line); the list is as long as it.
        """
        shas: list[str] = []
        last: tuple[str, bool] | None = None
        for sha, has_parent in self.graph.first_parents(tip, hide):
            last = (sha, has_parent)
            is_kept_tip = keep_tip and sha == tip
            if paths and not is_kept_tip and not self._touches(self._commit(sha), paths):
                continue
            shas.append(sha)
        if last is not None:
            self.shallow.check_line(tip, last[0], hide, not last[1])
        shas.reverse()
        return shas

    def iter_range(self, tips: Iterable[str], hide: Iterable[str]) -> Iterator[str]:
        """Every commit (full graph) reachable from ``tips`` and not from ``hide``, in
        libgit2's topological order (children before parents). It holds the whole range:
        :meth:`range_commits` streams it."""
        tips, hide = list(tips), list(hide)
        self.shallow.check_range(tips, hide)
        walker = self._repo.walk(None, SortMode.TOPOLOGICAL)
        for t in tips:
            walker.push(t)
        for h in hide:
            walker.hide(h)
        for commit in walker:
            yield str(commit.id)

    def range_commits(self, tips: Sequence[str], hide: Sequence[str],
                      paths: Sequence[str] | None = None) -> Iterator[str]:
        """The commits reachable from ``tips`` and not from ``hide``, streamed in no set
        order; with ``paths``, a superset of those that change one of them against their
        first parent (a path-limited walk in git, on its commit-graph)."""
        self.shallow.check_range(tips, hide)
        return self.graph.walk(tips, hide, paths)

    def fetch_commit(self, sha: str) -> bool:
        """Fetch ``sha`` here (:func:`~.shapes.shallow.fetch_commit`); True once it is."""
        remotes, cut = [r.name for r in self._repo.remotes if r.name], self.shallow.active
        found = fetch_commit(self.workdir, remotes, sha, cut, self.has_commit)
        if found and cut:
            self.reopen()  # a new boundary commit: the old view would look for its parents
        return found

    def remote_urls(self) -> dict[str, str]:
        """Each configured remote's fetch URL, by remote name."""
        return {r.name: r.url for r in self._repo.remotes if r.name and r.url}

    def submodule_urls(self, path: str) -> list[str]:
        """Where the superproject fetches submodule ``path`` from: its config, then
        .gitmodules. Read by git: libgit2's lookup refuses a path that is not UTF-8."""
        gitmodules = ("--file", str(self.workdir / ".gitmodules"))
        listed = _git_config(self.workdir, *gitmodules, "--get-regexp", r"^submodule\..*\.path$")
        names = [key[len("submodule."):-len(".path")] for key, _, value in
                 (entry.partition("\n") for entry in listed.split("\0")) if value == path]
        urls = [_git_config(self.workdir, *where, "--get", f"submodule.{names[0]}.url")
                for where in ((), gitmodules)] if names else []
        return [u for u in dict.fromkeys(urls) if u]

    def first_parent_log(self, tip: str, limit: int) -> list[str]:
        """Up to ``limit`` commits of ``tip``'s first-parent line, newest (``tip``) first."""
        walker = self._repo.walk(tip, SortMode.NONE)
        walker.simplify_first_parent()
        shas: list[str] = []
        for commit in walker:
            if len(shas) >= limit:
                break
            shas.append(str(commit.id))
        return shas

    def config_get_all(self, key: str) -> list[str]:
        """Every value of a multi-valued config key (``git config --get-all``)."""
        # A key written without a value (``[bisectkit] plugins``) has no string to give.
        return [v for v in self._repo.config.get_multivar(key) if v is not None]

    def config_get(self, key: str) -> str | None:
        """A config value (``git config --get``); ``None`` when it is not set."""
        try:
            return self._repo.config[key]
        except KeyError:
            return None


def open_submodule(superproject: Repo, path: str) -> tuple[str, Repo]:
    """Validate that ``path`` is an initialised submodule; return (normalised path, repo)."""
    rel = Path(path)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(superproject.workdir)
        except ValueError as exc:
            raise BadInput(f"{path} is outside the superproject {superproject.workdir}") from exc
    norm = os.path.normpath(rel.as_posix()).strip("/")
    if norm not in superproject.worktree.gitlinks():
        raise BadInput(f"{path} is not a submodule of {superproject.workdir}")
    sub_dir = superproject.workdir / norm
    if not (sub_dir / ".git").exists():
        raise BadInput(f"submodule {norm} is not initialised "
                       f"(run: git submodule update --init {norm})")
    return norm, Repo(sub_dir)


def find_superproject(start: str | Path) -> Repo:
    """The outermost repository around ``start`` (a superproject, even from inside a submodule)."""
    repo = Repo.discover(start)
    while True:
        parent_dir = repo.workdir.parent
        found = pygit2.discover_repository(str(parent_dir))
        if found is None:
            return repo
        parent = Repo(found)
        try:
            rel = repo.workdir.relative_to(parent.workdir).as_posix()
        except ValueError:
            return repo
        if rel not in parent.worktree.gitlinks():
            return repo
        repo = parent


def _git_config(cwd: Path, *args: str) -> str:
    """``git config -z args...``'s values (NUL-ended), "" when it finds none."""
    proc = gitcli.run(cwd, "config", "-z", *args)
    return proc.stdout.rstrip("\0") if proc.returncode == 0 else ""


def _changes(commit: pygit2.Commit, path: str) -> bool:
    """Does ``commit`` change ``path`` against its first parent (tree entries only)?"""
    parent_tree = commit.parents[0].tree if commit.parents else None
    return entry_id(commit.tree, path) != entry_id(parent_tree, path)
