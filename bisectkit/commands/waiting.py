"""A session waiting for its ends (``start`` with fewer than both, as git allows): how
revisions become its ends, and how it is shown. Used by ``start``, the marks, ``status``,
``log`` and ``replay``, each of which handles this state itself
(:mod:`bisectkit.commands.state`).

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
from collections.abc import Sequence

from bisectkit import strategies
from bisectkit.cli.targets import Given
from bisectkit.commands.context import Context
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.model import IntegrateRequest, StartRequest, SubmoduleRequest, Verdict, short
from bisectkit.patches.upstream import resolve_upstream
from bisectkit.store.waitstate import Waiting, WaitingRequest

#: Stands for an end not given yet while the request is validated (no argv word is NUL).
UNKNOWN = "\0unknown"


def with_unknown_ends(given: Given) -> Given:
    """``given`` with :data:`UNKNOWN` for the missing ends, so that the request validates
    (whether it lacks one: :func:`bisectkit.strategies.lacks_ends`)."""
    return dataclasses.replace(given, bad=given.bad or UNKNOWN, good=given.good or (UNKNOWN,))


def waiting_for(ctx: Context, sp: Repo, request: StartRequest) -> Waiting:
    """The session a ``start`` (or a log's start line) without both ends waits as: its
    target, and the new end if it was given."""
    assert isinstance(request, SubmoduleRequest | IntegrateRequest)
    waiting = Waiting(dataclasses.replace(request, bad="", good=()))
    if request.bad != UNKNOWN:
        waiting = with_marks(ctx, sp, waiting, "bad", [request.bad])
    return waiting


def shown(rev: str, sha: str) -> str:
    """A revision as typed, and its sha unless it is one."""
    return short(sha) if sha.startswith(rev) and len(rev) >= 7 else f"{rev} ({short(sha)})"


def with_marks(ctx: Context, sp: Repo, waiting: Waiting, side: Verdict,
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
            ctx.console.line(f"note: {shown(rev, sha)} is the {terms.word(side)} end "
                             "already; nothing to record", style="yellow")
        else:
            raise BadInput(f"{shown(rev, sha)} is the {terms.word(known)} end; it "
                           f"cannot be {terms.word(side)} too")
    if side == "bad" and new and waiting.bad is not None:
        ctx.console.line(f"note: the {terms.new} end was {short(waiting.bad)}; it is "
                         f"{short(new[0])} now", style="yellow")
    return waiting.marked(side, new)


def _resolved(ctx: Context, sp: Repo, template: WaitingRequest,
              revs: Sequence[str]) -> list[tuple[str, str]]:
    """(as given, full sha) of each revision; none given: the commit the user is on."""
    repo = repo_of(sp, template)
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
    ctx.console.line(f"taking {sha.short} ({repo.commit_info(sha).subject}): {what}",
                     style="dim")
    return [(sha.short, sha)]


def repo_of(sp: Repo, template: WaitingRequest) -> Repo:
    """Where the ends are commits: the submodule, or the superproject with ``--integrate``."""
    if isinstance(template, IntegrateRequest):
        return sp
    return open_submodule(sp, template.submodule)[1]


def say_status(ctx: Context, waiting: Waiting) -> None:
    """``status: waiting for ...``, and what to give."""
    ctx.console.line(f"status: {waiting.status()}")
    if not waiting.complete:
        ctx.console.line(f"give {waiting.missing()}: the first candidate is checked out then",
                         style="dim")


def start_words(waiting: Waiting) -> list[str]:
    """The words of the ``start`` that made ``waiting`` (without its ends)."""
    # The template's ends are empty: start_argv words them as "", which are dropped.
    return [w for w in strategies.start_argv(waiting.template) if w]
