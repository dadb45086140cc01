"""The one owner of a bisection in this process: lock -> journal -> steps -> restore -> release.

Every command that changes the user's repositories runs inside a
:class:`Run`. Entering it takes the superproject's lock (a second bisectkit
there gets one line naming the holder, exit 2, nothing touched). A new
session writes its journal before anything moves; a continued one first
settles a move a kill may have cut short. :meth:`Run.end` restores every
repository from the journal and ends the session; it is idempotent, and a
kill during it leaves a journal the next ``reset`` finishes from.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType

from bisectkit.errors import BadInput, WriteFailed
from bisectkit.git.repo import Repo
from bisectkit.model import GIT_PROG
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.parts import RunParts
from bisectkit.pipeline.replaylog import log_lines
from bisectkit.plugin.facade import Hooks
from bisectkit.safety import bisectrefs, gitlocks, orphans, recovery, signals
from bisectkit.safety import journal as journal_mod
from bisectkit.safety.bisecthead import BisectHead
from bisectkit.safety.journal import Journal, Origin
from bisectkit.safety.lock import RunLock
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session, SessionStore
from bisectkit.strategies import make_strategy, pinwrite


class Run:
    """Owns the lock, the journal and the restore of one superproject for one command."""

    def __init__(self, superproject: Repo, hooks: Hooks, command: str,
                 force_ignored: bool = False) -> None:
        self.superproject = superproject
        self.hooks = hooks
        self.command = command
        self.store = SessionStore(superproject.git_dir)
        self.lock = RunLock(self.store.lock_path)
        self.journal = Journal(self.store.journal_path)
        self.bisect_head = BisectHead(self.store.bisect_head_path)
        self.force_ignored = force_ignored
        self.bisection: Bisection | None = None
        #: What ``advance --apply`` is about to move (see :func:`pinwrite.settle`).
        self.apply_record = self.store.dir / "apply.json"
        #: The builds and repros this command starts (see :mod:`bisectkit.safety.orphans`).
        self.children = self.store.dir / "children"

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> Run:
        self.lock.acquire(self.command)
        gone = self.lock.took_over
        if gone is not None and gone.pid is not None:
            self._note(f"the previous bisectkit here ({gone.describe()}) had died; "
                       "its lock was released")
        try:
            # Before anything moves: a killed run's build must not write into what the
            # restore or the next checkout puts on disk.
            for line in orphans.stop_leftovers(self.children):
                self._note(line)
            mover = Mover(self.journal, self.store.backups_dir, note=self._note)
            for line in pinwrite.settle(self.superproject, self.apply_record, mover):
                self._note(line)
        except BaseException:
            self.lock.release()
            raise
        orphans.start_tracking(self.children)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None:  # stopped: what its builds left must not write on meanwhile
            self.stop_leftovers()
        orphans.stop_tracking()
        self.lock.release()

    def stop_leftovers(self) -> None:
        """Stop what this command's builds and repros left running (it is stopping without
        an answer): before a restore, so nothing writes into what it puts back."""
        lines: list[str] = []
        signals.run_shielded(lambda: lines.extend(orphans.stop_own()))
        for line in lines:
            self._note(line)

    def require_idle(self) -> None:
        """Refuse to start when a session, or the journal of an interrupted one, exists."""
        if self.store.exists():
            raise BadInput(f"a bisect-patched session is already in progress "
                           f"({self.store.session_path}); finish it or run '{GIT_PROG} reset'")
        waiting = self.store.load_waiting()
        if waiting is not None:
            raise BadInput(f"a bisect-patched session is already started and {waiting.status()}"
                           f"; give {waiting.missing()}, or run '{GIT_PROG} reset'")
        if self.journal.path.exists():
            raise BadInput(f"an interrupted bisection left changes to undo "
                           f"({self.journal.path}); run '{GIT_PROG} reset' first")

    def claim_bisect_head(self, wanted: bool) -> None:
        """At ``start`` (idle): will the session name its candidates by ``BISECT_HEAD``
        (``--no-checkout``) instead of checking them out? A killed start's refs go first."""
        for line in self.bisect_head.claim(wanted, self._repo):
            self._note(line)

    def _repo(self, key: str) -> Repo:
        return recovery.open_repo(self.superproject, key)

    def begin(self, session: Session) -> Bisection:
        """Journal the starting HEADs, then save the session: from here, ``end`` undoes all."""
        origins = {key: Origin(head, len(recovery.open_repo(self.superproject, key)
                                         .refs.head_reflog()))
                   for key, head in session.orig.items()}
        if self.force_ignored:
            session.params.force_ignored = True
        for key in session.orig:  # another git at work there: refused, nothing touched
            gitlocks.refuse_locked(recovery.open_repo(self.superproject, key))
        with signals.held():
            self.journal.begin_session(session.root, origins)
            try:
                self.store.clear_logs()
                self.store.save(session)
            except WriteFailed as exc:
                raise self._unbegin(exc) from exc.cause
            # A session that waited for its ends is replaced only once this one is saved:
            # a kill before leaves it waiting, never neither (the session wins over both).
            self.store.delete_waiting()
        b = self._began(self._bisector(session))
        b.publish_refs(first=True)
        return b

    def _unbegin(self, failed: WriteFailed) -> WriteFailed:
        """The session could not be saved and nothing has moved: take back what
        :meth:`begin` wrote, so that nothing is left to reset (exit 2); if even that
        fails, the journal stays and ``reset`` ends it (exit 4)."""
        try:
            for path in (self.store.session_path, self.store.candidates_path,
                         self.journal.path):
                path.unlink(missing_ok=True)
        except OSError:
            return failed
        return WriteFailed(failed.path, failed.cause, started=False)

    def resume(self) -> Bisection:
        """The session in progress, with any move a kill left half done settled."""
        session = self.store.load()
        # A kill between saving the session and removing the waiting one left both: the
        # session is the newer (see begin).
        self.store.delete_waiting()
        state = journal_mod.load(self.journal.path)
        if state is None:
            raise BadInput(f"the session has no readable journal ({self.journal.path}); run "
                           f"'{GIT_PROG} reset' to restore from what is left")
        self.journal.resume(state)
        b = self._bisector(session)
        mover = b.mover
        assert mover is not None
        # Another git at work in a repository with nothing to settle: refused before
        # anything is touched (a settle meets lock files itself).
        for key in state.repos:
            if state.pending(key) is None:
                gitlocks.refuse_locked(recovery.open_repo(self.superproject, key))
        for key in state.repos:
            pending = state.pending(key)
            if pending is not None:
                repo = recovery.open_repo(self.superproject, key)
                ignore = repo.worktree.gitlinks() if key == "." else {}
                self._note(f"settling a change the last bisectkit command left unfinished "
                           f"(it failed or was stopped) in {repo.workdir}")
                mover.reconcile(key, repo, pending.old.head, pending, ignore=ignore)
        return self._began(b)

    def end(self) -> list[str]:
        """Restore every repository and end the session; what was done. Idempotent.

        Works from the journal; when it is missing or unreadable, from the
        session file's HEADs, else from bisectkit's lines in the reflogs (a
        journal is rebuilt from those first, so this restore is journaled too).
        """
        lines: list[str] = []
        session, problem = self._load_session()
        state = journal_mod.load(self.journal.path)
        if state is None:
            state = self._rebuild_journal(session, lines)
        elif problem is not None:
            lines.append(f"the session file {self.store.session_path} cannot be read "
                         f"({problem}); restoring from the journal")
        if state is not None:
            self.journal.resume(state)
            mover = Mover(self.journal, self.store.backups_dir, note=self._note)
            mover.records_lost = state.source != "session"
            lines += recovery.restore(self.superproject, mover, state)
            bisectrefs.withdraw(self.superproject, state, self.journal, lines.append)
        if session is not None:
            with contextlib.suppress(Exception):  # a log is a nicety; the restore is not
                log = log_lines(RunParts(session, self.store,
                                         make_strategy(self.superproject, session), self.hooks))
                # A pathspec that is not UTF-8 is kept byte for byte, for replay.
                self.store.last_log_path.write_text("\n".join(log) + "\n", encoding="utf-8",
                                                    errors="surrogateescape")
        lines += self.bisect_head.release(self._repo)
        self.store.delete()
        self.journal.delete()
        _remove_empty_tree(self.store.backups_dir)
        return lines

    def _rebuild_journal(self, session: Session | None,
                         lines: list[str]) -> journal_mod.JournalState | None:
        """A journal for a session whose own is gone, from the best record left; or None."""
        problems = []
        if self.journal.path.exists():
            problems.append(f"the journal {self.journal.path} cannot be read")
        if self.store.exists() and session is None:
            problems.append(f"the session file {self.store.session_path} cannot be read")
        origins: dict[str, Origin] | None = None
        placed: dict[str, set[str]] | None = None
        source = ""
        # Without journal or session file nothing says a session exists: only a
        # reflog whose HEAD is still where bisectkit put it counts.
        segments = recovery.from_reflogs(self.superproject,
                                         strict=not (problems or self.store.exists()))
        if self.store.exists():
            origins = recovery.from_session_file(self.store.session_path)
            source = "session file"
            if origins is not None and segments is not None:
                # Tagged reflog lines tell bisectkit's commits from the user's.
                seg_origins, placed = segments
                origins = {k: Origin(o.head, seg_origins[k].reflog if k in seg_origins else -1)
                           for k, o in origins.items()}
        if origins is None and segments is not None:
            (origins, placed), source = segments, "reflog"
            if not problems:
                problems.append("no session file or journal is left")
        why = "; ".join(problems)
        if origins is None:
            if why:
                lines.append(f"{why}, and no repository shows a bisection to undo")
            return None
        lines.append(f"{why + '; ' if why else ''}restoring from the {source}")
        self.journal.delete()
        self.journal.begin_session(str(self.superproject.workdir), origins, source=source,
                                   placed=placed)
        return journal_mod.load(self.journal.path)

    def has_session(self) -> bool:
        """Is there anything to end (a session file, a journal, or a session waiting for
        its ends)?"""
        return (self.store.exists() or self.journal.path.exists()
                or self.store.waiting_path.exists())

    # -- helpers -------------------------------------------------------------------
    def _load_session(self) -> tuple[Session | None, str | None]:
        """The session, or why its file cannot be read (both None when there is none)."""
        if not self.store.exists():
            return None, None
        try:
            return self.store.load(), None
        except BadInput as exc:
            # Said by reset itself (it is what restores): not "run reset" again.
            return None, str(exc).removesuffix(f"; run '{GIT_PROG} reset'")

    def _bisector(self, session: Session) -> Bisection:
        force = self.force_ignored or session.params.force_ignored
        mover = Mover(self.journal, self.store.backups_dir, force_ignored=force,
                      note=self._note)
        self.bisection = Bisection(self.superproject, self.store, session, self.hooks, mover)
        return self.bisection

    @staticmethod
    def _began(b: Bisection) -> Bisection:
        """``b``, its strategy told that the run begins (settled, before any key is read)."""
        b.strategy.begin_run()
        return b

    def _note(self, text: str) -> None:
        self.hooks.message(text, "note")


def _remove_empty_tree(path: Path) -> None:
    """Remove ``path`` if it holds only empty folders (set-aside files are kept)."""
    if not path.is_dir():
        return
    for sub in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if sub.is_dir():
            with contextlib.suppress(OSError):
                sub.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()
