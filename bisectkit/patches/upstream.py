"""Which ref of a patched submodule is its upstream.

Given (``--upstream REF`` or git config ``bisectkit.upstream``), a ref is
used as it is (:func:`resolve_upstream`, which refuses one that names nothing).
Otherwise it is guessed from the submodule's remote-tracking branches by the graph,
and the guess says why (:meth:`Upstream.note`):

1. Branches of the remote the superproject fetches the submodule from (its
   URL in ``submodule.<name>.url`` or ``.gitmodules``) hold the pins, so they
   are the fork's; they are only looked at when no other remote has a branch
   sharing history with HEAD, and then only a pristine HEAD is accepted
   (rule 3): a fork branch without HEAD (an older integrate, HEAD not pushed
   yet) looks just like an upstream one.
2. A branch that contains HEAD cannot be the upstream of a patched HEAD
   (HEAD was pushed there). Among the others, the one whose merge-base with
   HEAD is nearest (the other merge-bases are its ancestors) wins: the
   patches on top of it are the stack.
3. When every branch contains HEAD, HEAD has no local patches, unless those
   branches are the fork's own: HEAD's last 50 first-parent commits carrying
   a revert or cherry-pick trailer get the guess refused instead of an empty
   stack.
4. Several branches at different commits equally near (same merge-base):
   those that contain the revisions being bisected are kept; if that still
   leaves more than one, the guess is refused, listing them.

Every refusal is one line that says how to choose: ``--upstream REF`` or
``git config bisectkit.upstream REF``.
"""

from __future__ import annotations

from collections.abc import Sequence

from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import HOW_TO_CHOOSE_UPSTREAM, UPSTREAM_KEY, Upstream, short
from bisectkit.patches.stack import trailer
from bisectkit.text import plural

#: The git config key that names the upstream ref for every command.
CONFIG_KEY = UPSTREAM_KEY
#: How to settle it, ending every refusal.
HOW_TO_CHOOSE = HOW_TO_CHOOSE_UPSTREAM
#: How far back HEAD's first-parent history is searched for patch trailers.
TRAILER_DEPTH = 50
#: Branches named in one message before "and N more".
SHOWN = 6


class GuessRefused(BadInput):
    """No upstream could be guessed (none given): a submodule bisect stops, an integrate
    bisect goes on without that submodule's follow-up."""


def guess(superproject: Repo, path: str, sub: Repo, contains: Sequence[str] = ()) -> Upstream:
    """Pick the upstream among the remote-tracking branches of ``sub`` (see module doc)."""
    head = sub.worktree.head_state().sha
    branches = sub.refs.remote_branches()
    urls = sub.remote_urls()
    pin_urls = {_norm(u) for u in superproject.submodule_urls(path)}
    pin_remotes = sorted(r for r, u in urls.items() if _norm(u) in pin_urls)
    own = {b for b in branches if _remote_of(b, urls) in pin_remotes}
    bases: dict[str, str | None] = {}  # by commit: several branches often share one
    for tier, fork_remotes in ((set(branches) - own, []), (own, pin_remotes)):
        related: dict[str, str] = {}
        for b in sorted(tier):
            sha = branches[b]
            if sha not in bases:
                bases[sha] = sub.merge_base(head, sha)
            base = bases[sha]
            if base is not None:
                related[b] = base
        if related:
            return _choose(sub, path, head, {b: branches[b] for b in related}, related,
                           contains, fork_remotes)
    raise GuessRefused(f"cannot guess the upstream of {path}: no remote-tracking branch shares "
                   f"history with HEAD {short(head)}; fetch the upstream remote, then "
                   f"{HOW_TO_CHOOSE}")


def _choose(sub: Repo, path: str, head: str, shas: dict[str, str], bases: dict[str, str],
            contains: Sequence[str], fork_remotes: list[str]) -> Upstream:
    """The guess among ``shas`` (branch -> commit), all sharing history with ``head``.

    ``fork_remotes`` is set when only the remotes the pins come from are left:
    there a branch without HEAD may as well be another branch of the fork (an
    older integrate, or HEAD not pushed yet), so only a HEAD they contain,
    pristine, is accepted.
    """
    outside = sorted(b for b in shas if bases[b] != head)
    if outside and fork_remotes:
        raise GuessRefused(
            f"cannot guess the upstream of {path}: only {', '.join(fork_remotes)}, where the "
            f"superproject fetches the submodule from, has branches sharing history with HEAD "
            f"{short(head)}, and those without HEAD ({_listed(outside)}) may be the fork's own; "
            f"fetch the upstream remote, then {HOW_TO_CHOOSE}")
    if not outside:
        # Every branch contains HEAD: the stack is empty whichever is taken.
        names = sorted(shas)
        _refuse_if_patched(sub, path, head, names)
        ref, picked = _single(sub, path, names, shas, contains,
                              f"{len(names)} remote branches contain HEAD {short(head)}")
        where = f", branches of {', '.join(fork_remotes)} only" if fork_remotes else ""
        return Upstream(ref, shas[ref], f"{_contain(names)} HEAD{where}, so there are no "
                                        f"local patches{picked}")
    front = _nearest({bases[b] for b in outside}, sub)
    tied = [b for b in outside if bases[b] in front]
    near = ", ".join(short(m) for m in sorted(front))
    ref, picked = _single(sub, path, tied, shas, contains,
                          f"{len(tied)} remote branches are equally near HEAD {short(head)} "
                          f"(merge-base {near})")
    n = len(sub.first_parent_range(head, [bases[ref]]))
    return Upstream(ref, shas[ref],
                    f"nearest merge-base with HEAD among the remote branches without it, "
                    f"{plural(n, 'local patch', 'local patches')} on top{picked}")


