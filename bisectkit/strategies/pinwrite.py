"""``advance --apply``'s writes, and :func:`settle`, which finishes or undoes an apply that
a kill cut short.

The commits exist before anything moves (objects only). Then, stop signals
held: the repositories are compared with what the advance started from
(:func:`pinning.moved_since`: if anything moved, nothing is written); a record
(``apply.json``) names the writes about to happen; the submodule branches are
created (refused if one appeared meanwhile), the superproject's index made to
pin the new commit, its HEAD (or the branch it is on) moved from the commit it
must still be on; then the submodule is checked out on the new branch, through
the journal like a restore (a kill mid-checkout is finished from it). The
superproject is clean afterwards: a later ``git commit -a`` records the new
pin, never a revert of it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bisectkit.errors import BadInput, GitFailure
from bisectkit.git import cli as gitcli
from bisectkit.git import write as gitwrite
from bisectkit.git.merge import TreeEntry
from bisectkit.git.objects import GITLINK_MODE
from bisectkit.git.repo import Repo
from bisectkit.model import HeadState, short
from bisectkit.safety import gitlocks, journal, signals
from bisectkit.safety.fileio import write_json_atomic
from bisectkit.safety.worktree import Mover
from bisectkit.strategies import pinning
from bisectkit.strategies.pinning import Base, PinMove


@dataclass(frozen=True)
class _Record:
    """``apply.json``: what an apply is about to write."""

    path: str
    #: The superproject's HEAD before and after the apply.
    old: str
    new: str
    #: The pin the index staged before; the new one (the last branch's tip).
    staged: str | None
    tip: str
    #: (name, commit) of each submodule branch it creates; the last is checked out.
    branches: list[tuple[str, str]]
    #: The submodule's HEAD before (None in a record of an older bisectkit).
    sub: HeadState | None
    #: When the writes' lock files were last seen absent (a lock file newer than that,
    #: with no git left running there, was left by a write killed mid-way).
    t: float | None = None

    @property
    def target(self) -> HeadState:
        """Where the submodule's HEAD goes: the last branch, at the new pin."""
        return HeadState(f"refs/heads/{self.branches[-1][0]}", self.tip)

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "old": self.old, "new": self.new, "staged": self.staged,
                "tip": self.tip, "branches": self.branches,
                "sub": self.sub.to_json() if self.sub else None, "t": self.t}

    @classmethod
    def read(cls, record: Path) -> _Record:
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            sub = HeadState.from_json(data["sub"]) if data.get("sub") else None
            t = data.get("t")
            texts = [data[k] for k in ("path", "old", "new", "tip")]
            if not all(isinstance(x, str) and x for x in texts) or \
                    not isinstance(data["staged"], str | None) or \
                    not isinstance(data["branches"], list) or not data["branches"] or \
                    not isinstance(t, int | float | None) or isinstance(t, bool):
                raise TypeError("a value of the wrong type")
            return cls(data["path"], data["old"], data["new"], data["staged"], data["tip"],
                       [(str(n), str(s)) for n, s in data["branches"]], sub,
                       float(t) if t is not None else None)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BadInput(f"{record} (an interrupted advance --apply) cannot be read ({exc}); "
                           "check the superproject's HEAD and index, then delete it") from exc


