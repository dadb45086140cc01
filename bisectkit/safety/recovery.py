"""Undo a session from whatever record survives: the journal, the session file, the reflog.

``reset`` and every restore come here. The journal (:mod:`bisectkit.safety.journal`)
is the first choice: it knows where each repository started and which move
a kill may have cut short. When it is missing, the session file's saved
HEADs are used (a session from an older bisectkit); when that is unreadable
too, the HEAD reflog of each repository, where every move bisectkit makes is
a line tagged ``bisectkit <session id>:``, and the first of them says where
HEAD came from. A checkout moves HEAD before index and files, so the newest
such line also says between which two trees a checkout that a kill cut short
left them (:func:`torn_checkout`): without the journal, what it wrote is
still told from the user's changes.

Commits the user made during the session are never lost: a branch that
moved stays at its new tip, and a commit left on no branch gets a
``refs/bisectkit/kept/<n>`` ref.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import bisectkit.safety.gitlocks as gitlocks
from bisectkit.errors import BadInput, GitFailure
from bisectkit.git.repo import Repo
from bisectkit.git.shapes.shallow import ShallowCut
from bisectkit.model import HeadState, short
from bisectkit.safety.journal import Journal, JournalState, Origin
from bisectkit.safety.journalrecords import Move, Side
from bisectkit.safety.worktree import Mover

SUPERPROJECT = "."
KEPT_PREFIX = "refs/bisectkit/kept/"
_TAG = re.compile(r"^bisectkit ([0-9a-f]+): (\w+)(?:.* from (\S+))?")


def from_session_file(path: Path) -> dict[str, Origin] | None:
    """The HEADs saved in a session file, read leniently (any version that has them)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        orig = data["orig"]
        origins = {str(k): Origin(HeadState(ref=v.get("ref"), sha=str(v["sha"])), -1)
                   for k, v in orig.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return origins or None


def from_reflogs(superproject: Repo, strict: bool = False
                 ) -> tuple[dict[str, Origin], dict[str, set[str]]] | None:
    """Find a session nobody ended in the repositories' HEAD reflogs.

    ``strict`` (nothing else says a session exists): only where HEAD still
    is exactly where bisectkit last put it, so that an old, long finished
    session can never drag HEAD back.
    """
    origins: dict[str, Origin] = {}
    placed: dict[str, set[str]] = {}
    repos = {SUPERPROJECT: superproject}
    for path in sorted(superproject.worktree.gitlinks()):
        if (superproject.workdir / path / ".git").exists():
            try:
                repos[path] = Repo(superproject.workdir / path)
            except BadInput:
                continue
    for key, repo in repos.items():
        found = _open_segment(repo, strict)
        if found is not None:
            origins[key], placed[key] = found
    return (origins, placed) if origins else None


def _open_segment(repo: Repo, strict: bool = False) -> tuple[Origin, set[str]] | None:
    """(where HEAD started, commits bisectkit placed) of the newest unfinished session.

    The reflog's length at the session's start is where its first tagged
    line sits, so commits made during the session can still be told apart.
    """
    entries = repo.refs.head_reflog()  # newest first
    newest = next(((i, m) for i, e in enumerate(entries) if (m := _TAG.match(e.message))),
                  None)
    if newest is None or newest[1].group(2) == "restore":
        return None
    # HEAD may also still be on the line's old side: a HEAD move cut short once git
    # had written its reflog line (it left HEAD.lock).
    if strict and (newest[0] != 0 or repo.worktree.head_state().sha not in (entries[0].new,
                                                                    entries[0].old)):
        return None
    session = newest[1].group(1)
    mine = [(i, e) for i, e in enumerate(entries)
            if (m := _TAG.match(e.message)) and m.group(1) == session]
    first_at, first = mine[-1]
    m = _TAG.match(first.message)
    assert m is not None
    came = m.group(3)
    ref = came if came and came.startswith("refs/") else None
    start_len = len(entries) - first_at - 1
    return Origin(HeadState(ref=ref, sha=first.old), start_len), {e.new for _, e in mine}


def torn_checkout(repo: Repo, session: str | None = None) -> tuple[Side, Side] | None:
    """The two ends of the checkout a kill may have cut short, read from the reflog.

    A checkout moves HEAD first (a tagged reflog line), then index and files:
    when HEAD's newest reflog line is such a checkout (of ``session``, if
    given) and HEAD is on one of its ends, index and files may be anywhere
    between the two trees. None otherwise (the user moved HEAD since, or the
    line's commits are gone).
    """
    entries = repo.refs.head_reflog()
    m = _TAG.match(entries[0].message) if entries else None
    if m is None or m.group(2) != "checkout" or session not in (None, m.group(1)):
        return None
    if repo.worktree.head_state().sha not in (entries[0].old, entries[0].new):
        return None
    try:
        return (Side(HeadState(None, entries[0].old), repo.tree_of(entries[0].old)),
                Side(HeadState(None, entries[0].new), repo.tree_of(entries[0].new)))
    except (BadInput, GitFailure, KeyError, ValueError):
        return None


def open_repo(superproject: Repo, key: str) -> Repo:
    """The repository a journal key names (``"."``: the superproject)."""
    if key == SUPERPROJECT:
        return superproject
    try:
        return Repo(superproject.workdir / key)
    except BadInput as exc:
        raise GitFailure(f"cannot open {key}: {exc}") from exc


def restore(superproject: Repo, mover: Mover, plan: JournalState) -> list[str]:
    """Put every repository the session moved back; lines saying what was done."""
    lines: list[str] = []
    root = superproject.workdir
    # Submodules first: the superproject's restore may move the pins they follow.
    for key in sorted(plan.repos, key=lambda k: (k == SUPERPROJECT, k)):
        pending = plan.pending(key) or _unjournaled(superproject, key, plan, mover)
        if not plan.touched(key) and pending is None:
            continue
        repo = open_repo(superproject, key)
        origin = plan.repos[key]
        # A ref write of an earlier restore, killed, may have left its lock file.
        for w in plan.ref_writes:
            if w.repo == key and not w.done:
                gitlocks.clear_unjournaled([repo], [Path(p) for p in w.locks], w.t,
                                           lines.append)
        target = _target(repo, key, origin.head, lines, mover.journal)
        if plan.knows_user_commits:
            lines += keep_user_commits(repo, key, origin, plan.placed(key), mover.journal)
        before = repo.worktree.head_state()
        ignore = repo.worktree.gitlinks() if key == SUPERPROJECT else {}
        written = mover.reconcile(key, repo, target, pending, ignore=ignore)
        if before != target or written:
            lines.append(f"restored {_name(key)} to {target.describe()}")
        if plan.knows_user_commits:  # one made while the restore waited for a lock file
            lines += keep_user_commits(repo, key, origin, plan.placed(key), mover.journal)
    backups = [(b.n, b.repo, b.path, b.stash) for b in plan.backups if not b.put_back]
    # Files the restore itself set aside sit where the restored tree has a file:
    # they cannot go back, so put_back reports where they are.
    backups += [b for b in mover.set_aside if b[0] not in {x[0] for x in backups}]
    lines += mover.put_back(root, backups)
    return lines


def _unjournaled(superproject: Repo, key: str, plan: JournalState, mover: Mover) -> Move | None:
    """A checkout the reflog shows cut short that the journal does not know (it was lost,
    or cut after its start record): journaled now, as the move the restore undoes."""
    try:
        repo = open_repo(superproject, key)
    except GitFailure:
        return None  # not there: nothing of it to undo
    # A rebuilt journal has an id of its own: any session's line is the one.
    torn = torn_checkout(repo, plan.session_id if plan.source == "session" else None)
    if torn is None or torn[1].head.sha in {m.new.head.sha for m in plan.moves
                                            if m.repo == key}:
        return None
    mover.records_lost = True
    return Move(mover.journal.move(key, *torn), key, *torn)


def _target(repo: Repo, key: str, start: HeadState, lines: list[str],
            journal: Journal) -> HeadState:
    """Where to put HEAD back: the starting branch at its tip now (the user may have
    committed on it meanwhile), or the starting detached commit."""
    if start.ref is None:
        return start
    tip = repo.try_resolve(start.ref)
    if tip is None:
        _create_ref(repo, key, start.ref, start.sha, "bisectkit: recreate the branch the "
                    "bisection started on", journal)
        lines.append(f"{_name(key)}: recreated branch {_short(start.ref)} at {short(start.sha)}")
        return start
    if tip != start.sha:
        lines.append(f"{_name(key)}: {_short(start.ref)} has new commits since the bisection "
                     f"started ({short(start.sha)}..{tip.short}); they stay checked out")
    return HeadState(start.ref, tip)


def keep_user_commits(repo: Repo, key: str, origin: Origin, placed: set[str],
                      journal: Journal) -> list[str]:
    """Give a ref to every commit made during the session that no ref contains."""
    entries = repo.refs.head_reflog()
    if origin.reflog < 0:
        candidates = []  # no count to tell old from new: only where HEAD is now
    else:
        candidates = [e.new for e in entries[:max(0, len(entries) - origin.reflog)]]
    candidates.append(repo.worktree.head_state().sha)
    # What a tagged line put there is bisectkit's, whatever the journal still lists.
    known = placed | {origin.head.sha} | {e.new for e in entries if _TAG.match(e.message)}
    lost = repo.refs.unreachable(c for c in candidates if c not in known)
    tips = [c for c in lost if not any(c != d and _behind(repo, c, d) for d in lost)]
    lines = []
    for sha in tips:
        n = 1
        while repo.refs.ref_exists(f"{KEPT_PREFIX}{n}"):
            n += 1
        name = f"{KEPT_PREFIX}{n}"
        _create_ref(repo, key, name, sha, "bisectkit: keep a commit made during the bisection",
                    journal)
        subject = repo.commit_info(sha).subject
        lines.append(f"{_name(key)}: your commit {short(sha)} ({subject}) is on no branch; "
                     f"kept as {name}")
    return lines


def _create_ref(repo: Repo, key: str, name: str, sha: str, message: str,
                journal: Journal) -> None:
    """Create ref ``name`` through git, its lock files journaled first (with when they were
    seen absent): killed holding one, its git leaves a lock the next restore removes."""
    locks = gitlocks.ref_write_locks(repo, name)
    n = journal.refs(key, [str(p) for p in locks], gitlocks.unjournaled_free([repo], locks))
    repo.refs.create_ref(name, sha, message)
    journal.refs_written(n)


def _name(key: str) -> str:
    return "superproject" if key == SUPERPROJECT else key


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _behind(repo: Repo, commit: str, other: str) -> bool:
    """Is ``commit`` in ``other``'s history? Unknown in a shallow clone counts as no: one
    ref too many is kept, never a commit lost."""
    try:
        return repo.is_ancestor(commit, other)
    except ShallowCut:
        return False