def _nearest(merge_bases: set[str], sub: Repo) -> list[str]:
    """The merge-bases no other one descends from (one, unless merges make them incomparable)."""
    front: list[str] = []
    for m in sorted(merge_bases):
        if any(sub.is_ancestor(m, f) for f in front):
            continue
        front = [f for f in front if not sub.is_ancestor(f, m)] + [m]
    return front


def _single(sub: Repo, path: str, tied: list[str], shas: dict[str, str],
            contains: Sequence[str], why_ambiguous: str) -> tuple[str, str]:
    """One branch out of ``tied``, and how a tie was broken ("" when there was none).

    Branches at one commit count once; among different commits, those that
    contain every revision of ``contains`` are kept.
    """
    by_commit: dict[str, list[str]] = {}
    for b in sorted(tied):
        by_commit.setdefault(shas[b], []).append(b)
    picked = ""
    if len(by_commit) > 1 and contains:
        having = {s: names for s, names in by_commit.items()
                  if all(sub.is_ancestor(c, s) for c in contains)}
        if having:
            picked = (f"; the only one of {len(tied)} equally near that contains the "
                      "revisions to bisect")
            by_commit = having
    if len(by_commit) == 1:
        return next(iter(by_commit.values()))[0], picked
    names = sorted(n for group in by_commit.values() for n in group)
    raise GuessRefused(f"cannot guess the upstream of {path}: {why_ambiguous}: {_listed(names)}; "
                   f"{HOW_TO_CHOOSE}")


def _refuse_if_patched(sub: Repo, path: str, head: str, names: list[str]) -> None:
    """Refuse an empty stack when HEAD's recent history carries revert/cherry-pick trailers."""
    for sha in sub.first_parent_log(head, TRAILER_DEPTH):
        found = trailer(sub.commit_info(sha).message)
        if found is not None:
            raise GuessRefused(
                f"cannot guess the upstream of {path}: {_contain(names)} HEAD {short(head)}, "
                f"which would leave no local patches, yet HEAD's "
                f"history has patches ({short(sha)} says '{found}'); these look like the fork's "
                f"own branches: fetch the upstream remote, then {HOW_TO_CHOOSE}")


def _remote_of(branch: str, urls: dict[str, str]) -> str:
    """The remote a remote-tracking branch belongs to (remote names may contain '/')."""
    for remote in sorted(urls, key=len, reverse=True):
        if branch.startswith(remote + "/"):
            return remote
    return branch.split("/", 1)[0]


def _norm(url: str) -> str:
    """A URL as compared with another: no trailing slash or ``.git``."""
    return url.rstrip("/").removesuffix(".git").rstrip("/")


def _contain(names: Sequence[str]) -> str:
    """``a contains`` or ``a, b contain``."""
    return f"{_listed(names)} contain{'s' if len(names) == 1 else ''}"


def _listed(names: Sequence[str]) -> str:
    """``a, b, c`` or ``a, b, ... and N more``."""
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def resolve_upstream(superproject: Repo, path: str, sub: Repo, given: str | None,
                     contains: Sequence[str] = ()) -> Upstream:
    """The upstream of submodule ``path``: ``given`` (``--upstream``), the git config, or a guess.

    A ref that was given (either way) must name a commit of ``sub``: a typo is
    refused (:class:`BadInput`), never replaced by a guess. ``contains`` are the
    revisions about to be bisected (they break ties between guesses); a guess
    that fails raises :class:`~bisectkit.patches.upstream.GuessRefused`.
    """
    ref = given or superproject.config_get(CONFIG_KEY)
    if not ref:
        found = guess(superproject, path, sub, contains)
        prefer_remote(sub, found.ref)
        return found
    prefer_remote(sub, ref)
    sha = sub.try_resolve(ref)
    if sha is None:
        source = "--upstream" if given else f"git config {CONFIG_KEY}"
        raise BadInput(f"unknown revision '{ref}' in {sub.workdir} (the upstream given by "
                       f"{source})")
    return Upstream(ref, sha)


def prefer_remote(sub: Repo, ref: str | None) -> None:
    """Fetches that deepen a shallow ``sub`` go to the remote of upstream ``ref`` (e.g.
    ``upstream`` for ``upstream/main``) when its branches have the boundary."""
    name = (ref or "").removeprefix("refs/remotes/").split("/", 1)[0]
    if name in sub.remote_urls():
        sub.shallow.preferred_remote = name
