"""Moving the user's repositories: the only code that changes an index, a work tree or HEAD.

Every change is announced in the journal before it starts and marked done
after it, with stop signals held in between, and runs through the git CLI
(one process the journal names, one reflog line recovery can read). A
repository where another git holds a lock file is never moved, and only a
lock file a killed git of ours left is ever removed (:mod:`bisectkit.gitlocks`).
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

import bisectkit.gitlocks as gitlocks
import bisectkit.signals as signals
import bisectkit.sparse as sparse
from bisectkit.errors import BadInput, GitFailure
from bisectkit.git import Repo
from bisectkit.gitstate import TreeDiff
from bisectkit.journal import Journal
from bisectkit.journalrecords import Move, Side
from bisectkit.model import GIT_PROG, HeadState
from bisectkit.workfiles import freshen_mtimes, obstacles, prune_empty_dirs, recently_written


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
            head = repo.head_state()
            base = repo.head_tree()
            diff = repo.diff_trees(base, target)
            self._clear_way(key, repo, base, diff.added, what=f"{sha[:12]}",
                            force=self.force_ignored)
            shape = sparse.of(repo)
            bits = sparse.bits_before(repo.workdir, shape) if diff.paths else None
            _prefetch(repo, base, target, shape, bits)
            new = HeadState(None, sha)
            n = self.journal.move(key, Side(head, base), Side(new, target),
                                  gitlocks.free_since(repo))
            spawned = self._spawned(n)
            # HEAD first: its tagged reflog line says where HEAD came from and goes to
            # before index and files change, so a reset can tell what a checkout cut
            # short wrote even when the journal is lost (see recovery.from_reflogs).
            repo.point_head(new, self._message(f"checkout {sha}", head), spawned)
            if diff.paths:
                before = recently_written(repo.workdir, diff.modified)
                # Racily-clean index entries (file and index written in the same
                # second) look modified to read-tree until the stat data is refreshed.
                repo.refresh_index(spawned)
                repo.read_tree(base, target, spawned)
                freshen_mtimes(repo.workdir, before)
            self.journal.moved(n)
        # A sparse checkout: git wrote only the paths its patterns cover.
        return sparse.files_written(repo.workdir, shape, diff.paths, bits)

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
            self._refresh(key, repo, pending)
            index_tree = repo.index_tree()
            tree = repo.tree_of(target.sha)
            moved = _refuse_user_changes(key, repo, (index_tree, tree), pending, died, ignore,
                                         self.records_lost)
            if pending is not None and moved is not None:
                self._remove_leftovers(repo, pending, moved.added, died)
            diff = repo.diff_trees(index_tree, tree)
            # Files in the way of a restore are set aside, never refused: a
            # restore must be able to finish (a build may have generated them).
            self._clear_way(key, repo, index_tree, diff.added, what="the restore", force=True)
            shape = sparse.of(repo)
            bits = sparse.bits_before(repo.workdir, shape)
            _prefetch(repo, index_tree, tree, shape, bits)
            n = self.journal.move(key, Side(repo.head_state(), index_tree), Side(target, tree),
                                  gitlocks.free_since(repo))
            spawned = self._spawned(n)
            before = recently_written(repo.workdir, diff.modified)
            repo.reset_tree(tree, spawned)
            freshen_mtimes(repo.workdir, before)
            repo.point_head(target, self._message("restore", None), spawned)
            self.journal.moved(n)
            if pending is not None:
                self.journal.moved(pending.n)
        return sparse.files_written(repo.workdir, shape, diff.paths, bits)

    def _refresh(self, key: str, repo: Repo, pending: Move | None) -> None:
        """Refresh the index's stat data, journaled like every git that writes the index:
        killed holding ``index.lock``, it must leave a lock the next restore knows is its
        own. Its pid goes with the move a kill cut short (whose traces this restore
        undoes: that move must stay the pending one), else with a move that changes
        nothing."""
        if pending is not None:
            repo.refresh_index(self._spawned(pending.n))
            return
        here = Side(repo.head_state(), repo.index_tree())
        n = self.journal.move(key, here, here, gitlocks.free_since(repo))
        repo.refresh_index(self._spawned(n))
        self.journal.moved(n)

    def _remove_leftovers(self, repo: Repo, pending: Move, added: Sequence[str],
                          died: bool) -> None:
        """Files a killed checkout created that no index knows about: not the user's.

        A checkout only ever starts once nothing untracked sits where it will
        write (see :meth:`_clear_way`), so such a file came from that git.
        """
        for path in added:
            if repo.index_has(path):
                continue
            if died or repo.hash_on_disk(path) == repo.blob_at(pending.new.tree, path):
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
    def _spawned(self, n: int) -> Callable[[int], None]:
        return lambda pid: self.journal.git(n, pid)

    def _message(self, what: str, origin: HeadState | None) -> str:
        """Reflog message: tagged with the session id, the origin in the first of them."""
        came = ""
        if origin is not None:
            came = f" from {origin.ref or 'detached'}"
        return f"bisectkit {self.journal.session_id}: {what}{came}"


def _prefetch(repo: Repo, old: str, new: str, shape: sparse.SparseCheckout | None,
              bits: dict[str, bool] | None) -> None:
    """A partial clone: fetch, in one batch and before the move is journaled (an
    unreachable remote leaves nothing half done), the blobs git will write moving
    from tree ``old`` to ``new``: the paths that differ, and of those only the ones a
    sparse checkout writes (its cone; in non-cone mode, those whose skip-worktree bit
    is clear: a path new to the index may be written, so it is fetched)."""
    if not repo.promisor.partial:
        return
    wanted: Callable[[str], bool] | None = None
    if shape is not None and shape.cone:
        wanted = shape.covers
    elif shape is not None:
        skipped = bits or {}
        wanted = lambda path: not skipped.get(path, False)  # noqa: E731
    repo.promisor.ensure(repo.changed_blobs(old, new, wanted))


def _refuse_user_changes(key: str, repo: Repo, trees: tuple[str, str], pending: Move | None,
                         died: bool, ignore: Iterable[str], lost: bool) -> TreeDiff | None:
    """Raise :class:`GitFailure` if index or files hold a change of the user's.

    ``trees``: what the index holds now, and the restore's target. What
    ``pending`` (a move a kill cut short) was writing is not the user's, nor
    is what the target holds already (writing it again loses nothing).
    ``lost``: the journal was lost, so a change left unexplained may still
    be bisectkit's: the line says how to keep it either way. Returns
    ``pending``'s diff (``None`` without one).
    """
    index_tree, target = trees
    explained = {repo.head_tree(), target}
    if pending is not None:
        explained |= {pending.old.tree, pending.new.tree}
    if index_tree not in explained:
        raise GitFailure(_unexplained(key, repo, "has staged changes", str(repo.workdir),
                                      "commit or unstage them", lost))
    moved = repo.diff_trees(pending.old.tree, pending.new.tree) if pending is not None else None
    moving = set(moved.paths) if moved is not None else set()
    # Only a path the interrupted move was writing can be its trace; a
    # dead git may have left one half written (any content), a live one
    # left it exactly on one side of the move.
    edits = [p for p in repo.worktree_changes(ignore=set(ignore))
             if not (pending is not None and p in moving
                     and (died or _from_move(repo, p, pending)))
             and repo.hash_on_disk(p) != repo.blob_at(target, p)]
    if edits:
        more = f" and {len(edits) - 1} more" if len(edits) > 1 else ""
        raise GitFailure(_unexplained(key, repo, "has local changes",
                                      f"{edits[0]}{more} in {repo.workdir}",
                                      "move local edits out of the way", lost))
    return moved


def _unexplained(key: str, repo: Repo, what: str, where: str, fix: str, lost: bool) -> str:
    """One line: a change a restore will not overwrite, and what to do about it."""
    if not lost:
        return f"{_name(key)} {what} ({where}); {fix}, then run '{GIT_PROG} reset' again"
    # Without the journal they may be what a killed checkout wrote: not blamed on the
    # user, and kept either way.
    return (f"{_name(key)} {what} ({where}) that bisectkit cannot account for (its journal "
            f"is lost; they may be yours): keep them with 'git -C {repo.workdir} stash', "
            f"then run '{GIT_PROG} reset' again")


def _from_move(repo: Repo, path: str, move: Move) -> bool:
    """Is ``path`` on disk exactly one side of ``move`` (written, or not yet, by its git)?"""
    have = repo.hash_on_disk(path)
    return have in (repo.blob_at(move.old.tree, path), repo.blob_at(move.new.tree, path))


def _name(key: str) -> str:
    return "superproject" if key == "." else f"submodule {key}"


def _safe(key: str) -> str:
    return "superproject" if key == "." else key.replace("/", "%")
