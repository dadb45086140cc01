"""``start`` with fewer than both ends, as git allows: the session waits for them.

``git bisect-patched start [--submodule PATH | --integrate] [BAD]``, then
``bad [REV]`` and ``good REV`` (``new``/``old``, in the session's terms). Until
the new end and an old one are known nothing is checked out and nothing moves;
the ends given are kept in the git dir (:class:`~bisectkit.store.waitstate.Waiting`).
The mark that completes them starts the session exactly as ``start BAD GOOD``
would; if that start is refused (one line, exit 2) the session keeps waiting,
as it was before that mark, so the user can give another revision.

``bad``/``good`` with no revision while waiting mean the commit the user is on:
the superproject's HEAD with ``--integrate``; with ``--submodule``, the upstream
commit the pin sits on (the merge-base of the submodule's HEAD with its
upstream: the patched HEAD itself is no candidate), said in a note.
"""

from __future__ import annotations

import dataclasses
import shlex
from argparse import Namespace
from collections.abc import Sequence

from bisectkit.cli import requests
from bisectkit.commands import manual
from bisectkit.commands.context import Context
from bisectkit.commands.starting import new_session
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.model import GIT_PROG, IntegrateRequest, StartRequest, SubmoduleRequest, Verdict
from bisectkit.patches.upstream import resolve_upstream
from bisectkit.pipeline.lifecycle import Run
from bisectkit.pipeline.replaylog import ReplayLog
from bisectkit.safety import journal as journal_mod
from bisectkit.safety import signals
from bisectkit.store.session import Session
from bisectkit.store.waitstate import Waiting, WaitingRequest

#: Stands for an end not given yet while the request is validated (no argv word is NUL).
UNKNOWN = "\0unknown"


def lacks_ends(args: Namespace) -> bool:
    """Does a parsed ``start`` (or a log's start line) leave an end for later?"""
    return not (args.advance or args.stack) and not (args.bad and args.good)


def with_unknown_ends(args: Namespace) -> Namespace:
    """``args`` with :data:`UNKNOWN` for the missing ends, so that the request validates."""
    return Namespace(**{**vars(args), "bad": args.bad or UNKNOWN,
                        "good": args.good or [UNKNOWN]})


def cmd_start(ctx: Context, request: StartRequest) -> int:
    """``start`` without both ends: check what can be checked, then wait (nothing moves)."""
    sp, store = ctx.open()
    assert isinstance(request, SubmoduleRequest | IntegrateRequest)
    template = dataclasses.replace(request, bad="", good=())
    _repo(sp, template)  # a submodule that is none is refused now, not at the last mark
    waiting = Waiting(template)
    if request.bad != UNKNOWN:
        waiting = _with_marks(ctx, sp, waiting, "bad", [request.bad])
    with ctx.run(sp) as run:
        run.require_idle()
        store.save_waiting(waiting)
    _say_status(ctx, waiting)
    return 0


def cmd_mark(ctx: Context, word: str, revs: Sequence[str]) -> int:
    """``good``/``bad``/``old``/``new``: an end while waiting, else a mark of the session."""
    sp, store = ctx.open()
    if store.waiting_path.exists() and not store.exists():
        with ctx.run(sp) as run:
            # (not completed by another command meanwhile; a session, if a kill left both,
            # wins: it is the newer)
            waiting = store.pending()
            if waiting is not None:
                return _mark_waiting(ctx, run, waiting, word, revs)
    return manual.cmd_mark(ctx, word, revs)


def _mark_waiting(ctx: Context, run: Run, waiting: Waiting, word: str,
                  revs: Sequence[str]) -> int:
    side = waiting.template.terms.mark(word)
    if side == "skip":
        raise BadInput(f"nothing to skip: the session has not started ({waiting.status()}); "
                       f"give {waiting.missing()}")
    after = _with_marks(ctx, run.superproject, waiting, side, revs)
    if not after.complete:
        if after != waiting:
            run.store.save_waiting(after)
        _say_status(ctx, after)
        return 0
    session = _validated(run.superproject, waiting, after)
    _drop_unsaved_start(run)
    try:  # (the session, once saved, replaces the waiting one: Run.begin)
        return manual.start_session(ctx, run, session)
    except BadInput as exc:
        # The first checkout was refused and the session ended itself (nothing
        # moved): wait again, as before this mark, for the same command again.
        run.store.save_waiting(waiting)
        raise BadInput(f"{exc}; the session still waits ({waiting.status()})") from exc


def _drop_unsaved_start(run: Run) -> None:
    """Remove the journal a completing mark left when it was stopped before its session was
    saved: it holds the start record only (every move comes after the save), so nothing
    is to undo. A journal with moves is left to ``reset``."""
    if not run.journal.path.exists():
        return
    state = journal_mod.load(run.journal.path)
    if state is None or state.moves or state.backups:
        raise BadInput(f"an interrupted bisection left changes to undo ({run.journal.path});"
                       f" run '{GIT_PROG} reset' first")
    run.journal.delete()


def _validated(sp: Repo, before: Waiting, after: Waiting) -> Session:
    """The session ``start BAD GOOD...`` would make; refused: still waiting as ``before``."""
    try:
        return new_session(sp, after.request)
    except BadInput as exc:
        raise BadInput(f"{exc}; the session still waits ({before.status()})") from exc


