"""``git bisect`` parity commands of ``git bisect-patched``: visualize (view), terms, and
``reset <commit>``.

All read the session without the lock (as ``status`` does) except ``reset``,
which restores everything first (:func:`~bisectkit.commands.manual.reset_session`).
"""

from __future__ import annotations

from bisectkit.commands import manual
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput
from bisectkit.git import cli as gitcli
from bisectkit.git.repo import Repo
from bisectkit.model import Terms
from bisectkit.pipeline.bisection import Bisection

#: The verdict column of a candidate nothing is known about yet.
UNKNOWN = "?"


def remaining(b: Bisection) -> list[tuple[str, str]]:
    """The candidates still in play, newest first (as ``git log`` lists them), with the
    verdict known so far in the session's words (``?``: none).

    Those after the newest good one up to the oldest bad one, that one included
    (``git bisect visualize`` shows the bad end too); in an advance with nothing
    bad yet, up to the far end.
    """
    s = b.session
    known = s.verdict_map()
    lo, hi = b.search.bounds(s.candidates, known)
    shown = s.candidates[lo + 1:min(hi, len(s.candidates) - 1) + 1]
    return [(c, s.terms.word(known[c]) if c in known else UNKNOWN) for c in reversed(shown)]


def cmd_visualize(ctx: Context, as_log: bool) -> int:
    """``visualize``/``view``: one line per remaining candidate (``--log``: ``git log``
    style), the verdicts so far beside them."""
    sp, store = ctx.open()
    b = ctx.reader(sp, store)
    rows = remaining(b)
    if not rows:
        ctx.console.line("no candidates left", style="dim")
        return 0
    if as_log:
        for sha, word in rows:
            for line in _log_entry(b, sha, word):
                ctx.console.line(line)
        return 0
    width = max(len(w) for w in (b.terms.old, b.terms.new, "skip", UNKNOWN))
    columns = ctx.console.width  # the terminal's, else $COLUMNS or 80
    for sha, word in rows:
        subject = b.strategy.describe(sha).subject
        ctx.console.line(fit(f"{sha[:12]} {word:<{width}} {subject}", columns))
    return 0


def _log_entry(b: Bisection, sha: str, word: str) -> list[str]:
    """One commit as ``git log`` prints it; a known verdict stands where git shows refs."""
    info = b.strategy.describe(sha)
    body = [f"    {line}" if line else "" for line in info.message.rstrip("\n").splitlines()]
    return [f"commit {sha}{f' ({word})' if word != UNKNOWN else ''}",
            f"Author: {info.author}", f"Date:   {info.date}", "", *body, ""]


def fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` columns ("..." marks the cut), so it never wraps."""
    if len(line) <= width or width < 4:
        return line
    return line[:width - 3].rstrip() + "..."


def cmd_terms(ctx: Context, which: str | None) -> int:
    """``terms``: the session's words for the two sides (``which``: just one of them)."""
    sp, store = ctx.open()
    waiting = store.pending()
    # Known from 'start' on, as git's: a session waiting for its ends has them already.
    terms = waiting.template.terms if waiting is not None else ctx.reader(sp, store).terms
    if which is not None:
        ctx.console.line(terms.old if which == "old" else terms.new)
        return 0
    for line in terms_lines(terms):
        ctx.console.line(line)
    return 0


def terms_lines(terms: Terms) -> list[str]:
    """What ``git bisect terms`` says, and what ``good``/``bad`` mean looking for a fix."""
    lines = [f"Your current terms are {terms.old} for the old state",
             f"and {terms.new} for the new state."]
    if terms.find_fix:
        lines.append(f"Looking for a fix: 'good' (the repro passes) marks {terms.new}, "
                     f"'bad' marks {terms.old}.")
    return lines


def cmd_reset(ctx: Context, commit: str | None) -> int:
    """``reset [<commit>]``: restore everything, then check out ``commit`` in the
    superproject (``git bisect reset <commit>``: ``git checkout <commit>`` after the reset).

    ``commit`` is resolved first, as it names a commit now (``reset HEAD`` stays on
    what is checked out): a bad one is refused with nothing touched. A branch name
    checks the branch out; anything else leaves HEAD detached. Submodules stay where
    the reset put them (``git checkout`` does not move them either); a note says
    which no longer match the commit's pins.
    """
    if commit is None:
        return manual.cmd_reset(ctx)
    sp, _ = ctx.open()
    sha = sp.try_resolve(commit)
    if sha is None:
        raise BadInput(f"'{commit}' is not a valid commit in {sp.workdir}; nothing was reset")
    is_branch = sp.try_resolve(f"refs/heads/{commit}") == sha
    if not manual.reset_session(ctx):
        ctx.console.line(f"not checking out '{commit}' (there was no bisection to end)",
                         style="dim")
        return 0
    gitcli.checked(sp.workdir, f"everything is restored, but 'git checkout {commit}' failed",
                   "checkout", "-q", commit if is_branch else sha)
    ctx.console.line(f"checked out '{commit}': {sp.head_state().describe()}")
    for path in _unmatched_pins(sp):
        ctx.console.line(f"  submodule {path} is not at the commit '{commit}' pins; 'git "
                         f"submodule update {path}' moves it there", style="yellow")
    return 0


def _unmatched_pins(sp: Repo) -> list[str]:
    """Checked-out submodules whose HEAD is not the commit the index (just checked out)
    pins."""
    out = []
    for path, pinned in sorted(sp.gitlinks().items()):
        if not (sp.workdir / path / ".git").exists():
            continue  # not initialised: there is nothing to move
        if Repo(sp.workdir / path).head_state().sha != pinned:
            out.append(path)
    return out
