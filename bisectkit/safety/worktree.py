"""Moving the user's repositories: every checkout and restore of a bisection goes through here.

Two other writers move HEAD, and neither during a step: ``advance --apply``
(:mod:`bisectkit.strategies.pinwrite`, with its own record for a kill) and
``reset <commit>`` (:mod:`bisectkit.commands.reset`: a plain ``git checkout``
once everything is restored).

Every change is announced in the journal before it starts and marked done
after it, with stop signals held in between, and runs through the git CLI
(one process the journal names, one reflog line recovery can read). A
repository where another git holds a lock file is never moved, and only a
lock file a killed git of ours left is ever removed (:mod:`bisectkit.safety.gitlocks`).
Two kinds of move:

- :meth:`Mover.checkout`, a step's checkout: writes exactly the files that
  differ, and refuses (or, with ``--force-ignored``, sets aside) an
  untracked or ignored file sitting where the target tracks one;
- :meth:`Mover.reconcile`, a restore: brings a repository to a commit from
  *whatever* the disk holds (a checkout a kill left half done included),
  telling what a killed checkout wrote from what the user changed by
  content, and refusing to overwrite the latter.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import bisectkit.git.files as gitfiles
import bisectkit.git.shapes as shapes
import bisectkit.safety.gitlocks as gitlocks
import bisectkit.safety.signals as signals
import bisectkit.safety.userchanges as userchanges
from bisectkit.errors import BadInput, GitFailure
from bisectkit.git.cli import Watch
from bisectkit.git.objects import GITLINK_MODE, TREE_MODE
from bisectkit.git.repo import Repo
from bisectkit.git.trees import TreeDiff
from bisectkit.git.workfiles import freshen_mtimes, obstacles, prune_empty_dirs, recently_written
from bisectkit.model import HeadState, short
from bisectkit.safety.journal import Journal
from bisectkit.safety.journalrecords import Move, Side
from bisectkit.safety.userchanges import name as _name


class Mover:
    """Journaled, signal-safe moves of the repositories of one session."""

    def __init__(self, journal: Journal, backups_dir: Path, force_ignored: bool = False,
                 note: Callable[[str], None] | None = None) -> None:
        self.journal = journal
        self.backups_dir = backups_dir
        self.force_ignored = force_ignored
        self._note = note or (lambda text: None)
        #: (journal number, repo, path, stash) of every file this process set aside.
        self.set_aside: list[tuple[int, str, str, str]] = []
        #: The session's journal was lost and rebuilt (from the session file or the
        #: reflogs): a change bisectkit cannot account for may still be its own.
        self.records_lost = False

    # -- a step's checkout ----------------------------------------------------
    def checkout(self, key: str, repo: Repo, sha: str) -> int:
        """Move ``repo`` (``key`` in the journal) to ``sha``, detached; files written."""
        target = repo.tree_of(sha)
        with signals.held():
            head = repo.worktree.head_state()
            base = repo.worktree.head_tree()
            diff = repo.trees.diff_trees(base, target)
            self._clear_way(key, repo, base, diff.added, what=f"{short(sha)}",
                            force=self.force_ignored)
            # Before the move is journaled, a partial clone fetches the blobs git will
            # write (of a sparse checkout, only those it writes): an unreachable remote
            # leaves nothing half done. Nothing to change: no index to read.
            writes = shapes.checkout(repo, index=bool(diff.paths))
            shapes.prefetch(repo, base, target, writes.may_write)
            new = HeadState(None, sha)
            n = self.journal.move(key, Side(head, base), Side(new, target),
                                  gitlocks.free_since(repo))
            watch = self._watch(n)
            # HEAD first: its tagged reflog line says where HEAD came from and goes to
            # before index and files change, so a reset can tell what a checkout cut
            # short wrote even when the journal is lost (see recovery.from_reflogs).
            repo.worktree.point_head(new, self._message(f"checkout {sha}", head), watch)
            if diff.paths:
                before = recently_written(repo.workdir, diff.modified)
                # read-tree refuses a file whose stat data changed but not its bytes (one
                # the build touched; one freshen_mtimes moved last step), as if edited:
                # the stat data it compares are refreshed first, by a git that rewrites
                # the index (150,000 entries in llvm-project) only when one of them
                # changed. Run on every step that writes (not only after a refusal: every
                # run's gits stay the same ones, which the kill tests replay git by git);
                # a kill in it leaves at most an index whose stat data changed.
                checked = _compared(repo, base, diff)
                if checked != []:
                    repo.worktree.refresh_stat(checked, watch)
                _read_tree(repo, base, target, diff.paths, watch)
                freshen_mtimes(repo.workdir, before)
            self.journal.moved(n)
        # A sparse checkout: git wrote only the paths its patterns cover.
        return writes.written(diff.paths)

    # -- restores ----------------------------------------------------------------
    def reconcile(self, key: str, repo: Repo, target: HeadState, pending: Move | None,
                  ignore: Iterable[str] = ()) -> int:
        """Bring ``repo`` to ``target`` (HEAD, index, files) from whatever state it is in.

        ``pending`` is the journaled move a kill may have left half done; its
        traces are undone. A change of the user's (an edit, a staged change)
        is never overwritten: :class:`GitFailure`, nothing touched. Files in
        the way (untracked where ``target`` tracks a file) are set aside.
        Returns the number of files written.
        """
        with signals.held():
            died = gitlocks.settle(repo, pending, self._note)
            ignore = set(ignore)
            # Every file as the index has it (the usual end of a session): nothing of the
            # user's to look for, nothing half written to undo. Submodules are left out
            # of git's look only where they are left out of the check.
            skip = bool(ignore) and set(repo.worktree.gitlinks()) <= ignore
            clean = self._refresh(key, repo, pending, skip_gitlinks=skip)
            index_tree = repo.worktree.index_tree()
            tree = repo.tree_of(target.sha)
            moved = userchanges.refuse(key, repo, (index_tree, tree), pending, died, ignore,
                                       self.records_lost, clean=clean)
            if pending is not None and moved is not None:
                self._remove_leftovers(repo, pending, moved.added, died)
            diff = repo.trees.diff_trees(index_tree, tree)
            # Files in the way of a restore are set aside, never refused: a
            # restore must be able to finish (a build may have generated them).
            self._clear_way(key, repo, index_tree, diff.added, what="the restore", force=True)
            writes = shapes.checkout(repo, index=True)
            shapes.prefetch(repo, index_tree, tree, writes.may_write)
            n = self.journal.move(key, Side(repo.worktree.head_state(), index_tree),
                                  Side(target, tree), gitlocks.free_since(repo))
            watch = self._watch(n)
            before = recently_written(repo.workdir, diff.modified)
            if not clean:
                repo.worktree.reset_tree(tree, watch)
            elif diff.paths:
                # Index and files are exactly index_tree: a step's two-tree move writes the
                # paths that differ, where a reset would compare every file to the index.
                _read_tree(repo, index_tree, tree, diff.paths, watch)
            freshen_mtimes(repo.workdir, before)
            repo.worktree.point_head(target, self._message("restore", None), watch)
            self.journal.moved(n)
            if pending is not None:
                self.journal.moved(pending.n)
        return writes.written(diff.paths)

    def _refresh(self, key: str, repo: Repo, pending: Move | None,
                 skip_gitlinks: bool) -> bool:
        """Refresh the index's stat data (:meth:`WorkTree.refresh_all`: True when every
        file is as the index has it), journaled like every git that writes the index:
        killed holding ``index.lock``, it must leave a lock the next restore knows is its
        own. Its pid goes with the move a kill cut short (whose traces this restore
        undoes: that move must stay the pending one), else with a move that changes
        nothing: from HEAD's tree to HEAD's tree, never the index's (a kill here must not
        make staged changes look like a tree of bisectkit's to the next restore), read
        before any index (git, pinned, leaves a split index whole for libgit2)."""
        if pending is not None:
            return repo.worktree.refresh_all(self._watch(pending.n), skip_gitlinks)
        here = Side(repo.worktree.head_state(), repo.worktree.head_tree())
        n = self.journal.move(key, here, here, gitlocks.free_since(repo))
        clean = repo.worktree.refresh_all(self._watch(n), skip_gitlinks)
        self.journal.moved(n)
        return clean

    def _remove_leftovers(self, repo: Repo, pending: Move, added: Sequence[str],
                          died: bool) -> None:
        """Files a killed checkout created that no index knows about: not the user's.

        A checkout only ever starts once nothing untracked sits where it will
        write (see :meth:`_clear_way`), so such a file came from that git: it
        holds what the git wrote there (or, the git killed, the beginning of
        it). A file holding anything else is somebody's since: left alone.
        """
        for path in added:
            if repo.worktree.index_has(path):
                continue
            new = repo.trees.entry_at(pending.new.tree, path)
            if (gitfiles.trace_of if died else gitfiles.holds)(repo, path, [new]):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(repo.workdir / path)
                prune_empty_dirs(repo.workdir, path)

    # -- files in the way ----------------------------------------------------------
    def _clear_way(self, key: str, repo: Repo, base: str, added: Sequence[str], what: str,
                   force: bool) -> None:
        """Refuse, or set aside, untracked/ignored files at paths about to be written."""
        found = obstacles(repo, base, added)
        if not found:
            return
        if not force:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise BadInput(f"{_name(key)} has an untracked or ignored file at {found[0]}{more}, "
                           f"which {what} tracks: checking it out would overwrite it; move it "
                           "away, or pass --force-ignored to set it aside until the end")
        for path in found:
            self._set_aside(key, repo, path)

    def _set_aside(self, key: str, repo: Repo, path: str) -> None:
        # A folder per session and record: files kept from an earlier session
        # (that could not go back) are never overwritten.
        stash = self.backups_dir / f"{self.journal.session_id}-{self.journal.peek()}" / \
            _safe(key) / path
        if stash.exists() or stash.is_symlink():
            raise GitFailure(f"cannot set {path} aside: {stash} exists")
        n = self.journal.backup(key, path, str(stash))
        stash.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(repo.workdir / path, stash)
        except OSError:
            shutil.move(str(repo.workdir / path), str(stash))  # another file system
        self.journal.backed_up(n)
        self.set_aside.append((n, key, path, str(stash)))
        self._note(f"set aside {_name(key)}: {path} (until the end) in {stash}")

    def put_back(self, root: Path, backups: Sequence[tuple[int, str, str, str]]) -> list[str]:
        """Return set-aside files to their places; lines for those that cannot go back."""
        lines = []
        for n, key, path, stash in backups:
            src = Path(stash)
            if not src.exists() and not src.is_symlink():
                continue
            dest = (root if key == "." else root / key) / path
            if dest.exists() or dest.is_symlink():
                lines.append(f"kept {_name(key)}: {path} at {src} (the restored tree has a "
                             "file there)")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, dest)
            self.journal.put_back(n)
            lines.append(f"put back {_name(key)}: {path}")
        return lines

    # -- helpers ---------------------------------------------------------------------
    def _watch(self, n: int) -> _Watch:
        return _Watch(self.journal, n)

    def _message(self, what: str, origin: HeadState | None) -> str:
        """Reflog message: tagged with the session id, the origin in the first of them."""
        came = ""
        if origin is not None:
            came = f" from {origin.ref or 'detached'}"
        return f"bisectkit {self.journal.session_id}: {what}{came}"


#: Up to how many paths a step's checkout refreshes by name. git matches every index entry
#: against every path named (150,000 entries: about 1 ms a path), and refreshing every
#: entry costs an lstat each (about 0.1 s): past this many, every entry is refreshed.
REFRESH_BY_NAME = 32


def _compared(repo: Repo, base: str, diff: TreeDiff) -> list[str] | None:
    """The paths whose stat data a two-tree read-tree from ``base`` compares with their
    files: those of ``base`` the move changes or removes (an entry the move keeps is kept
    unlooked at; where ``base`` has no entry, only the absence of a file is checked).
    None: too many to name (:data:`REFRESH_BY_NAME`), every entry then."""
    if len(diff.paths) > REFRESH_BY_NAME:
        return None
    # Asked of base itself: diff.added holds a path typechanged (file to link) too, and
    # diff.paths a directory the target has a file at (its files are among the paths).
    return [p for p in diff.paths
            if (entry := repo.trees.entry_at(base, p)) is not None and entry[1] != TREE_MODE]


def _read_tree(repo: Repo, base: str, target: str, paths: Sequence[str],
               watch: Watch) -> None:
    """Move index and files from ``base`` to ``target``. git refuses to overwrite a file it
    calls modified; one whose bytes are exactly the checkout of its index entry (a CRLF
    file under `text eol=lf`, checked out in the second its index was written, stays
    "modified" to git for good) loses nothing: removed, and git writes the target's. Which
    files git calls modified is asked of git: libgit2, whose test for a racily clean entry
    is not git's, calls such a file unchanged when no index write smudged its entry.

    Every entry's stat data are refreshed first (only after a refusal): a file whose
    stat data alone changed (touched by a build, or from another terminal after the
    refresh before read-tree) is then no longer listed, and is never removed; what is
    left is what git compares by content. A directory (a nested submodule) is never
    removed."""
    try:
        repo.worktree.read_tree(base, target, watch)
    except GitFailure:
        moving = set(paths)
        repo.worktree.refresh_stat(None, watch)
        same = [p for p in repo.worktree.stat_changes() if p in moving and
                (e := repo.worktree.index_entry(p)) is not None and e[1] != GITLINK_MODE
                and not (repo.workdir / p).is_dir() and gitfiles.holds(repo, p, [e])]
        if not same:
            raise
        for path in same:
            os.unlink(repo.workdir / path)
        repo.worktree.read_tree(base, target, watch)


def _safe(key: str) -> str:
    return "superproject" if key == "." else key.replace("/", "%")


class _Watch:
    """Journals the gits of move ``n``: start and lock files taken, pid, then exit status
    (:mod:`bisectkit.safety.gitlocks` tells a lock file a killed one left from another's); a git
    failing on somebody else's lock file is tried again for a while (nothing was written)."""

    def __init__(self, journal: Journal, n: int) -> None:
        self.journal = journal
        self.n = n

    def starting(self, since: float, takes: tuple[str, ...]) -> None:
        self.journal.git_start(self.n, since, takes)

    def spawned(self, pid: int, since: float, takes: tuple[str, ...]) -> None:
        self.journal.git(self.n, pid, since, takes)

    def exited(self, pid: int, status: int) -> None:
        self.journal.git_exit(self.n, pid, status)

    def patience(self) -> float:
        return gitlocks.FOREIGN_LOCK_WAIT_S
