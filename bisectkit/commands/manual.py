"""The session commands of ``git bisect-patched``: start, mark, status, log, replay, reset,
show-step, and ``bisectkit status``/``plugins``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from bisectkit import safetext
from bisectkit.commands import answer
from bisectkit.commands.context import Context
from bisectkit.commands.starting import new_session
from bisectkit.engine import Next
from bisectkit.errors import BadInput, BisectkitError
from bisectkit.model import GIT_PROG, VERDICTS, StartRequest, Terms
from bisectkit.patches import status as stack_status
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.lifecycle import Run
from bisectkit.pipeline.replaylog import ReplayLog, log_lines
from bisectkit.plugin import manager as plugins
from bisectkit.safety import signals
from bisectkit.store import steplog
from bisectkit.store.session import Session


def cmd_start(ctx: Context, request: StartRequest) -> int:
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        run.require_idle()
        return start_session(ctx, run, new_session(sp, request, ctx.deepener()))


def start_session(ctx: Context, run: Run, session: Session) -> int:
    """Begin a validated ``session``: its header, then the first checkout (``run`` locked)."""
    b = run.begin(session)
    answer.header(ctx, b)
    try:
        decision = b.advance()
    except BadInput:
        # The first checkout was refused (a file in the way): nothing moved,
        # so nothing is left behind either.
        signals.run_shielded(run.end)
        raise
    if isinstance(decision, Next):
        ctx.console.line(f"Build and run the repro, then: {GIT_PROG} "
                         f"{_mark_words(b.terms)}  "
                         f"(or: {GIT_PROG} run [--build CMD] REPRO)", style="dim")
    return answer.finish(ctx, b, decision)


def _mark_words(terms: Terms) -> str:
    """How to mark the commit under test, in the session's words."""
    if terms.is_default:
        return "good|bad|skip"
    passes, fails = terms.word(terms.side("good")), terms.word(terms.side("bad"))
    return (f"good|bad|skip (the repro passes|fails: {passes}|{fails}), or old|new "
            f"({terms.old}|{terms.new})")


def cmd_mark(ctx: Context, word: str, revs: Sequence[str]) -> int:
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        b = run.resume()
        if not revs and b.session.current is None and isinstance(b.decide_and_descend(), Next):
            # The last checkout did not happen (refused, or interrupted), or another
            # process moved the tree under test (run stopped): nothing was under test,
            # so there is nothing to mark; check the candidate out now.
            ctx.console.line("no commit was under test (the last checkout did not happen, or "
                             "the tree was moved); checking out the next candidate: test it, "
                             "then mark it", style="yellow")
            return answer.finish(ctx, b, b.advance())
        before = len(b.session.steps)
        if revs:
            revs = _not_known(ctx, b, word, revs)
            if not revs:
                return 0  # every one already agreed: nothing recorded, nothing moves
        b.mark(word, revs)
        try:
            return answer.finish(ctx, b, b.advance())
        except BisectkitError as exc:
            # The mark is saved; only the next checkout failed (a local edit or a
            # file in the way). Say so: the same command again checks the candidate
            # out without marking anything twice (nothing is under test).
            what = ", ".join(f"{st.commit[:12]} {st.shown}" for st in b.session.steps[before:])
            nxt = b.decide_and_descend() if b.session.current is None else None
            cand = f" {nxt.commit[:12]}" if isinstance(nxt, Next) else ""
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
        ctx.console.line(f"note: {shown(rev, sha)} is {where.format(b.term(side))}; "
                         "nothing to record", style="yellow")
    return kept


def shown(rev: str, sha: str) -> str:
    """A revision as typed, and its sha unless it is one."""
    return sha[:12] if sha.startswith(rev) and len(rev) >= 7 else f"{rev} ({sha[:12]})"


