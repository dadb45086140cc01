"""``bisectkit status``: where a patched submodule stands against its upstream.

Like IREE's ``llvm_revision status``: the merge-base, each local patch with
the upstream commit it refers to and what will happen to it at the next
integrate (replayed onto upstream HEAD with the bisect rules), and the
upstream commits since the merge-base, optionally pathspec-limited.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bisectkit.git.shapes as shapes
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.git.shapes.shallow import ShallowCut
from bisectkit.patches.stack import analyse, replay
from bisectkit.patches.upstream import resolve_upstream


def default_submodule(superproject: Repo, given: str | None, alternative: str = "") -> str:
    """``--submodule``, else ``bisectkit.submodule``, else the only submodule there is
    (every command that bisects or reads one submodule: ``status``, ``run``, ``start``,
    ``advance``). Several and none chosen: one line listing them, offering
    ``alternative`` too (e.g. ``--integrate``)."""
    if given:
        return given
    configured = superproject.config_get("bisectkit.submodule")
    if configured:
        return configured
    links = sorted(superproject.worktree.gitlinks())
    if len(links) == 1:
        return links[0]
    raise BadInput(f"which submodule? pass --submodule PATH{alternative} or set git config "
                   f"bisectkit.submodule (submodules here: {', '.join(links) or 'none'})")


def collect(superproject: Repo, submodule: str | None, given_upstream: str | None,
            pathspec: Sequence[str]) -> dict[str, Any]:
    """Everything ``status`` shows, as JSON-ready data.

    A shallow clone whose history is too short to tell the stack still gets its
    HEAD and shape reported, with ``"unknown"``: why, and the fetch that tells.
    """
    path, sub = open_submodule(superproject, default_submodule(superproject, submodule))
    head = sub.worktree.head_state()
    data: dict[str, Any] = {"submodule": path, "head": head.sha, "branch": head.ref}
    try:
        data.update(_stack(superproject, path, sub, given_upstream, head.sha, pathspec))
    except ShallowCut as exc:
        data["unknown"] = str(exc)
    # After the analysis: a partial clone's "fetched" counts what it fetched.
    data.update(shapes.status(sub))
    return data


def _stack(superproject: Repo, path: str, sub: Repo, given_upstream: str | None, head: str,
           pathspec: Sequence[str]) -> dict[str, Any]:
    """The upstream, the merge-base, each patch's fate at upstream, the commits since."""
    up = resolve_upstream(superproject, path, sub, given_upstream)
    upstream_sha = up.sha
    stack = analyse(sub, head, upstream_sha)
    at_upstream = replay(sub, stack, upstream_sha)
    fate = {a.patch.sha: a for a in at_upstream.actions}
    patches = []
    for p in stack.patches:
        in_upstream = (p.kind == "cherry-pick" and p.refers_to is not None
                       and sub.try_resolve(p.refers_to) is not None
                       and sub.is_ancestor(p.refers_to, upstream_sha))
        action = fate.get(p.sha)
        patches.append({
            **p.to_json(),
            "upstream_has_it": in_upstream,
            # Replay stops at a conflict; later patches were not tried.
            "at_upstream_head": action.action if action else "not tried",
            "why": action.why if action else "an earlier patch conflicts",
        })
    since = sub.first_parent_range(upstream_sha, [stack.merge_base])
    affecting = (sub.first_parent_range(upstream_sha, [stack.merge_base], list(pathspec),
                                        keep_tip=False) if pathspec else since)
    return {
        "upstream": up.ref,
        "upstream_sha": upstream_sha,
        # Why this upstream, when it was guessed (null when given).
        "upstream_guessed": up.guessed,
        "merge_base": stack.merge_base,
        "merge_base_subject": sub.commit_info(stack.merge_base).subject,
        "clean": not stack.patches,
        "patches": patches,
        "upstream_commits_since_merge_base": len(since),
        "pathspec": list(pathspec),
        "affecting": [{"commit": c, "subject": sub.commit_info(c).subject} for c in affecting],
    }
