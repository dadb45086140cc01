"""``--all-parents``: bisect into merges, one merge at a time.

The candidates stay one first-parent line at every moment, which is what the
engine's "good before bad" needs. A flat list of every commit of the DAG
would not do: a side-branch commit lacks the first-parent commits before it
in such a list, so a bug on the first-parent line could be blamed on a
side-branch commit.

So the bisection works in phases. It bisects the first-parent line as
always; when the first bad commit found is a merge ``M`` (two parents) not
descended into yet, the candidates become the commits ``M`` brought in, the
first-parent line of ``M^2`` not reachable from ``M^1`` (``git rev-list
--first-parent M^2 ^M^1``, oldest first, the session's good ends hidden too
and its pathspec applied), followed by ``M`` itself. ``M^1`` is the new good
end (it is older than ``M`` on the line just bisected, so it is good or the
good end) and ``M`` the bad end (its verdict is known). Every side commit
contains the merge-base of ``M``'s parents, an ancestor of ``M^1``: the side
line starts good, as a bisection needs. When every side commit tests good,
the answer is ``M`` itself (the two sides are good apart and bad together:
a semantic conflict). A side commit found bad that is a merge is descended
into the same way.

Octopus merges (three or more parents) are not descended into: one side line
at a time would need the other sides' tips tested first. The answer names the
merge and says so.

The verdicts already known (session steps, the verdict cache) stay; the merges
descended into are kept in the session's ``descended`` parameter, which is what
``--json`` reports, and what a replay recomputes from the same verdicts.
"""

from __future__ import annotations

from bisectkit.engine import Decision, Found
from bisectkit.engine.search import Search
from bisectkit.model import short
from bisectkit.pipeline.parts import RunParts
from bisectkit.text import plural


def decide_and_descend(b: RunParts, search: Search) -> Decision:
    """``search``'s decision; with ``--all-parents``, a merge found first bad first becomes
    the candidates (the session's candidates are rewritten and saved), and so on."""
    while True:
        decision = search.decide(b.session.candidates, b.session.verdict_map())
        if not descend(b, decision):
            return decision


def descended(b: RunParts) -> list[str]:
    """The merges this session descended into, outermost first."""
    return list(b.session.params.descended)


def descend(b: RunParts, decision: Decision) -> bool:
    """When ``decision`` names a merge to bisect into (``--all-parents``), make the
    commits it merged the candidates and say so; True when it did."""
    s = b.session
    if not isinstance(decision, Found) or not s.params.all_parents:
        return False
    merge = decision.first_bad
    repo = b.strategy.history
    parents = b.strategy.describe(merge).parents
    if len(parents) != 2 or merge in descended(b):
        return False
    # Hidden too: the first parents of the merges descended into before, good all of
    # them: a side branch that merged the main line in brings none of its commits.
    outer = [b.strategy.describe(m).parents[0] for m in descended(b)]
    side = repo.first_parent_range(parents[1], [parents[0], *outer, *s.good], s.pathspec,
                                   keep_tip=False)
    if not side:
        return False  # its second parent was merged already: nothing to bisect into
    s.candidates = [*side, merge]  # a new list: the engine memoises positions per list
    s.params.descended = [*descended(b), merge]
    b.store.candidates_changed()
    b.strategy.candidates_changed()
    many = plural(len(side), 'commit')
    b.hooks.message(f"first {b.terms.new} commit is merge {short(merge)} "
                    f"{b.strategy.describe(merge).subject}; --all-parents: bisecting the {many} "
                    f"it merged ({b.terms.old} end: its first parent {short(parents[0])})",
                    "progress")
    return True


def good_ends(b: RunParts) -> list[str]:
    """The good end(s) the current candidates start after: the session's, or the first
    parent of the merge descended into last."""
    merges = descended(b)
    if not merges:
        return list(b.session.good)
    return [b.strategy.describe(merges[-1]).parents[0]]


def answer_notes(b: RunParts, first_bad: str) -> list[str]:
    """What the answer owes to ``--all-parents``: the merge itself is the culprit, or an
    octopus merge was not descended into."""
    if not b.session.params.all_parents:
        return []
    new = b.terms.new
    if descended(b)[-1:] == [first_bad]:
        return [f"the merge itself is the first {new} commit: every commit it merged tests "
                f"{b.terms.old} (the two sides are {b.terms.old} apart and {new} together)"]
    parents = b.strategy.describe(first_bad).parents
    if len(parents) > 2:
        return [f"{short(first_bad)} is an octopus merge ({len(parents)} parents): "
                "--all-parents does not bisect into octopus merges; bisect each merged "
                "branch on its own"]
    if descended(b):
        return [f"{short(first_bad)} came in with merge {short(descended(b)[-1])} (--all-parents "
                f"bisected into {plural(len(descended(b)), 'merge')})"]
    return []
