"""Commit links in a report: which web address each commit gets, if any."""

from __future__ import annotations

from bisectkit.model import short
from bisectkit.strategies import kind_named
from bisectkit.ui.report.text import Result


def commit_link(sha: str, template: str | None) -> str:
    """``sha`` as Markdown: a link if ``template`` (``{sha}``, ``{short}``), else `sha12`."""
    if not sha:
        return "(unknown)"
    url = _url(sha, template)
    return f"[`{short(sha)}`]({url})" if url else f"`{short(sha)}`"


def _url(sha: str, template: str | None) -> str | None:
    """The commit's web address from ``template``, if any."""
    if not template or not sha:
        return None
    return template.replace("{sha}", sha).replace("{short}", short(sha))


class Links:
    """Which web address each commit of a result links to.

    Upstream commits (the candidates of a submodule bisect, its ends) use
    ``commit_url`` (git config ``bisectkit.commit-url``). Commits that exist
    only in the fork (every patch of the stack: local patches, the fork's
    cherry-picks and reverts, and so every candidate of a ``--stack`` bisect)
    use ``fork_url`` (``bisectkit.fork-url``) or get no link: an upstream
    address would 404. In an integrate bisect the commits are the
    superproject's, linked with ``commit_url`` as before.
    """

    def __init__(self, result: Result, commit_url: str | None = None,
                 fork_url: str | None = None) -> None:
        self.commit_url = commit_url
        self.fork_url = fork_url
        kind = kind_named(str(result.get("strategy")))
        self._stack = kind is not None and kind.candidates_are_patches
        # The only upstream commit of a stack bisect: the --at it patches.
        self._upstream = {str(g) for g in result.get("good") or []}

    def template(self, sha: str, patch: bool = False) -> str | None:
        """The template for ``sha`` (``patch``: it is a patch of the stack)."""
        fork_only = patch or (self._stack and sha not in self._upstream)
        return self.fork_url if fork_only else self.commit_url

    def url(self, sha: str, patch: bool = False) -> str | None:
        return _url(sha, self.template(sha, patch))

    def md(self, sha: str, patch: bool = False) -> str:
        """``sha`` as Markdown, linked where it has an address."""
        return commit_link(sha, self.template(sha, patch))
