"""Where a run may write its outputs (``--json``, ``--report``, ``--trace``), and what it
remembers of them once written.

Checked before anything moves, each refusal one line (exit 2):

- never over one of the run's inputs: the repro, a file a command names, a
  ``--cache-input``, a plugin's source, or another output (:func:`apart_from_inputs`);
- never inside a repository the run moves (:func:`outside_moved`): a moved
  submodule's work tree or git dir, the superproject's git dir, a workspace
  root, a file the superproject tracks (written before the restore, it would be
  "a local change" that stops it), and with ``--integrate`` a file any candidate
  tracks (the candidate checked out last would hold it). An untracked file of
  the superproject that no candidate tracks is fine (``--json result.json``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import SUPERPROJECT, RunOptions, short
from bisectkit.store.session import Session, SessionStore, state_dir
from bisectkit.strategies import kind_named


def apart_from_inputs(outputs: Mapping[str, str], opts: RunOptions, root: Path,
                      plugin_files: Mapping[str, str]) -> None:
    """``outputs`` (flag -> path) name no input of the run and no other output.
    ``plugin_files``: the loaded plugins' source files (real path -> what it is)."""
    inputs = {**plugin_files, **_named_files(opts, root)}
    seen: dict[str, str] = {}
    for flag, value in outputs.items():
        real = os.path.realpath(value)
        if real in seen:
            raise BadInput(f"{flag} {value}: {seen[real]} writes that file too; give each "
                           "output its own file")
        seen[real] = flag
        if real in inputs:
            raise BadInput(f"{flag} {value}: it is {inputs[real]}, an input of the run: "
                           "writing the result there would overwrite it; choose another file")
        for folder in opts.cache_inputs:
            if _inside(real, os.path.realpath(folder)):
                raise BadInput(f"{flag} {value}: it is inside --cache-input {folder}, which "
                               "the verdicts depend on; choose a file outside it")
        workspaces = opts.parallel.workspace_root
        if workspaces and not opts.parallel.scheduler and \
                _inside(real, os.path.realpath(workspaces)):
            raise BadInput(f"{flag} {value}: it is inside --workspace-root {workspaces}, "
                           "whose workspaces the run checks out; choose a file outside it")


def _named_files(opts: RunOptions, root: Path) -> dict[str, str]:
    """Every existing file the run reads by name (real path -> what it is)."""
    named: dict[str, str] = {}
    words = [(w, "a word of the repro") for w in opts.repro[1:]]
    if opts.repro:
        words.insert(0, (opts.repro[0], "the repro"))
    with contextlib.suppress(ValueError):  # not shell words: refused by precheck already
        words += [(w, "a word of --build") for w in shlex.split(opts.build or "")]
    words += [(p, "a --cache-input") for p in opts.cache_inputs]
    for word, what in words:
        for text in {word, word.partition("=")[2]} - {""}:  # ``--input=FILE`` too
            for base in (Path.cwd(), root):
                path = base / os.path.expanduser(text)
                if path.is_file():
                    named.setdefault(os.path.realpath(path), f"{what} ({text})")
    return named


def outside_moved(outputs: Mapping[str, str], sp: Repo, session: Session,
                  workspace_root: str | None = None) -> None:
    """No output (and no local ``--workspace-root``) lands in a repository ``session``
    moves, nor over a file it tracks: see the module's description."""
    moved = {p: Repo(sp.workdir / p) for p in session.orig if p != SUPERPROJECT}
    for flag, value in outputs.items():
        real = os.path.realpath(value)
        _outside_repositories(flag, value, real, sp, moved, own_state=False)
        rel = _relative(real, sp.workdir)
        if rel is None:
            continue
        if sp.trees.tracks(sp.worktree.head_tree(), rel) or sp.worktree.index_has(rel):
            raise BadInput(f"{flag} {value}: the superproject tracks this file: writing it "
                           "would change your work tree; choose an untracked file")
        kind = kind_named(session.strategy)
        if kind is not None and kind.moves_superproject:
            tracking = _tracked_by(sp, rel, [*session.candidates, *session.good, session.bad])
            if tracking is not None:
                raise BadInput(f"{flag} {value}: candidate {short(tracking)} tracks this file, "
                               "and the run checks candidates out in your superproject; "
                               "choose a file no candidate tracks")
    if workspace_root:
        real = os.path.realpath(workspace_root)
        _outside_repositories("--workspace-root", workspace_root, real, sp, moved,
                              own_state=True)


def _outside_repositories(flag: str, value: str, real: str, sp: Repo, moved: dict[str, Repo],
                          own_state: bool) -> None:
    """``real`` is in no moved submodule's work tree or git dir, and (unless ``own_state``
    allows bisectkit's state folder, the workspaces' default home) not in the
    superproject's git dir."""
    for path, repo in moved.items():
        if _inside(real, str(repo.workdir)) or _inside(real, str(repo.git_dir)):
            raise BadInput(f"{flag} {value}: it is inside submodule {path}, which the run "
                           "checks out at every step; choose a place outside it")
    if _inside(real, str(sp.git_dir)) and not (
            own_state and _inside(real, str(state_dir(sp.git_dir)))):
        raise BadInput(f"{flag} {value}: it is inside the superproject's git dir "
                       f"({sp.git_dir}); choose a place outside it")


def _tracked_by(sp: Repo, rel: str, commits: Iterable[str]) -> str | None:
    """The first of ``commits`` whose tree has an entry at ``rel``, or None."""
    trees: set[str] = set()
    for commit in commits:
        tree = sp.tree_of(commit)
        if tree not in trees:
            trees.add(tree)
            if sp.trees.tracks(tree, rel):
                return commit
    return None


def _relative(real: str, workdir: Path) -> str | None:
    """``real`` relative to ``workdir`` in git's form, or None when outside it."""
    base = os.path.realpath(workdir)
    return Path(os.path.relpath(real, base)).as_posix() if _inside(real, base) else None


def _inside(path: str, folder: str) -> bool:
    """Is ``path`` ``folder`` itself or below it (both real paths)?"""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def remember_output(superproject: Repo | None, path: str) -> None:
    """Record ``path``, just written by this run, if it is in the superproject's work tree:
    while it holds what was written, it is not an input of later runs' cache keys."""
    if superproject is None:
        return
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(superproject.workdir) + os.sep):
        return
    with contextlib.suppress(OSError):  # only an optimisation: the file stays an input
        SessionStore(superproject.git_dir).remember_output(real)
