"""Writing commits and refs the way git does, for ``advance --apply`` (the git CLI only).

Commits are made by git (``commit-tree``, or ``hash-object`` for a rebased
patch), the committer the user's own identity (git config, ``GIT_COMMITTER_*``);
a rebased patch keeps its author line, message and ``encoding`` header byte for
byte, as ``git rebase`` does.
Refs move with ``git update-ref`` given the value they must still have, so a
branch moved by someone else meanwhile is never overwritten.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import bisectkit.git.cli as gitcli
from bisectkit.errors import BadInput, GitFailure
from bisectkit.model import short


def committer_problem(cwd: Path) -> str | None:
    """Why git cannot make a commit here (no user.name/user.email), or None."""
    proc = gitcli.run(cwd, "var", "GIT_COMMITTER_IDENT")
    if proc.returncode == 0:
        return None
    return (f"git cannot make commits in {cwd} (no committer identity: set git config "
            "user.name and user.email)")


def branch_problem(cwd: Path, name: str) -> str | None:
    """Why ``name`` cannot be a new branch here (not a valid name, or it exists), or None."""
    if gitcli.run(cwd, "check-ref-format", "--branch", name).returncode != 0:
        return f"'{name}' is not a valid branch name"
    if gitcli.run(cwd, "rev-parse", "--verify", "-q", f"refs/heads/{name}").returncode == 0:
        return (f"branch '{name}' already exists in {cwd}; pass --branch NAME, or delete it "
                f"('{gitcli.shown('-C', str(cwd), 'branch', '-D', name)}')")
    return None


def commit_like(cwd: Path, tree: str, parent: str, like: str) -> str:
    """A new commit of ``tree`` on ``parent`` with ``like``'s author line, ``encoding``
    header and message byte for byte (as ``git rebase`` keeps them), committed by the
    user (no ref moved)."""
    raw = gitcli.read_bytes(cwd, f"cannot read commit {short(like)}", "cat-file", "commit", like)
    headers, _, message = raw.partition(b"\n\n")
    kept = {line.partition(b" ")[0]: line + b"\n" for line in headers.split(b"\n")
            if line.startswith((b"author ", b"encoding "))}
    # Written whole (git hash-object checks it): commit-tree would take the author through
    # GIT_AUTHOR_* (text, with a name's trailing '.' trimmed) and label the message with
    # the user's i18n.commitEncoding rather than the encoding its bytes are in.
    committer = gitcli.read_bytes(cwd, f"cannot make a commit in {cwd}", "var",
                                  "GIT_COMMITTER_IDENT").strip()
    body = (b"tree %s\nparent %s\n" % (tree.encode(), parent.encode()) + kept[b"author"]
            + b"committer " + committer + b"\n" + kept.get(b"encoding", b"") + b"\n" + message)
    return _git_input(cwd, ["hash-object", "-t", "commit", "-w", "--stdin"], body)


def commit(cwd: Path, tree: str, parent: str, message: str) -> str:
    """A new commit of ``tree`` on ``parent`` by the user (no ref moved), its message in
    UTF-8 and labelled so, whatever the user's ``i18n.commitEncoding`` says."""
    args = ["-c", "i18n.commitEncoding=UTF-8", "commit-tree", tree, "-p", parent]
    return _git_input(cwd, args, message.encode())


def _git_input(cwd: Path, args: list[str], data: bytes) -> str:
    """The object id ``git args...`` prints when fed ``data``; GitFailure if it fails."""
    # Its own session and settings, as every git bisectkit runs (gitcli): a terminal
    # Ctrl-C reaches bisectkit, which decides when to stop.
    proc = subprocess.run(gitcli.argv(*args), cwd=cwd, env=gitcli.git_env(), input=data,
                          capture_output=True, check=False, start_new_session=True)
    if proc.returncode != 0:
        detail = " ".join(os.fsdecode(proc.stderr).split()) or f"exit {proc.returncode}"
        raise GitFailure(f"cannot make a commit in {cwd}: {detail}")
    return os.fsdecode(proc.stdout).strip()


def create_branch(cwd: Path, name: str, sha: str, message: str) -> None:
    """Create branch ``name`` at ``sha``; refused (BadInput) if it appeared meanwhile."""
    proc = gitcli.run(cwd, "update-ref", "-m", message, f"refs/heads/{name}", sha, "0" * 40)
    if proc.returncode != 0:
        raise BadInput(f"cannot create branch '{name}' in {cwd}: "
                       f"{' '.join(proc.stderr.split())}")


def delete_branch(cwd: Path, name: str, sha: str) -> bool:
    """Delete branch ``name`` if it still points at ``sha``; whether it was deleted."""
    return gitcli.run(cwd, "update-ref", "-d", f"refs/heads/{name}", sha).returncode == 0


def branch_sha(cwd: Path, name: str) -> str | None:
    """The commit branch ``name`` points at, or None (no such branch, or no repository)."""
    if not cwd.is_dir():
        return None
    proc = gitcli.run(cwd, "rev-parse", "--verify", "-q", f"refs/heads/{name}^{{commit}}")
    return proc.stdout.strip() if proc.returncode == 0 else None


def move_head(cwd: Path, ref: str | None, new: str, old: str, message: str) -> None:
    """Move branch ``ref`` (the one HEAD is on; None: HEAD itself, detached) from ``old``
    to ``new``; refused (BadInput) if it no longer is ``old``. The ref that was checked is
    the one written, even if HEAD moved to another branch meanwhile."""
    args = [ref] if ref is not None else ["--no-deref", "HEAD"]
    proc = gitcli.run(cwd, "update-ref", "-m", message, *args, new, old)
    if proc.returncode != 0:
        raise BadInput(f"cannot move {ref or 'HEAD'} of {cwd} (it moved while bisectkit "
                       f"ran?): {' '.join(proc.stderr.split())}")


def stage_gitlink(cwd: Path, path: str, sha: str) -> None:
    """Make the index pin submodule ``path`` at ``sha`` (its work tree is not touched)."""
    gitcli.checked(cwd, f"cannot update the index of {cwd}", "update-index", "--cacheinfo",
                   f"160000,{sha},{path}")


def staged_gitlink(cwd: Path, path: str) -> str | None:
    """The commit the index pins at submodule ``path``, if any."""
    out = gitcli.read_bytes(cwd, f"cannot read the index of {cwd}", "ls-files", "-s", "--",
                            path).decode("utf-8", "surrogateescape")
    fields = out.split()
    return fields[1] if len(fields) >= 4 and fields[0] == "160000" else None
