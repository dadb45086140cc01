"""The revisions a mark names, as candidates: single revisions, and for ``skip`` ranges
(``A..B``, ``A...B``) as ``git bisect skip`` takes them.

A range stands for the candidates in it: for a submodule session, upstream
commits of the submodule on the candidate line; for ``--integrate``,
superproject commits. Its other commits (side branches, commits a pathspec
left out, commits outside the bisect range) are not candidates and are left
alone, with a note; a range that holds no candidate at all is refused, as a
single revision outside the bisect range is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from bisectkit.errors import BadInput
from bisectkit.model import GIT_PROG, Verdict, short
from bisectkit.store.session import Session
from bisectkit.strategies.base import Strategy
from bisectkit.text import plural

Note = Callable[[str], None]


def marked(strategy: Strategy, session: Session, word: str, revs: Sequence[str],
           note: Note) -> list[str]:
    """The candidates ``revs`` name (each once, in the order named; a range's oldest first).

    :class:`BadInput` for a revision that is unknown or not a candidate, a range
    that holds no candidate, or a range given to another mark than ``skip``.
    """
    known = session.verdict_map()
    shas: list[str] = []
    for rev in revs:
        if ".." not in rev:  # no ref name may contain "..": this is a range
            sha = strategy.resolve(rev)
            if sha not in session.candidates:
                raise BadInput(_not_a_candidate(strategy, session, word, rev, sha))
            shas.append(sha)
        elif word != "skip":
            raise BadInput(f"'{word}' takes single revisions, not a range ('{rev}'); only "
                           "'skip' accepts ranges")
        else:
            shas += _skippable(strategy, session, rev, known, note)
    return list(dict.fromkeys(shas))


def _not_a_candidate(strategy: Strategy, session: Session, word: str, rev: str,
                     sha: str) -> str:
    """Why ``rev`` cannot be marked: what it is, if the session knows, and what to type."""
    said = short(sha) if sha.startswith(rev) else f"'{rev}' ({short(sha)})"
    terms = session.terms
    if sha in session.good:
        return (f"{said} is the {terms.old} end, not a candidate; if it is {terms.new}, "
                f"'{GIT_PROG} reset' and start again with an older {terms.old} revision")
    current = session.current
    if current is not None and sha != current and sha == _head(strategy):
        # A submodule's candidate is checked out with the patch stack applied: its HEAD
        # is a commit bisectkit wrote, not the upstream commit under test.
        return (f"{said} is candidate {short(current)} with the local patches applied; to "
                f"mark it: '{GIT_PROG} {word}' (no revision)")
    return f"{said} is not in the bisect range"


def _head(strategy: Strategy) -> str | None:
    """The commit ``HEAD`` names where the strategy resolves revisions (None: none)."""
    try:
        return strategy.resolve("HEAD")
    except BadInput:
        return None


def contradiction(session: Session, side: Verdict, shas: Sequence[str], old: str,
                  new: str) -> str | None:
    """Why marking ``shas`` ``side`` contradicts what is known (``old``, a commit on the
    good side, is not older than ``new``, on the bad side; the same commit: marked on
    both), and what to do: the mark's own words, or None when the contradiction is not the
    mark's."""
    terms = session.terms
    change = f"to change a mark: '{GIT_PROG} log' > FILE, edit it, reset, replay FILE"
    if side == "good" and old in shas:
        if old == session.bad:
            return (f"cannot mark {terms.old}: {short(old)} is the {terms.new} end; if it is "
                    f"{terms.old}, '{GIT_PROG} reset' and start again with a newer "
                    f"{terms.new} revision")
        was = ("is marked {} already" if new == old else
               f"is newer than {short(new)}, marked {{}}").format(terms.new)
        return f"cannot mark {terms.old}: {short(old)} {was}; {change}"
    if side == "bad" and new in shas:
        was = ("is marked {}" if new == old else
               f"is older than {short(old)}, marked {{}}").format(terms.old)
        return f"cannot mark {terms.new}: {short(new)} {was}; {change}"
    return None


def in_range(strategy: Strategy, candidates: Sequence[str], rev: str) -> tuple[list[str], int]:
    """The candidates in range ``rev`` (oldest first), and how many of its commits are not
    candidates. An empty side is ``HEAD``, as in git; ``A...B``: in either, not in both."""
    symmetric = "..." in rev
    left_rev, right_rev = rev.split("..." if symmetric else "..", 1)
    left = strategy.resolve(left_rev or "HEAD")
    right = strategy.resolve(right_rev or "HEAD")
    repo = strategy.history
    hide: list[str]
    if symmetric:
        base = repo.merge_base(left, right)
        tips, hide = [left, right], [base] if base is not None else []
    else:
        tips, hide = [right], [left]
    # Streamed, not held: a range may be of any size; what is kept is the candidates in it
    # (proportional to the bisect range, as the candidate list itself).
    wanted = set(candidates)
    hits: set[str] = set()
    total = 0
    for sha in repo.range_commits(tips, hide):
        total += 1
        if sha in wanted:
            hits.add(sha)
    found = [c for c in candidates if c in hits]
    return found, total - len(found)


def _skippable(strategy: Strategy, session: Session, rev: str, known: Mapping[str, Verdict],
               note: Note) -> list[str]:
    """The candidates of range ``rev`` to mark skip: those without a good or bad verdict
    (as in git, a skip does not undo what a test showed; the bad end stays bad)."""
    found, others = in_range(strategy, session.candidates, rev)
    if not found:
        why = f" (its {plural(others, 'commit')}: none is a candidate)" if others else " (empty)"
        raise BadInput(f"'{rev}' holds no candidate of the bisect range{why}")
    judged = [c for c in found if known.get(c) in ("good", "bad")]
    left_out = []
    if others:
        left_out.append(f"{plural(others, 'commit')} in it {'is' if others == 1 else 'are'} not "
                        "candidates")
    if judged:
        words = sorted({session.terms.word(known[c]) for c in judged})
        left_out.append(f"{plural(len(judged), 'candidate')} already marked "
                        f"{'/'.join(words)} {'keeps its' if len(judged) == 1 else 'keep their'}"
                        " verdict")
    if left_out:
        note(f"{rev}: {'; '.join(left_out)}")
    return [c for c in found if c not in judged]
