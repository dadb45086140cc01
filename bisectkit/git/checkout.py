"""One checkout of a repository: its HEAD, index and work tree, and the primitives that move them.

:class:`WorkTree` is ``Repo.worktree``: the three things a ``git worktree`` owns
(HEAD, the index, the files), read together because a status compares all three
and moved together because a checkout writes index and files at once. Every
change goes through the git CLI (:mod:`bisectkit.git.cli`), so that it is one
process the journal can name and one reflog line recovery can read;
:mod:`bisectkit.safety.worktree` journals and sequences them.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileStatus

import bisectkit.git.cli as gitcli
import bisectkit.git.objects as gitobjects
import bisectkit.git.shapes.sparse as sparse
from bisectkit.errors import BadInput, GitFailure
from bisectkit.git.cli import Watch
from bisectkit.git.objects import GITLINK_MODE
from bisectkit.model import HeadState, short

#: The lock files the gits that move a checkout take (read-tree, add --refresh,
#: update-index; HEAD's).
INDEX_LOCK, HEAD_LOCK = "index.lock", "HEAD.lock"


@dataclass(frozen=True)
class LocalChanges:
    """What a work tree holds besides its HEAD commit (:meth:`WorkTree.local_changes`)."""

    #: Tracked paths whose index or work tree differs from HEAD (deleted ones included).
    modified: tuple[str, ...]
    #: Untracked files git does not ignore; a nested repository is one entry ``dir/``.
    untracked: tuple[str, ...]


class WorkTree:
    """Reading and moving the HEAD, index and work tree of one repository (``Repo.worktree``)."""

    def __init__(self, repo: pygit2.Repository, workdir: Path) -> None:
        #: The libgit2 handle (the index is read through it) and the resolved work tree,
        #: where the git CLI runs.
        self._repo = repo
        self.workdir = workdir
        #: Has :meth:`_index` read the index yet? (Every libgit2 call that reads it comes
        #: after one: the first loads the whole file.)
        self._index_loaded = False

    # -- what the work tree holds ------------------------------------------------
    def head_state(self) -> HeadState:
        """Where HEAD is: a branch (and its commit) or a detached commit."""
        if self._repo.head_is_unborn:
            raise BadInput(f"{self.workdir} has no commits")
        head = self._repo.lookup_reference("HEAD")
        sha = str(self._repo.head.target)
        if head.type == pygit2.enums.ReferenceType.SYMBOLIC:
            return HeadState(ref=str(head.target), sha=sha)
        return HeadState(ref=None, sha=sha)

    def dirty_paths(self, ignore: Iterable[str] = ()) -> list[str]:
        """Tracked paths whose work tree or index differs from HEAD (untracked files are fine),
        skip-worktree entries left out; a submodule not in ``ignore`` counts when its
        checkout is not the commit the index pins or when it holds edits.

        ``git status`` finds them (half of libgit2's time on 150,000 files; libgit2 also
        looked into every submodule's files, those of ``ignore`` too), libgit2 confirms
        each one it names: the answer is the one libgit2 gave, except that git's must
        agree, and git's is what its checkouts act on (``read-tree -m -u`` calls a file
        modified, and refuses to overwrite it, exactly when ``git status`` does). Where git
        alone calls a file modified (one racily clean, whose checkout the attributes would
        change: git rechecks it for good) libgit2's "unchanged" holds, as before.
        """
        skip = set(ignore)
        self._index()  # a split or sparse index is refused here, as everywhere
        # The superproject's gitlinks (``ignore``): git reads each submodule's HEAD, not
        # its files. Elsewhere every submodule counts, whatever the config says (as
        # libgit2 did); with -uno git leaves untracked files inside them alone, as here.
        subs = "dirty" if skip else "none"
        out = gitcli.read_bytes(self.workdir, f"cannot read the status of {self.workdir}",
                                "status", "--porcelain=v1", "-z", "--no-renames",
                                "--untracked-files=no", f"--ignore-submodules={subs}")
        found = {p for p in (os.fsdecode(r[3:]) for r in out.split(b"\0") if r)
                 if p not in skip}
        if found:
            # git status leaves skip-worktree files alone in the work tree only; their index
            # entries count against HEAD. bisectkit has always left them out whole.
            skipped = sparse.skip_worktree(self.workdir)
            found = {p for p in found if p not in skipped and self._libgit2_changed(p)}
        return sorted(found)

    def _libgit2_changed(self, path: str) -> bool:
        """Does libgit2 call ``path`` changed too (anything but unchanged or ignored)?"""
        try:
            status = self._repo.status_file(path)
        except (KeyError, ValueError, pygit2.GitError):
            return True  # no answer: git's stands
        return bool(status & ~(FileStatus.CURRENT | FileStatus.IGNORED))

    def worktree_changes(self, ignore: Iterable[str] = ()) -> list[str]:
        """Tracked paths whose work tree differs from the index (edits not staged)."""
        return self._changed(ignore, FileStatus.WT_MODIFIED | FileStatus.WT_DELETED |
                             FileStatus.WT_TYPECHANGE)

    def stat_changes(self) -> list[str]:
        """Tracked paths whose file git calls different from its index entry, as
        ``read-tree -m`` does before it overwrites one: its stat data changed (the index is
        not refreshed first), or, racily clean (file and index of one second), its
        content (``git diff-files``; not the skip-worktree entries)."""
        out = gitcli.read_bytes(self.workdir, f"cannot compare the files of {self.workdir}",
                                "diff-files", "--name-only", "-z")
        return sorted(os.fsdecode(p) for p in out.split(b"\0") if p)

    def _changed(self, ignore: Iterable[str], flags: int) -> list[str]:
        """Tracked paths (not in ``ignore``) whose status has any of ``flags``."""
        skip = set(ignore)
        self._index()  # git itself may have rewritten it
        changed = self._repo.status(untracked_files="no")
        found = [p for p, have in changed.items() if p not in skip and have & flags]
        if found:
            # libgit2 ignores skip-worktree (git status does not): the files a sparse
            # checkout leaves out look deleted. One git process, only when needed.
            skipped = sparse.skip_worktree(self.workdir)
            found = [p for p in found if p not in skipped]
        return sorted(found)

    def _index(self, force: bool = False) -> pygit2.Index:
        """The index, (re)read; a sparse index (which libgit2 cannot read) is one line."""
        try:
            index: pygit2.Index = self._repo.index
            # The first access has libgit2 read the whole file: a forced read right after
            # would parse it again (50 ms at 150,000 entries); a plain one checks that it
            # is still the same file (git replaces the index: a new inode every write).
            index.read(force and self._index_loaded)
            self._index_loaded = True
        except pygit2.GitError as exc:
            if "'link'" in str(exc):  # core.splitIndex: bisectkit's own gits never write one
                raise BadInput(f"{self.workdir} has a split index (core.splitIndex), which "
                               "bisectkit cannot read; make it whole: git -C "
                               f"{shlex.quote(str(self.workdir))} update-index "
                               "--no-split-index") from exc
            if "sdir" not in str(exc):
                raise
            raise BadInput(f"{self.workdir} has a sparse index, which bisectkit cannot read; "
                           f"make it a full one (patterns unchanged): "
                           f"{sparse.sparse_index_fix(self.workdir)}") from exc
        return index

    def local_changes(self, untracked: bool = True) -> LocalChanges:
        """Tracked paths that differ from HEAD and (``untracked``) untracked files git does
        not ignore, like ``git status``; submodules are not looked into (not even their HEAD).
        """
        out = gitcli.read_bytes(self.workdir, f"cannot read the status of {self.workdir}",
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
        index = self._index()  # git itself may have rewritten it (read-tree)
        return {e.path: str(e.id) for e in index if e.mode == GITLINK_MODE}

    def head_tree(self) -> str:
        """Tree id of HEAD (the empty tree when HEAD is unborn)."""
        if self._repo.head_is_unborn:
            return str(gitobjects.empty_tree(self._repo).id)
        return str(self._repo.head.peel(pygit2.Commit).tree.id)

    def index_tree(self) -> str:
        """Tree id of what the index holds now (written to the object database only)."""
        index = self._index(True)
        try:
            # The index of a partial (or sparse) clone may name blobs that are not here.
            with gitobjects.promised_objects():
                return str(index.write_tree(self._repo))
        except pygit2.GitError as exc:  # unmerged entries: someone is mid-merge
            raise GitFailure(f"the index of {self.workdir} has unmerged entries; resolve or "
                             "abort the merge first") from exc

    def index_entry(self, path: str) -> tuple[str, int] | None:
        """(blob id, mode) of what the index holds at ``path`` (``None`` if nothing)."""
        try:
            found = self._index()[path]  # git itself may have rewritten the index
        except KeyError:
            return None
        return str(found.id), found.mode

    def index_has(self, path: str) -> bool:
        """Is ``path`` (a file) in the index as it is on disk now?"""
        return path in self._index()

    # -- moving the work tree (journaled by bisectkit.safety.worktree) -------------------
    def refresh_all(self, watch: Watch | None = None, skip_gitlinks: bool = False) -> bool:
        """Refresh the stat data of every index entry (racily-clean ones would look
        modified); True when git found every file as the index has it (``skip_gitlinks``:
        submodules not looked at): nothing in the work tree differs from the index.

        git names each file that differs (a line ``PATH: needs update``, not quoted)
        and exits 1; only "none" is taken from it: a path holding a newline cannot be
        told from two. Entries marked skip-worktree or assume-unchanged are not looked
        at (as ``git status`` does not). Without ``-q``, git also says when another git
        holds ``index.lock``, so :func:`gitcli.run` waits for it.
        """
        proc = gitcli.run(self.workdir, "update-index",
                          *(("--ignore-submodules",) if skip_gitlinks else ()), "--refresh",
                          watch=watch, takes=(INDEX_LOCK,))
        return proc.returncode == 0 and not proc.stdout and not proc.stderr

    def refresh_stat(self, paths: Sequence[str] | None, watch: Watch | None = None) -> None:
        """Refresh the stat data of the index entries at ``paths`` (None: of every entry),
        taken literally (no wildcard, no ``:`` magic), so that a file whose stat data
        changed but not its bytes does not look modified.

        ``git add --refresh`` rewrites the index (150,000 entries in llvm-project) only
        when an entry's stat data really changed, not for entries merely racily clean
        (file and index written in the same second), which ``update-index --refresh``
        rewrites the whole index for. Its exit status is not judged: where it refreshes
        nothing (a path of ``paths`` no entry has: a deletion staged meanwhile) or skips
        an entry (skip-worktree), read-tree compares the stale stat data, which makes it
        refuse more, never less."""
        spec = ["."] if paths is None else list(paths)
        gitcli.run(self.workdir, "--literal-pathspecs", "add", "--refresh", "--", *spec,
                   watch=watch, takes=(INDEX_LOCK,))

    def read_tree(self, base: str, target: str, watch: Watch | None = None) -> None:
        """Move index and work tree from tree ``base`` to ``target`` (two-tree read-tree).

        git writes exactly the changed paths and refuses to overwrite local
        edits (or a file whose stat data changed since the index was written:
        see :meth:`refresh_stat`), and a refusal writes nothing. The entries
        it writes get fresh stat data (libgit2's checkout was several times
        slower on large trees).
        """
        gitcli.checked(self.workdir, f"cannot check out {short(target)} in {self.workdir}",
                       "read-tree", "-m", "-u", base, target, watch=watch, takes=(INDEX_LOCK,),
                       hint="; move local edits out of the way, then run the command again "
                            "or 'git bisect-patched reset'")

    def reset_tree(self, target: str, watch: Watch | None = None) -> None:
        """Make index and work tree exactly ``target``, whatever they hold now.

        ``read-tree --reset -u`` compares the index (and the files' stat data)
        with ``target``: it rewrites what differs, including files a killed
        checkout left half-written, and nothing else.
        """
        gitcli.checked(self.workdir, f"cannot restore {self.workdir} to tree {short(target)}",
                       "read-tree", "--reset", "-u", target, watch=watch, takes=(INDEX_LOCK,))

    def point_head(self, state: HeadState, message: str, watch: Watch | None = None) -> None:
        """Point HEAD at a branch (``state.ref``) or detach it at ``state.sha``.

        Through git, with ``message`` in the reflog: the reflog is the last
        record bisectkit can recover from.
        """
        if state.ref is not None:
            args = ["symbolic-ref", "-m", message, "HEAD", state.ref]
        else:
            args = ["update-ref", "--no-deref", "-m", message, "HEAD", state.sha]
        gitcli.checked(self.workdir, f"cannot move HEAD of {self.workdir}", *args,
                       watch=watch, takes=(HEAD_LOCK,))