def _with_marks(ctx: Context, sp: Repo, waiting: Waiting, side: Verdict,
                revs: Sequence[str]) -> Waiting:
    """``waiting`` with ``revs`` as ends of ``side``; agreeing ones noted and not repeated."""
    terms = waiting.template.terms
    resolved = _resolved(ctx, sp, waiting.template, revs)
    if side == "bad" and len(resolved) > 1:
        raise BadInput(f"the {terms.new} end is one revision; give one at a time")
    new: list[str] = []
    for rev, sha in resolved:
        known = "bad" if sha == waiting.bad else "good" if sha in waiting.good else None
        if known is None:
            new.append(sha)
        elif known == side:
            ctx.console.line(f"note: {manual.shown(rev, sha)} is the {terms.word(side)} end "
                             "already; nothing to record", style="yellow")
        else:
            raise BadInput(f"{manual.shown(rev, sha)} is the {terms.word(known)} end; it "
                           f"cannot be {terms.word(side)} too")
    if side == "bad" and new and waiting.bad is not None:
        ctx.console.line(f"note: the {terms.new} end was {waiting.bad[:12]}; it is "
                         f"{new[0][:12]} now", style="yellow")
    return waiting.marked(side, new)


def _resolved(ctx: Context, sp: Repo, template: WaitingRequest,
              revs: Sequence[str]) -> list[tuple[str, str]]:
    """(as given, full sha) of each revision; none given: the commit the user is on."""
    repo = _repo(sp, template)
    if revs:
        return [(rev, repo.resolve(rev)) for rev in revs]
    if isinstance(template, IntegrateRequest):
        sha, what = sp.resolve("HEAD"), "the superproject's HEAD"
    else:
        path, sub = open_submodule(sp, template.submodule)
        up = resolve_upstream(sp, path, sub, template.upstream)
        base = sub.merge_base(sub.resolve("HEAD"), up.sha)
        if base is None:
            raise BadInput(f"the HEAD of {path} shares no history with {up.ref}: name the "
                           "revision")
        sha, what = base, (f"the upstream commit the pin sits on, the merge-base of {path}'s "
                           f"HEAD and {up.ref}")
    ctx.console.line(f"taking {sha[:12]} ({repo.commit_info(sha).subject}): {what}",
                     style="dim")
    return [(sha[:12], sha)]


def _repo(sp: Repo, template: WaitingRequest) -> Repo:
    """Where the ends are commits: the submodule, or the superproject with ``--integrate``."""
    if isinstance(template, IntegrateRequest):
        return sp
    return open_submodule(sp, template.submodule)[1]


def cmd_status(ctx: Context) -> int:
    """``status``: where a waiting session stands, like git's ``status: waiting ...``."""
    sp, store = ctx.open()
    waiting = store.pending()
    if waiting is None:
        return manual.cmd_status(ctx)
    _say_status(ctx, waiting)
    ctx.console.line(f"  started with: {GIT_PROG} {shlex.join(_start_words(waiting))}")
    repo = _repo(sp, waiting.template)
    terms = waiting.template.terms
    for sha in ([waiting.bad] if waiting.bad else []) + waiting.good:
        side = "bad" if sha == waiting.bad else "good"
        ctx.console.line(f"  {terms.word(side)}: [{sha}] {repo.commit_info(sha).subject}")
    return 0


def _say_status(ctx: Context, waiting: Waiting) -> None:
    ctx.console.line(f"status: {waiting.status()}")
    if not waiting.complete:
        ctx.console.line(f"give {waiting.missing()}: the first candidate is checked out then",
                         style="dim")


def cmd_log(ctx: Context) -> int:
    """``log``: a log of a waiting session, in ``git bisect log``'s shape; ``replay`` takes it."""
    sp, store = ctx.open()
    waiting = store.pending()
    if waiting is None:
        return manual.cmd_log(ctx)
    for line in log_lines(_repo(sp, waiting.template), waiting):
        ctx.console.line(line)
    return 0


def log_lines(repo: Repo, waiting: Waiting) -> list[str]:
    """The start line, then a ``# status`` comment before each end given, as git writes."""
    terms = waiting.template.terms
    words = {"good": "good", "bad": "bad"} if terms.is_default else {"good": "old", "bad": "new"}
    lines = [f"{GIT_PROG} {shlex.join(_start_words(waiting))}"]
    state = Waiting(waiting.template)
    for side, sha in waiting.marks:
        lines += [f"# status: {state.status()}",
                  f"# {terms.word(side)}: [{sha}] {repo.commit_info(sha).subject}",
                  f"{GIT_PROG} {words[side]} {sha}"]
        state = state.marked(side, [sha])
    return [*lines, f"# status: {state.status()}"]


def _start_words(waiting: Waiting) -> list[str]:
    # The template's ends are empty: start_argv words them as "", which are dropped.
    return [w for w in requests.start_argv(waiting.template) if w]


def cmd_replay(ctx: Context, log: ReplayLog, request: StartRequest) -> int:
    """``replay`` of a log whose start line lacks an end: its first marks give the ends."""
    sp, store = ctx.open()
    assert isinstance(request, SubmoduleRequest | IntegrateRequest)
    waiting = Waiting(dataclasses.replace(request, bad="", good=()))
    if request.bad != UNKNOWN:
        waiting = _with_marks(ctx, sp, waiting, "bad", [request.bad])
    marks = list(log.marks)
    while marks and not waiting.complete:
        word, *revs = marks.pop(0)
        side = waiting.template.terms.mark(word)
        if side == "skip":
            raise BadInput(f"cannot replay '{shlex.join([word, *revs])}': nothing to skip "
                           f"before the session has both ends")
        waiting = _with_marks(ctx, sp, waiting, side, revs)
    if waiting.complete:
        return manual.cmd_replay(ctx, dataclasses.replace(log, marks=marks), waiting.request)
    with ctx.run(sp) as run:
        if run.has_session():
            signals.run_shielded(run.end)
        store.save_waiting(waiting)
    _say_status(ctx, waiting)
    return 0