def write(superproject: Repo, path: str, sub: Repo, moves: list[PinMove], branch: str,
          messages: Sequence[str], record: Path, base: Base,
          mover: Mover) -> tuple[list[PinMove], list[str]]:
    """Create ``branch`` (and ``branch-step-N`` for earlier moves), commit each move in the
    superproject on top of ``base``'s HEAD, move HEAD, stage the last pin and check the
    submodule out on ``branch``: the moves done, and lines about files set aside.

    Refused (:class:`BadInput`, nothing written) when anything moved since ``base``."""
    parent, done = base.head.sha, []
    for move, message in zip(moves, messages, strict=True):
        tree = superproject.merger.edit_tree(
            superproject.tree_of(parent), {path: TreeEntry(move.tip, GITLINK_MODE)})
        parent = gitwrite.commit(superproject.workdir, tree, parent, message)
        done.append(PinMove(move.upstream, move.tip, move.actions, move.crossed, parent))
    branches = [(f"{branch}-step-{n}", m.tip) for n, m in enumerate(moves[:-1], 1)]
    branches.append((branch, moves[-1].tip))
    rec = _Record(path, base.head.sha, parent, base.staged, moves[-1].tip, branches, base.sub)
    locks = _locks(superproject, rec, base.head)
    # Ctrl-C (or a closed terminal) waits until everything is written: the writes below
    # are not one transaction. A SIGKILL between them is settled from ``record``.
    with signals.held():
        why = pinning.moved_since(superproject, path, sub, base)
        if why is not None:
            raise BadInput(f"--apply wrote nothing: {why} while the advance ran; its answer "
                           "stands: run the same command again to apply it (the verdicts are "
                           "cached)")
        t = gitlocks.unjournaled_free([superproject, sub], locks)
        write_json_atomic(record, dataclasses.replace(rec, t=t).to_json())
        _write_refs(superproject, rec, base.head, f"bisectkit advance: {path} to "
                    f"{short(moves[-1].upstream)}", record)
        try:
            lines = _check_out(superproject, rec, mover, None)
        except GitFailure as exc:  # the record and the journal stay: settle finishes it
            raise GitFailure(f"--apply committed {short(rec.new)} pinning {path} at "
                             f"{short(rec.tip)} (branch {branch}), but cannot check the "
                             f"submodule out: {exc}") from exc
        record.unlink()
    return done, lines


def _write_refs(superproject: Repo, rec: _Record, head: HeadState, note: str,
                record: Path) -> None:
    """The branches, the staged pin, HEAD; all undone if one of them was taken meanwhile."""
    sub = superproject.workdir / rec.path
    try:
        for name, tip in rec.branches:
            gitwrite.create_branch(sub, name, tip, note)
        # The index before HEAD: cut in between, the new pin is left staged on the old
        # HEAD (the move asked for). The other order left HEAD advanced with the old
        # pin staged: a revert of the advance that the next 'git commit' would make.
        gitwrite.stage_gitlink(superproject.workdir, rec.path, rec.tip)
        gitwrite.move_head(superproject.workdir, head.ref, rec.new, rec.old, note)
    except BadInput:  # a branch or HEAD moved by someone else meanwhile
        _undo(superproject, rec)
        record.unlink()
        raise


def _locks(superproject: Repo, rec: _Record, head: HeadState) -> list[Path]:
    """The lock files the apply's ref and index writes take (see :mod:`bisectkit.safety.gitlocks`):
    the superproject's index and HEAD (or its branch), the submodule's new branches."""
    sub = Repo(superproject.workdir / rec.path)
    return [*gitlocks.ref_locks(superproject, [head.ref] if head.ref else [], index=True),
            *gitlocks.ref_locks(sub, [f"refs/heads/{n}" for n, _ in rec.branches])]


def _check_out(superproject: Repo, rec: _Record, mover: Mover,
               state: journal.JournalState | None) -> list[str]:
    """Put the submodule on the new branch (HEAD, index, files) as a journaled restore whose
    origin is that branch: a kill leaves a journal this finishes from (``state``)."""
    sub = Repo(superproject.workdir / rec.path)
    if state is None:
        mover.journal.begin_session(str(superproject.workdir), {
            rec.path: journal.Origin(rec.target, len(sub.refs.head_reflog()))})
        pending = None
    else:
        mover.journal.resume(state)
        pending = state.pending(rec.path)
    mover.reconcile(rec.path, sub, rec.target, pending)
    lines = mover.put_back(superproject.workdir, mover.set_aside)
    mover.journal.delete()
    return lines