def cmd_status(ctx: Context) -> int:
    sp, store = ctx.open()
    console = ctx.console
    b = ctx.reader(sp, store)
    s = b.session
    answer.header(ctx, b)
    old, new = s.terms.old, s.terms.new
    counts = {v: sum(1 for e in s.verdict_map().values() if e == v) for v in VERDICTS}
    console.line(f"  verdicts: {counts['good']} {old}, {counts['bad']} {new}, "
                 f"{counts['skip']} skip (the {new} end included)")
    decision = b.decide_and_descend()
    if not isinstance(decision, Next):
        return answer.show_result(ctx, b, decision)
    lo, hi = b.search.bounds(s.candidates, s.verdict_map())
    upper = s.candidates[hi][:12] if hi < len(s.candidates) else "the far end (untested)"
    console.line(f"  {decision.remaining} candidates left between "
                 f"{f'the {old} end' if lo < 0 else s.candidates[lo][:12]} and "
                 f"{upper}, roughly {decision.steps_left} steps")
    if s.current:
        console.line(f"  under test: {s.current} {b.strategy.describe(s.current).subject}")
    else:
        console.line(f"  under test: nothing (the checkout of {decision.commit[:12]} did "
                     f"not happen); '{GIT_PROG} good', 'bad' or 'skip' checks it out",
                     style="yellow")
    return 0


def cmd_stack_status(ctx: Context, submodule: str | None, upstream: str | None,
                     pathspec: Sequence[str], as_json: bool, limit: int) -> int:
    """``bisectkit status``: read-only, works with or without a session."""
    sp, _ = ctx.open()
    data = stack_status.collect(sp, submodule, upstream, list(pathspec))
    if as_json:
        ctx.console.file.write(json.dumps(data, indent=2) + "\n")
    else:
        ctx.console.stack_status(data, limit)
    return 0


def cmd_log(ctx: Context) -> int:
    sp, store = ctx.open()
    for line in log_lines(ctx.reader(sp, store).parts):
        ctx.console.line(line)
    return 0


def cmd_replay(ctx: Context, log: ReplayLog, request: StartRequest) -> int:
    """Start over from a log (read and parsed by the CLI: a bad log costs nothing)."""
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        if run.has_session():
            signals.run_shielded(run.end)
        session = new_session(sp, request)
        try:
            b = run.begin(session)
            answer.header(ctx, b)
            with b.store.saved_once():  # marks move nothing: saved once, not once each
                for words in log.marks:
                    b.mark(words[0], words[1:], source="replay")
        except BaseException:
            # Do not leave a half-replayed session behind.
            signals.run_shielded(run.end)
            raise
        return answer.finish(ctx, b, b.advance())


def cmd_reset(ctx: Context) -> int:
    """Restore every repository and end the session, from whatever record survives."""
    reset_session(ctx)
    return 0


def reset_session(ctx: Context) -> bool:
    """:func:`cmd_reset`'s work; False when there was nothing to reset (not bisecting)."""
    sp, _ = ctx.open()
    console = ctx.console
    with ctx.run(sp) as run:
        had_session = run.has_session()
        lines: list[str] = []
        # Even without a session or journal: a reflog may show bisectkit's
        # checkout still in place (someone deleted .git/bisectkit).
        signals.run_shielded(lambda: lines.extend(run.end()))
    for line in lines:
        console.line(line)
    if not had_session and not lines:
        console.line("not bisecting; nothing to reset")
        return False
    if not any(line.startswith("restored ") for line in lines):
        console.line("nothing had moved; session ended")
    return True


def cmd_show_step(ctx: Context, index: int) -> int:
    """Print the kept build and repro output of step N (of the current or last session)."""
    _, store = ctx.open()
    path = steplog.step_log_path(store.logs_dir, index)
    if not path.is_file():
        listed = ", ".join(map(str, steplog.kept_steps(store.logs_dir))) or "none"
        raise BadInput(f"no output kept for step {index} (steps with output: {listed})")
    ctx.console.file.write(safetext.lines(path.read_text(encoding="utf-8", errors="replace")))
    return 0


def cmd_plugins(ctx: Context) -> int:
    """List every loaded plugin, where it came from and the hooks it implements."""
    for name, origin, hooks in plugins.describe(ctx.pm, ctx.config.origins):
        ctx.console.line(f"{name}")
        ctx.console.line(f"    from:  {origin}")
        ctx.console.line(f"    hooks: {hooks or '(none)'}")
    return 0


def read_log(path: Path) -> str:
    """The text of a log file for ``replay`` (exit 2 if unreadable)."""
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from exc
