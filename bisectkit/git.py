"""Typed wrapper around pygit2: the only module that imports it.

Everything bisectkit asks of git goes through :class:`Repo`: resolving
revisions, ancestry, first-parent candidate lists, patch ids, in-memory 3-way
merges of patches, creating commit objects without moving refs, and the
primitives that move index, work tree and HEAD (always through the git CLI,
so every change is one process the journal can name and a reflog line
recovery can read; :mod:`bisectkit.worktree` journals and sequences them).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, FileStatus, SortMode

from bisectkit.errors import BadInput, GitFailure
from bisectkit.model import CommitInfo, HeadState

GITLINK_MODE = 0o160000






@dataclass(frozen=True)
class TreeDiff:
    """What changes between two trees."""

    #: Every path that differs (old and new names).
    paths: tuple[str, ...]
    #: Paths rewritten in place (present on both sides).
    modified: tuple[str, ...]
    #: Paths only the new tree has (files and links; not gitlinks).
    added: tuple[str, ...]


@dataclass(frozen=True)
class LocalChanges:
    """What a work tree holds besides its HEAD commit (:meth:`Repo.local_changes`)."""

    #: Tracked paths whose index or work tree differs from HEAD (deleted ones included).
    modified: tuple[str, ...]
    #: Untracked files git does not ignore; a nested repository is one entry ``dir/``.
    untracked: tuple[str, ...]


@dataclass(frozen=True)
class ReflogEntry:
    """One line of a reflog."""

    old: str
    new: str
    message: str


#: Told the pid of a git command as soon as it runs.
Spawned = Callable[[int], None]


@dataclass(frozen=True)
class MergeResult:
    """Result of merging one patch onto a tree: a new tree, or the conflicting paths."""

    tree: str | None
    conflicts: tuple[str, ...]


class Repo:
    """A git repository with a work tree (a superproject or a submodule checkout)."""

    def __init__(self, path: str | Path) -> None:
        try:
            self._repo = pygit2.Repository(str(path))
        except pygit2.GitError as exc:
            raise BadInput(f"not a git repository: {path}") from exc
        if self._repo.workdir is None:
            raise BadInput(f"{path} is a bare repository; bisectkit needs a work tree")
        self.workdir = Path(self._repo.workdir).resolve()
        self._ancestry: dict[tuple[str, str], bool] = {}

    @classmethod
    def discover(cls, start: str | Path) -> Repo:
        """Open the repository that contains ``start`` (like ``git rev-parse --show-toplevel``)."""
        found = pygit2.discover_repository(str(start))
        if found is None:
            raise BadInput(f"not inside a git repository: {start}")
        return cls(found)

    @property
    def git_dir(self) -> Path:
        """The repository's private directory (``.git`` or ``.git/modules/<name>``)."""
        return Path(self._repo.path).resolve()

    # -- revisions -------------------------------------------------------
    def resolve(self, rev: str) -> str:
        """Full sha of the commit ``rev`` names; :class:`BadInput` if there is none."""
        try:
            obj = self._repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise BadInput(f"unknown revision '{rev}' in {self.workdir}") from exc
        return str(commit.id)

    def try_resolve(self, rev: str) -> str | None:
        """Like :meth:`resolve` but ``None`` when ``rev`` names no commit here."""
        try:
            return self.resolve(rev)
        except BadInput:
            return None

    def commit_info(self, sha: str) -> CommitInfo:
        c = self._commit(sha)
        sig = c.author
        when = datetime.fromtimestamp(sig.time, UTC).strftime("%Y-%m-%d %H:%M:%S +0000")
        message = c.message
        return CommitInfo(
            sha=str(c.id),
            subject=message.splitlines()[0] if message else "",
            message=message,
            author=f"{sig.name} <{sig.email}>",
            date=when,
            parents=tuple(str(p) for p in c.parent_ids),
        )

    def tree_of(self, sha: str) -> str:
        return str(self._commit(sha).tree_id)

    def _commit(self, sha: str) -> pygit2.Commit:
        obj = self._repo.get(sha)
        if obj is None:
            raise GitFailure(f"commit {sha} is missing from {self.workdir}")
        return obj.peel(pygit2.Commit)

    # -- ancestry ---------------------------------------------------------
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True if ``ancestor`` is ``descendant`` or reachable from it (full graph)."""
        if ancestor == descendant:
            return True
        key = (ancestor, descendant)
        hit = self._ancestry.get(key)
        if hit is None:
            hit = self._repo.descendant_of(descendant, ancestor)
            self._ancestry[key] = hit
        return hit

    def merge_base(self, a: str, b: str) -> str | None:
        found = self._repo.merge_base(a, b)
        return None if found is None else str(found)

    def first_parent_range(
        self, tip: str, hide: Sequence[str], paths: Sequence[str] = (), keep_tip: bool = True
    ) -> list[str]:
        """First-parent line from ``tip`` back to (excluding) anything reachable from ``hide``.

        Oldest first. With ``paths``, only commits that change one of those
        path prefixes compared with their first parent are kept; the tip is
        kept regardless when ``keep_tip`` (a bisect's known-bad end).
        """
        walker = self._repo.walk(tip, SortMode.TOPOLOGICAL)
        walker.simplify_first_parent()
        for h in hide:
            walker.hide(h)
        shas: list[str] = []
        for commit in walker:
            is_kept_tip = keep_tip and str(commit.id) == tip
            if paths and not is_kept_tip and not self._touches(commit, paths):
                continue
            shas.append(str(commit.id))
        shas.reverse()
        return shas

    def iter_range(self, tips: Iterable[str], hide: Iterable[str]) -> Iterator[str]:
        """Every commit (full graph) reachable from ``tips`` and not from ``hide``."""
        walker = self._repo.walk(None, SortMode.TOPOLOGICAL)
        for t in tips:
            walker.push(t)
        for h in hide:
            walker.hide(h)
        for commit in walker:
            yield str(commit.id)

    def _touches(self, commit: pygit2.Commit, paths: Sequence[str]) -> bool:
        parent_tree = commit.parents[0].tree if commit.parents else None
        return any(
            _entry_id(commit.tree, p) != _entry_id(parent_tree, p) for p in paths
        )

    def touches_all(self, sha: str, paths: Iterable[str]) -> bool:
        """Cheap pre-filter for patch-id matching: does ``sha`` change every one of ``paths``?"""
        commit = self._commit(sha)
        parent_tree = commit.parents[0].tree if commit.parents else None
        return all(_entry_id(commit.tree, p) != _entry_id(parent_tree, p) for p in paths)

    # -- patches ------------------------------------------------------------
    def changed_paths(self, sha: str) -> frozenset[str]:
        """Paths a commit changes compared with its first parent."""
        paths: set[str] = set()
        for delta in self._first_parent_diff(sha).deltas:
            paths.add(delta.old_file.path)
            paths.add(delta.new_file.path)
        return frozenset(paths)

    def patch_id(self, sha: str) -> str:
        """Stable patch id of a commit's change against its first parent (as ``git patch-id``)."""
        return str(self._first_parent_diff(sha).patchid)

    def _first_parent_diff(self, sha: str) -> pygit2.Diff:
        commit = self._commit(sha)
        if commit.parents:
            return self._repo.diff(commit.parents[0].tree, commit.tree)
        return commit.tree.diff_to_tree(swap=True)

    def merge_patch(self, onto_tree: str, patch: str) -> MergeResult:
        """3-way merge of ``patch`` (against its first parent) onto ``onto_tree``, in memory.

        Nothing is written to any work tree or ref: a conflict only yields
        the list of conflicting paths.
        """
        commit = self._commit(patch)
        base = commit.parents[0].tree if commit.parents else self._empty_tree()
        onto = self._repo.get(onto_tree)
        fast = self._merge_touched_paths(onto, base, commit.tree)
        if fast is not None:
            return MergeResult(tree=fast, conflicts=())
        index = self._repo.merge_trees(base, onto, commit.tree)
        if index.conflicts is not None:
            paths = sorted(
                {
                    entry.path
                    for triple in index.conflicts
                    for entry in triple
                    if entry is not None
                }
            )
            return MergeResult(tree=None, conflicts=tuple(paths))
        return MergeResult(tree=str(index.write_tree(self._repo)), conflicts=())

    def _merge_touched_paths(self, onto: pygit2.Tree, base: pygit2.Tree,
                             theirs: pygit2.Tree) -> str | None:
        """The merge result when every path the patch touches resolves trivially.

        A patch touches a handful of files while the candidate may differ
        from the patch's parent in tens of thousands: ``merge_trees`` (and
        writing its index back to a tree) costs time in the latter, this in
        the former. A path resolves trivially when the candidate has the
        patch's result already or still has the patch's base. Anything else
        (a content merge, a possible rename, a file/directory clash) returns
        ``None`` so that the full merge decides, and reports conflicts.
        """
        changes: dict[str, tuple[pygit2.Oid, int] | None] = {}
        deltas = list(self._repo.diff(base, theirs).deltas)
        touched = {d.new_file.path for d in deltas}
        for delta in deltas:
            if delta.status not in (DeltaStatus.ADDED, DeltaStatus.DELETED, DeltaStatus.MODIFIED):
                return None
            path = delta.new_file.path
            if _file_directory_clash(onto, path, touched):
                return None
            want, was, have = (_entry(theirs, path), _entry(base, path), _entry(onto, path))
            if have == want:
                continue
            if have != was:
                return None
            changes[path] = want
        if not changes:
            return str(onto.id)
        new = self._edit_tree(onto, changes)
        return str(new if new is not None else self._empty_tree().id)

    def _edit_tree(self, tree: pygit2.Tree | None,
                   changes: dict[str, tuple[pygit2.Oid, int] | None]) -> pygit2.Oid | None:
        """``tree`` with ``changes`` (path -> (blob id, mode), or None to delete) applied.

        Only the trees along the changed paths are rewritten; ``None`` when
        the result is empty (an emptied directory disappears, as in git).
        """
        builder = self._repo.TreeBuilder(tree) if tree is not None else self._repo.TreeBuilder()
        nested: dict[str, dict[str, tuple[pygit2.Oid, int] | None]] = {}
        for path, value in changes.items():
            head, slash, rest = path.partition("/")
            if slash:
                nested.setdefault(head, {})[rest] = value
            elif value is None:
                if builder.get(head) is not None:
                    builder.remove(head)
            else:
                builder.insert(head, value[0], value[1])
        for name, sub in nested.items():
            entry = tree[name] if tree is not None and name in tree else None
            subtree = self._repo.get(entry.id) if entry is not None and \
                entry.filemode == pygit2.enums.FileMode.TREE else None
            new = self._edit_tree(subtree, sub)
            if new is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, new, pygit2.enums.FileMode.TREE)
        oid = builder.write()
        if tree is not None and not len(self._repo.get(oid)):
            return None
        return oid

    def _empty_tree(self) -> pygit2.Tree:
        return self._repo.get(self._repo.TreeBuilder().write())

    def make_commit(self, tree: str, parent: str, like: str) -> str:
        """Create (no ref moved) a commit of ``tree`` on ``parent`` with ``like``'s metadata.

        Author, committer and message are copied so that the same patched
        tree always yields the same commit id.
        """
        src = self._commit(like)
        oid = self._repo.create_commit(
            None, src.author, src.committer, src.message, pygit2.Oid(hex=tree),
            [pygit2.Oid(hex=parent)],
        )
        return str(oid)

    # -- work tree ------------------------------------------------------------
    def head_state(self) -> HeadState:
        if self._repo.head_is_unborn:
            raise BadInput(f"{self.workdir} has no commits")
        head = self._repo.lookup_reference("HEAD")
        sha = str(self._repo.head.target)
        if head.type == pygit2.enums.ReferenceType.SYMBOLIC:
            return HeadState(ref=str(head.target), sha=sha)
        return HeadState(ref=None, sha=sha)

    def dirty_paths(self, ignore: Iterable[str] = ()) -> list[str]:
        """Tracked paths whose work tree or index differs from HEAD (untracked files are fine)."""
        return self._changed(ignore, ~FileStatus.CURRENT)

    def worktree_changes(self, ignore: Iterable[str] = ()) -> list[str]:
        """Tracked paths whose work tree differs from the index (edits not staged)."""
        return self._changed(ignore, FileStatus.WT_MODIFIED | FileStatus.WT_DELETED |
                             FileStatus.WT_TYPECHANGE)

    def _changed(self, ignore: Iterable[str], flags: int) -> list[str]:
        """Tracked paths (not in ``ignore``) whose status has any of ``flags``."""
        skip = set(ignore)
        self._repo.index.read(False)  # git itself may have rewritten it
        changed = self._repo.status(untracked_files="no")
        return sorted(p for p, have in changed.items() if p not in skip and have & flags)

    def local_changes(self, untracked: bool = True) -> LocalChanges:
        """Tracked paths that differ from HEAD and (``untracked``) untracked files git does
        not ignore, like ``git status``; submodules are not looked into (not even their HEAD).
        """
        out = _git_bytes(self.workdir, f"cannot read the status of {self.workdir}",
                         "status", "--porcelain=v1", "-z", "--no-renames",
                         "--ignore-submodules=all",
                         f"--untracked-files={'all' if untracked else 'no'}")
        modified: list[str] = []
        new: list[str] = []
        for record in out.split(b"\0"):
            if record:  # "XY path": XY is "??" for an untracked file
                (new if record[:2] == b"??" else modified).append(os.fsdecode(record[3:]))
        return LocalChanges(tuple(sorted(modified)), tuple(sorted(new)))

    def gitlinks(self) -> dict[str, str]:
        """Submodule paths recorded in the index, with the commit each is pinned to."""
        index = self._repo.index
        index.read(False)  # git itself may have rewritten it (read-tree)
        return {e.path: str(e.id) for e in index if e.mode == GITLINK_MODE}

    # -- moving the work tree (journaled by bisectkit.worktree) -------------------
    def head_tree(self) -> str:
        """Tree id of HEAD (the empty tree when HEAD is unborn)."""
        return str(self._head_tree().id)

    def index_tree(self) -> str:
        """Tree id of what the index holds now (written to the object database only)."""
        index = self._repo.index
        index.read(True)
        try:
            return str(index.write_tree(self._repo))
        except pygit2.GitError as exc:  # unmerged entries: someone is mid-merge
            raise GitFailure(f"the index of {self.workdir} has unmerged entries; resolve or "
                             "abort the merge first") from exc

    def diff_trees(self, old: str, new: str) -> TreeDiff:
        """What changes between two trees: every path, those rewritten in place, those added."""
        if old == new:
            return TreeDiff((), (), ())
        paths: set[str] = set()
        modified: list[str] = []
        added: list[str] = []
        for delta in self._repo.diff(self._repo.get(old), self._repo.get(new)).deltas:
            paths.add(delta.old_file.path)
            paths.add(delta.new_file.path)
            if delta.status == DeltaStatus.MODIFIED:
                modified.append(delta.new_file.path)
            elif delta.status == DeltaStatus.ADDED and delta.new_file.mode != GITLINK_MODE:
                added.append(delta.new_file.path)
        return TreeDiff(tuple(sorted(paths)), tuple(modified), tuple(sorted(added)))

    def tracks(self, tree: str, path: str) -> bool:
        """Does ``tree`` have an entry (file, link, directory or gitlink) at ``path``?"""
        return _entry(self._repo.get(tree), path) is not None

    def index_has(self, path: str) -> bool:
        """Is ``path`` (a file) in the index as it is on disk now?"""
        index = self._repo.index
        index.read(False)
        return path in index

    def refresh_index(self, on_spawn: Spawned | None = None) -> None:
        """Refresh the index's stat data (racily-clean entries would look modified)."""
        _git(self.workdir, "update-index", "-q", "--refresh", on_spawn=on_spawn)

    def read_tree(self, base: str, target: str, on_spawn: Spawned | None = None) -> None:
        """Move index and work tree from tree ``base`` to ``target`` (two-tree read-tree).

        git writes exactly the changed paths, refuses to overwrite local
        edits, and leaves a fully refreshed index (libgit2's checkout was
        several times slower on large trees).
        """
        _git_checked(self.workdir, f"cannot check out {target[:12]} in {self.workdir}",
                     "read-tree", "-m", "-u", base, target, on_spawn=on_spawn,
                     hint="; move local edits out of the way, then run the command again "
                          "or 'git bisect-patched reset'")

    def reset_tree(self, target: str, on_spawn: Spawned | None = None) -> None:
        """Make index and work tree exactly ``target``, whatever they hold now.

        ``read-tree --reset -u`` compares the index (and the files' stat data)
        with ``target``: it rewrites what differs, including files a killed
        checkout left half-written, and nothing else.
        """
        _git_checked(self.workdir, f"cannot restore {self.workdir} to tree {target[:12]}",
                     "read-tree", "--reset", "-u", target, on_spawn=on_spawn)

    def point_head(self, state: HeadState, message: str,
                   on_spawn: Spawned | None = None) -> None:
        """Point HEAD at a branch (``state.ref``) or detach it at ``state.sha``.

        Through git, with ``message`` in the reflog: the reflog is the last
        record bisectkit can recover from.
        """
        if state.ref is not None:
            args = ["symbolic-ref", "-m", message, "HEAD", state.ref]
        else:
            args = ["update-ref", "--no-deref", "-m", message, "HEAD", state.sha]
        _git_checked(self.workdir, f"cannot move HEAD of {self.workdir}", *args,
                     on_spawn=on_spawn)

    def create_ref(self, name: str, sha: str, message: str) -> None:
        """Create ref ``name`` at ``sha`` (refuses to replace an existing one)."""
        _git_checked(self.workdir, f"cannot create {name} in {self.workdir}",
                     "update-ref", "-m", message, name, sha, "0" * 40)

    def ref_exists(self, name: str) -> bool:
        return name in self._repo.references

    def head_reflog(self) -> list[ReflogEntry]:
        """HEAD's reflog, newest first (empty when there is none)."""
        try:
            ref = self._repo.references["HEAD"]
            return [ReflogEntry(str(e.oid_old), str(e.oid_new), e.message or "")
                    for e in ref.log()]
        except (KeyError, pygit2.GitError, OSError):
            return []

    def unreachable(self, shas: Iterable[str]) -> list[str]:
        """The commits among ``shas`` that no branch, tag or remote-tracking ref contains."""
        wanted = [s for s in dict.fromkeys(shas) if self.has_commit(s)]
        if not wanted:
            return []
        walker = self._repo.walk(None, SortMode.NONE)
        for s in wanted:
            walker.push(s)
        for ref in self._repo.references.iterator():
            if not ref.name.startswith(("refs/heads/", "refs/tags/", "refs/remotes/",
                                        "refs/bisectkit/")):
                continue
            with contextlib.suppress(pygit2.GitError, ValueError, KeyError):
                walker.hide(ref.peel(pygit2.Commit).id)
        found = {str(c.id) for c in walker}
        return [s for s in wanted if s in found]

    def blob_at(self, tree: str, path: str) -> str | None:
        """Id of what ``tree`` holds at ``path`` (``None`` if nothing)."""
        found = _entry(self._repo.get(tree), path)
        return None if found is None else str(found[0])

    def hash_on_disk(self, path: str) -> str | None:
        """Blob id of the file (or link) at ``path`` in the work tree; ``None`` if absent."""
        full = self.workdir / path
        try:
            if full.is_symlink():
                return str(pygit2.hash(os.readlink(full).encode()))
            if full.is_file():
                return str(pygit2.hashfile(str(full)))
        except OSError:
            return None
        return None

    @property
    def index_lock(self) -> Path:
        """git's lock on the index; present while a git command rewrites it."""
        return self.git_dir / "index.lock"

    def _head_tree(self) -> pygit2.Tree:
        if self._repo.head_is_unborn:
            return self._empty_tree()
        return self._repo.head.peel(pygit2.Commit).tree

    def has_commit(self, sha: str) -> bool:
        obj = self._repo.get(sha)
        return obj is not None and obj.type == pygit2.enums.ObjectType.COMMIT

    def gitlink_at(self, commit: str, path: str) -> str | None:
        """The submodule commit that superproject ``commit`` pins at ``path``, if any."""
        tree = self._commit(commit).tree
        try:
            entry = tree[path]
        except KeyError:
            return None
        return str(entry.id) if entry.filemode == GITLINK_MODE else None

    def fetch_commit(self, sha: str) -> bool:
        """Fetch ``sha`` from this repository's remotes; True once it is here.

        Uses the git CLI so that the user's credentials, protocols and
        ``insteadOf`` rules apply exactly as for ``git submodule update``.
        Asking for the sha first is cheap; servers that refuse unadvertised
        objects get a full fetch of the remote instead.
        """
        for remote in [r.name for r in self._repo.remotes]:
            for args in (["fetch", "--quiet", remote, sha], ["fetch", "--quiet", remote]):
                _git(self.workdir, *args)
                if self.has_commit(sha):
                    return True
        return False

    def remote_branches(self) -> dict[str, str]:
        """Remote-tracking branches, ``origin/main`` -> sha.

        Symbolic ones (``origin/HEAD``) are left out: they only alias another
        branch. Refs that name no commit are skipped.
        """
        found: dict[str, str] = {}
        for ref in self._repo.references.iterator():
            if (not ref.name.startswith("refs/remotes/")
                    or ref.type == pygit2.enums.ReferenceType.SYMBOLIC):
                continue
            with contextlib.suppress(pygit2.GitError, ValueError, KeyError):
                found[ref.name.removeprefix("refs/remotes/")] = str(ref.peel(pygit2.Commit).id)
        return found

    def remote_urls(self) -> dict[str, str]:
        """Each configured remote's fetch URL, by remote name."""
        return {r.name: r.url for r in self._repo.remotes if r.name and r.url}

    def submodule_urls(self, path: str) -> list[str]:
        """Where the superproject fetches submodule ``path`` from: its config, then .gitmodules."""
        sub = self._repo.submodules.get(path)
        if sub is None:
            return []
        urls = [self.config_get(f"submodule.{sub.name}.url"), sub.url]
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
        return list(self._repo.config.get_multivar(key))

    def config_get(self, key: str) -> str | None:
        try:
            return self._repo.config[key]
        except KeyError:
            return None