def settle(superproject: Repo, record: Path, mover: Mover) -> list[str]:
    """Finish (HEAD already moved: stage the new pin, check the submodule out on the new
    branch) or undo (HEAD not moved: the pin staged before, the new branches deleted) an
    apply a kill cut short; what was done. Idempotent: a kill during it is settled by the
    next command."""
    if not record.exists():
        return []
    rec = _Record.read(record)
    notes: list[str] = []
    # The apply's gits are in no journal: a lock file one of them left when it was killed
    # is told by its time (after the record's) and by no git running there any more.
    gitlocks.clear_unjournaled([superproject, Repo(superproject.workdir / rec.path)],
                               _locks(superproject, rec, superproject.worktree.head_state()),
                               rec.t, notes.append)
    head = superproject.worktree.head_state().sha
    if head == rec.new:
        if gitwrite.staged_gitlink(superproject.workdir, rec.path) != rec.tip:
            gitwrite.stage_gitlink(superproject.workdir, rec.path, rec.tip)
        lines = [f"finished an interrupted advance --apply: the index pins {rec.path} at "
                 f"{short(rec.tip)}", *_finish_checkout(superproject, rec, mover)]
    elif head == rec.old:
        gone = _undo(superproject, rec)
        lines = ["undid an interrupted advance --apply: the superproject had not moved"
                 + (f"; removed branch {', '.join(gone)} in {rec.path}" if gone else "")]
    elif _contains(superproject, head, rec.new):
        lines = [f"an interrupted advance --apply had finished: its commit {short(rec.new)} is "
                 "in the superproject's history", *_finish_checkout(superproject, rec, mover)]
    else:
        # HEAD moved away from ``old`` by the user's own hand, the apply not done: nothing is
        # finished or undone (a commit of the user's may pin a new branch), but the branches
        # it made are named, or they would be found later only as "branch exists".
        sub = superproject.workdir / rec.path
        kept = [n for n, sha in rec.branches if gitwrite.branch_sha(sub, n) == sha]
        lines = ["an interrupted advance --apply left a record, but the superproject's HEAD "
                 "has moved since (not by the apply): nothing was finished or undone"
                 + (f"; it left branch {', '.join(kept)} in {rec.path} (delete them if no "
                    "commit pins them)" if kept else "")]
    record.unlink()
    return [*notes, *lines]


def _finish_checkout(superproject: Repo, rec: _Record, mover: Mover) -> list[str]:
    """Check the submodule out on the new branch if the apply had not, and nobody moved it
    since (a journal of the checkout left by a kill: finish it)."""
    branch = rec.branches[-1][0]
    state = journal.load(mover.journal.path)
    if state is not None and state.repos.keys() == {rec.path} and \
            state.repos[rec.path].head == rec.target:
        return [*_check_out(superproject, rec, mover, state),
                f"checked out {rec.path} on branch {branch}"]
    hint = f"'{gitcli.shown('-C', rec.path, 'checkout', branch)}' puts the new pin on disk"
    if mover.journal.path.exists():
        return [f"{rec.path} was not checked out on {branch}: an interrupted bisection's "
                f"journal is in the way ('git bisect-patched reset' first); then {hint}"]
    now = Repo(superproject.workdir / rec.path).worktree.head_state()
    if now == rec.target:
        return []
    if rec.sub is None or now != rec.sub or \
            gitwrite.staged_gitlink(superproject.workdir, rec.path) != rec.tip:
        return [f"left {rec.path} as it is (it moved since, or the index pins another "
                f"commit): {hint}"]
    return [*_check_out(superproject, rec, mover, None),
            f"checked out {rec.path} on branch {branch}"]


def _contains(superproject: Repo, head: str, commit: object) -> bool:
    """Whether ``commit`` is in ``head``'s history (False when the record names no commit
    of this repository)."""
    found = superproject.try_resolve(commit) if isinstance(commit, str) and commit else None
    return found is not None and superproject.is_ancestor(found, head)


def _undo(superproject: Repo, rec: _Record) -> list[str]:
    """Put back the pin the index staged and delete the new branches; those deleted."""
    if rec.staged is not None and \
            gitwrite.staged_gitlink(superproject.workdir, rec.path) != rec.staged:
        gitwrite.stage_gitlink(superproject.workdir, rec.path, rec.staged)
    sub = superproject.workdir / rec.path
    return [n for n, sha in rec.branches if gitwrite.delete_branch(sub, n, sha)]
