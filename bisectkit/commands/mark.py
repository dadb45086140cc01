"""``git bisect-patched good|bad|skip|old|new [REV...]``: mark the candidate under test (or
each REV) in the session; while the session waits for its ends, give an end instead.

A session that has started records the verdicts, then checks out the next candidate
(or shows the answer). One waiting for its ends records each REV as an end (``skip``
is refused: nothing is under test); the mark that completes them starts the session as
``start BAD GOOD`` would, and if that start is refused it keeps waiting, as it was
before that mark (:mod:`bisectkit.commands.waiting`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pluggy

from bisectkit.cli.options import add_force_ignored
from bisectkit.commands import answer, waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.registry import MARKS
from bisectkit.commands.starting import new_session, start_session
from bisectkit.commands.state import Idle, Started, WaitingForEnds, session_state
from bisectkit.engine import Next
from bisectkit.errors import BadInput, BisectkitError
from bisectkit.git.repo import Repo
from bisectkit.model import GIT_PROG, VERDICTS, Terms, short
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.lifecycle import Run
from bisectkit.safety import journal as journal_mod
from bisectkit.store.session import Session, no_session
from bisectkit.store.waitstate import Waiting


def mark(ctx: Context, args: argparse.Namespace) -> int:
    """The mark the command names (``args.command``: its word), in the state the session
    is in, decided under the lock."""
    word, revs = args.command, args.revs
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        match session_state(run.store):
            case Idle():
                raise no_session()
            case WaitingForEnds(waiting=ends):
                return _mark_waiting(ctx, run, ends, word, revs)
            case Started():
                return _mark_session(ctx, run, word, revs)


def _in_these_terms(terms: Terms, word: str) -> None:
    """Refuse ``good``/``bad`` in a session named with other words (``--term-new fast``), as
    git does: which side they would mark is a guess. ``old``/``new`` always name a side;
    with ``--find-fix``, ``good``/``bad`` say whether the repro passes."""
    if word in ("good", "bad") and not terms.find_fix and word not in (terms.old, terms.new):
        raise BadInput(f"Invalid command: you're currently in a {terms.new}/{terms.old} "
                       f"bisect; mark with '{GIT_PROG} {terms.new}|{terms.old}' (or new|old)")


# -- a session that has started ---------------------------------------------------

def _mark_session(ctx: Context, run: Run, word: str, revs: Sequence[str]) -> int:
    """Record the verdicts (``revs``, or the candidate under test), then check out the next
    candidate or show the answer."""
    b = run.resume()
    _in_these_terms(b.terms, word)
    if not revs and b.session.current is None and isinstance(b.decide_and_descend(), Next):
        # The last checkout did not happen (refused, or interrupted), or another
        # process moved the tree under test (run stopped): nothing was under test,
        # so there is nothing to mark; check the candidate out now.
        ctx.console.line("no commit was under test (the last checkout did not happen, or "
                         "the tree was moved); checking out the next candidate: test it, "
                         "then mark it", style="yellow")
        return answer.show_if_decided(ctx, b, b.advance())
    before = len(b.session.steps)
    if revs:
        revs = _not_known(ctx, b, word, revs)
        if not revs:
            return 0  # every one already agreed: nothing recorded, nothing moves
    b.mark(word, revs)
    try:
        return answer.show_if_decided(ctx, b, b.advance())
    except BisectkitError as exc:
        # The mark is saved; only the next checkout failed (a local edit or a
        # file in the way). Say so: the same command again checks the candidate
        # out without marking anything twice (nothing is under test).
        what = ", ".join(f"{short(st.commit)} {st.shown}" for st in b.session.steps[before:])
        nxt = b.decide_and_descend() if b.session.current is None else None
        cand = f" {short(nxt.commit)}" if isinstance(nxt, Next) else ""
        raise exc.reworded(f"marked {what} (kept); the next candidate{cand} was not "
                           f"checked out ('{GIT_PROG} {word}' with no revision checks it "
                           f"out, marking nothing twice): {exc}") from exc


def _not_known(ctx: Context, b: Bisection, word: str, revs: Sequence[str]) -> list[str]:
    """``revs`` less those already on the side ``word`` marks (an end, or marked so before),
    with a note for each: marking again what is known is no error and is not recorded twice.
    A mark that disagrees is left to :meth:`Bisection.mark` to refuse."""
    side, s = b.terms.mark(word), b.session
    known = s.verdict_map()
    kept: list[str] = []
    for rev in revs:
        # A skip is recorded again (a neighbour is tested); a range (skip only) is
        # expanded by the mark itself.
        if side == "skip" or ".." in rev:
            kept.append(rev)
            continue
        sha = b.strategy.resolve(rev)
        if known.get(sha, "good" if sha in s.good else None) != side:
            kept.append(rev)
            continue
        where = "the {} end" if sha == s.bad or sha in s.good else "already marked {}"
        ctx.console.line(f"note: {waiting.shown(rev, sha)} is {where.format(b.term(side))}; "
                         "nothing to record", style="yellow")
    return kept


# -- a session waiting for its ends ----------------------------------------------

def _mark_waiting(ctx: Context, run: Run, ends: Waiting, word: str,
                  revs: Sequence[str]) -> int:
    """Record ``revs`` (or the commit the user is on) as ends; once both are known, start
    the session (refused: still waiting as before this mark)."""
    _in_these_terms(ends.template.terms, word)
    side = ends.template.terms.mark(word)
    if side == "skip":
        raise BadInput(f"nothing to skip: the session has not started ({ends.status()}); "
                       f"give {ends.missing()}")
    after = waiting.with_marks(ctx, run.superproject, ends, side, revs)
    if not after.complete:
        if after != ends:
            run.store.save_waiting(after)
        waiting.say_status(ctx, after)
        return 0
    session = _validated(run.superproject, ends, after)
    _drop_unsaved_start(run)
    no_checkout = run.bisect_head.wanted  # (ending a session releases it)
    try:  # (the session, once saved, replaces the waiting one: Run.begin)
        return start_session(ctx, run, session)
    except BadInput as exc:
        # The first checkout was refused and the session ended itself (nothing
        # moved): wait again, as before this mark, for the same command again.
        run.claim_bisect_head(no_checkout)
        run.store.save_waiting(ends)
        raise BadInput(f"{exc}; the session still waits ({ends.status()})") from exc


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


# -- the command line -------------------------------------------------------------

def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="the revisions to mark (default: the candidate under test)")
    add_force_ignored(p)


def _description(word: str) -> str:
    if word == "skip":
        return ("Mark the candidate under test (or each REV) skip: it cannot be tested; a "
                "neighbour is tested instead. A range A..B (or A...B) stands for the "
                "candidates in it; those already marked good or bad keep their verdict.")
    said = f"Mark the candidate under test (or each REV) {word}: {MARKS[word].split(': ', 1)[1]}."
    if word in ("old", "new"):
        said += (f" After 'start --term-{word} WORD', 'WORD [REV...]' is this command, as in "
                 "git; 'good'/'bad' are then refused (unless --find-fix: the repro's outcome).")
    return said


def _examples(word: str) -> tuple[str, ...]:
    return ("skip", "skip v1.2..v1.3 abc123") if word == "skip" else (word,)


#: ``good``, ``bad``, ``skip``, ``old``, ``new``: one command each, the same handler.
COMMANDS = tuple(Command(word, description=_description(word),
                         examples=_examples(word), arguments=_arguments, handler=mark)
                 for word in (*VERDICTS, "old", "new"))