def _file_directory_clash(onto: pygit2.Tree, path: str, touched: set[str]) -> bool:
    """Does ``path`` turn a file into a directory or back (in the patch or the candidate)?

    Path-wise merging cannot express those; the full merge handles (or
    reports) them.
    """
    have = _entry(onto, path)
    if have is not None and have[1] == pygit2.enums.FileMode.TREE:
        return True
    parts = path.split("/")
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        if prefix in touched:
            return True
        entry = _entry(onto, prefix)
        if entry is not None and entry[1] != pygit2.enums.FileMode.TREE:
            return True
    return False


def _entry(tree: pygit2.Tree, path: str) -> tuple[pygit2.Oid, int] | None:
    try:
        e = tree[path]
    except KeyError:
        return None
    return e.id, e.filemode


def _entry_id(tree: pygit2.Tree | None, path: str) -> str | None:
    if tree is None:
        return None
    path = path.strip("/")
    if not path or path == ".":
        return str(tree.id)
    try:
        return str(tree[path].id)
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
    if norm not in superproject.gitlinks():
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
        if rel not in parent.gitlinks():
            return repo
        repo = parent


#: Variables that would point git at another repository than ``cwd``'s.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                      "GIT_COMMON_DIR", "GIT_PREFIX")


def _git(cwd: Path, *args: str, on_spawn: Spawned | None = None
         ) -> subprocess.CompletedProcess[str]:
    """Run the git CLI in ``cwd`` (for what it does better than libgit2: fetch, read-tree).

    ``on_spawn`` gets git's pid as soon as it runs, so that the journal can
    name a git that outlives bisectkit.
    """
    env = _git_env()
    # Its own session: a terminal Ctrl-C reaches bisectkit (which decides when
    # to stop), never a git halfway through writing the work tree or index.
    with subprocess.Popen(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        if on_spawn is not None:
            on_spawn(proc.pid)
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}


def _git_bytes(cwd: Path, what: str, *args: str) -> bytes:
    """A read-only git command's stdout as bytes (so paths that are not UTF-8 survive).

    ``--no-optional-locks``: reading must not rewrite the index (``git status``
    refreshes its stat data otherwise) while bisectkit owns the work tree.
    """
    proc = subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd, env=_git_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if proc.returncode != 0:
        detail = " ".join(os.fsdecode(proc.stderr).split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}")
    return proc.stdout


def _git_checked(cwd: Path, what: str, *args: str, on_spawn: Spawned | None = None,
                 hint: str = "") -> subprocess.CompletedProcess[str]:
    """:func:`_git` that raises :class:`GitFailure` (``what``, git's words on one line)."""
    proc = _git(cwd, *args, on_spawn=on_spawn)
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}{hint}")
    return proc
