"""Refs, HEAD's reflog, and which commits the refs keep.

:class:`Refs` is ``Repo.refs``: what recovery reads (HEAD's reflog, the commits
no ref contains) and the refs it writes to keep them, and the remote-tracking
branches. A ref is written by the git CLI (one process, one reflog line); moving
HEAD is the checkout's (:meth:`bisectkit.git.checkout.WorkTree.point_head`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import SortMode

import bisectkit.git.cli as gitcli
import bisectkit.git.objects as gitobjects


@dataclass(frozen=True)
class ReflogEntry:
    """One line of a reflog."""

    old: str
    new: str
    message: str


class Refs:
    """The refs of one repository (``Repo.refs``)."""

    def __init__(self, repo: pygit2.Repository, workdir: Path) -> None:
        #: The libgit2 handle refs are read through, and the work tree the git CLI
        #: that writes them runs in.
        self._repo = repo
        self.workdir = workdir

    def create_ref(self, name: str, sha: str, message: str) -> None:
        """Create ref ``name`` at ``sha`` (refuses to replace an existing one)."""
        gitcli.checked(self.workdir, f"cannot create {name} in {self.workdir}",
                       "update-ref", "-m", message, name, sha, "0" * 40)

    def under(self, prefix: str) -> dict[str, str]:
        """Every ref whose name starts with ``prefix`` (``refs/bisect/``) -> the object it
        names (symbolic refs left out)."""
        found: dict[str, str] = {}
        for ref in self._repo.references.iterator():
            if ref.name.startswith(prefix) and \
                    ref.type != pygit2.enums.ReferenceType.SYMBOLIC:
                with contextlib.suppress(pygit2.GitError, ValueError, KeyError):
                    found[ref.name] = str(ref.target)
        return found

    def transaction(self, changes: dict[str, tuple[str | None, str | None]],
                    message: str) -> None:
        """Change refs in one all-or-nothing ``git update-ref --stdin``: ``name -> (old,
        new)``, ``None`` meaning absent. A ref that is no longer at ``old`` fails the whole
        transaction (:class:`GitFailure`), so a ref somebody else moved is never touched."""
        zero = "0" * 40
        lines = []
        for name, (old, new) in sorted(changes.items()):
            if new is None:
                lines.append(f"delete {name} {old or zero}")
            else:
                lines.append(f"update {name} {new} {old or zero}")
        if lines:
            gitcli.fed(self.workdir, f"cannot update refs in {self.workdir}",
                       "\n".join(lines) + "\n", "update-ref", "-m", message, "--stdin")

    def point_ref(self, name: str, sha: str, message: str) -> None:
        """Set ref ``name`` (``refs/...`` or a pseudo-ref such as ``BISECT_HEAD``) to ``sha``,
        created or replaced."""
        gitcli.checked(self.workdir, f"cannot set {name} in {self.workdir}",
                       "update-ref", "--no-deref", "-m", message, name, sha)

    def ref_value(self, name: str) -> str | None:
        """The commit ref ``name`` names, or None when there is none."""
        proc = gitcli.run(self.workdir, "rev-parse", "-q", "--verify", f"{name}^{{commit}}")
        return proc.stdout.strip() if proc.returncode == 0 else None

    def delete_ref_at(self, name: str, sha: str) -> bool:
        """Delete ref ``name`` only while it still names ``sha`` (git checks it atomically):
        whether it was deleted."""
        proc = gitcli.run(self.workdir, "update-ref", "--no-deref", "-d", name, sha)
        return proc.returncode == 0

    def ref_exists(self, name: str) -> bool:
        """Is there a ref called ``name`` (``refs/...``)?"""
        return name in self._repo.references

    def head_reflog(self) -> list[ReflogEntry]:
        """HEAD's reflog, newest first (empty when there is none)."""
        try:
            ref = self._repo.references["HEAD"]
            return [ReflogEntry(str(e.oid_old), str(e.oid_new), e.message or "")
                    for e in ref.log()]
        except (KeyError, pygit2.GitError, OSError):
            return []

    def unreachable(self, shas: Iterable[str]) -> list[str]:
        """The commits among ``shas`` that no branch, tag or remote-tracking ref contains."""
        wanted = [s for s in dict.fromkeys(shas) if gitobjects.has_commit(self._repo, s)]
        if not wanted:
            return []
        walker = self._repo.walk(None, SortMode.NONE)
        for s in wanted:
            walker.push(s)
        for ref in self._repo.references.iterator():
            if not ref.name.startswith(("refs/heads/", "refs/tags/", "refs/remotes/",
                                        "refs/bisectkit/")):
                continue
            with contextlib.suppress(pygit2.GitError, ValueError, KeyError):
                walker.hide(ref.peel(pygit2.Commit).id)
        found = {str(c.id) for c in walker}
        return [s for s in wanted if s in found]

    def remote_branches(self) -> dict[str, str]:
        """Remote-tracking branches, ``origin/main`` -> sha.

        Symbolic ones (``origin/HEAD``) are left out: they only alias another
        branch. Refs that name no commit are skipped.
        """
        found: dict[str, str] = {}
        for ref in self._repo.references.iterator():
            if (not ref.name.startswith("refs/remotes/")
                    or ref.type == pygit2.enums.ReferenceType.SYMBOLIC):
                continue
            with contextlib.suppress(pygit2.GitError, ValueError, KeyError):
                found[ref.name.removeprefix("refs/remotes/")] = str(ref.peel(pygit2.Commit).id)
        return found
