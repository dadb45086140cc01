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
from bisectkit.model import Verdict, short
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
                raise BadInput(f"'{rev}' ({short(sha)}) is not in the bisect range")
            shas.append(sha)
        elif word != "skip":
            raise BadInput(f"'{word}' takes single revisions, not a range ('{rev}'); only "
                           "'skip' accepts ranges")
        else:
            shas += _skippable(strategy, session, rev, known, note)
    return list(dict.fromkeys(shas))


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
    inside = set(repo.iter_range(tips, hide))
    found = [c for c in candidates if c in inside]
    return found, len(inside) - len(found)


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
