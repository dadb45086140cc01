"""The verdict cache's key material: everything besides the tested trees that decides a
verdict, read at the start of each run (:func:`run_identity`).

A verdict depends on the trees on disk and on everything that built and
judged them: commands, rules, timeout, plugins and their options, the kept
output's size, every file the commands read that can be seen, ``--cache-input``
paths, the environment variables the commands read, the submodules the
strategy does not move and the superproject's local edits and untracked files
(or, for steps run in workspaces, what the workspaces hold instead). Paths
inside the superproject are keyed relative to it, so a checkout moved
elsewhere keeps its verdicts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bisectkit.git.shapes as shapes
from bisectkit.errors import BadInput
from bisectkit.execute.envscan import env_part, names_in_files
from bisectkit.git.repo import Repo
from bisectkit.model import DEFAULT_KEEP, RunOptions
from bisectkit.store.commandinputs import command_env, named_files
from bisectkit.store.fingerprint import (
    file_digest,
    input_digest,
    local_state,
    submodule_states,
)
from bisectkit.store.pathglobs import PathGlobs

#: Stands for the superproject root in the commands' words (a NUL: no word can hold one).
ROOT = "\0superproject"
#: ``parts["where"]`` of steps run in workspaces (absent: in the user's tree).
IN_WORKSPACES = "workspaces"


@dataclass(frozen=True)
class RunIdentity:
    """What besides the trees decides a verdict, as read at the start of a run."""

    #: Commands, rules, named files, ``--cache-input``, submodules, superproject files,
    #: environment variables.
    parts: dict[str, Any]
    #: Absolute paths of the files the run writes itself (never inputs).
    outputs: frozenset[str]
    #: The superproject root (paths are told relative to it).
    root: str = ""
    #: Files earlier runs wrote (real path -> digest): not inputs while unchanged.
    own: dict[str, str] = field(default_factory=dict)
    #: ``bisectkit.cacheIgnore`` patterns: superproject paths that are never inputs.
    ignore: PathGlobs = field(default_factory=lambda: PathGlobs(()))
    #: The superproject's submodule paths when the key was read.
    links: frozenset[str] = frozenset()

    def text(self) -> str:
        """The key material (stable: sorted JSON)."""
        return json.dumps(self.parts, sort_keys=True)

    def changed_local_files(self, sp: Repo) -> list[str]:
        """Untracked or edited superproject files that differ from the start of the run
        (none for steps run in workspaces: they never see them)."""
        if self.parts.get("where") == IN_WORKSPACES:
            return []
        before: dict[str, dict[str, str]] = self.parts["superproject"]
        now = local_state(sp, self.outputs, self.own, self.ignore)
        # A submodule some superproject commits lack (``--integrate`` checks them out) is
        # an untracked folder there: the checkout's doing, not a change of the user's.
        links = self.links | set(sp.worktree.gitlinks())
        return sorted({p for kind in ("modified", "untracked")
                       for p in before[kind].keys() | now[kind].keys()
                       if before[kind].get(p) != now[kind].get(p)
                       and p.rstrip("/") not in links})


@dataclass(frozen=True)
class Skipped:
    """Superproject files that are not inputs: the run's own outputs, what earlier runs
    wrote (real path -> digest), the ``bisectkit.cacheIgnore`` patterns."""

    outputs: Collection[str] = ()
    own: Mapping[str, str] = field(default_factory=dict)
    ignore: PathGlobs = field(default_factory=lambda: PathGlobs(()))

    @classmethod
    def of(cls, sp: Repo, outputs: Collection[str] = (),
           own: Mapping[str, str] | None = None) -> Skipped:
        """The skips of a run in ``sp`` writing ``outputs``, earlier runs having written
        ``own``."""
        return cls(outputs, dict(own or {}), PathGlobs(sp.config_get_all("bisectkit.cacheIgnore")))


def run_identity(opts: RunOptions, sp: Repo, moved: Collection[str] = (),
                 skipped: Skipped | None = None, declared_env: Collection[str] = (),
                 workspaces: bool = False, no_checkout: bool = False) -> RunIdentity:
    """Everything besides the tested trees that decides a verdict, read once per run.

    ``moved``: the submodules the strategy checks out (the trees cover them);
    ``skipped``: superproject files that are never inputs; ``declared_env``:
    environment variables plugins say their commands read; ``workspaces``: the
    steps run in workspaces (``--jobs``, ``--scheduler``), which hold only
    committed files: the user's untracked files and edits are not what they
    test, so they are not keyed, and a mark keeps those verdicts apart from
    verdicts tested in the user's tree; ``no_checkout``: the repro reads the candidate
    from BISECT_HEAD (``--no-checkout``), a mark keeps those verdicts apart from those of
    checked-out candidates. Read at the start of the run: what the
    build writes during the run does not change the key within it.
    """
    skipped = skipped or Skipped()
    root = str(sp.workdir)
    parts = _command_parts(opts, root)
    named, written = named_files(opts, sp.workdir)
    # A file the superproject tracks is covered by its tree in the key (and by
    # the local changes below when edited); one tracked in a checked-out
    # submodule by that submodule's tree. Hashing them too would make the key
    # depend on which candidate happens to be checked out when the run starts.
    covered = _Coverage(sp, moved)
    parts["files"] = {_key_path(str(path), root): file_digest(path) for path in named
                      if not covered(path)}
    parts["cache_inputs"] = {_key_path(p, root): input_digest(Path(p))
                             for p in opts.cache_inputs}
    states = submodule_states(sp, moved)
    parts["submodules"] = _as_committed(states) if workspaces else states
    # Only the shapes that have material: the keys of plain checkouts stay as they were.
    parts.update(shape_material(sp))
    env = env_part([*command_env(opts), *names_in_files(named), *opts.cache_env,
                    *sp.config_get_all("bisectkit.cacheEnv"), *declared_env], os.environ)
    if env:  # likewise: commands that read no variable keep their keys
        parts["env"] = env
    skip = frozenset({os.path.realpath(o) for o in skipped.outputs} | written)
    if workspaces:
        parts["superproject"] = {"modified": {}, "untracked": {}}  # committed files only
        parts["where"] = IN_WORKSPACES
    else:
        parts["superproject"] = local_state(sp, skip, skipped.own, skipped.ignore)
    if no_checkout:  # the work trees are as found, the superproject's HEAD included
        parts["where"] = "BISECT_HEAD"
        parts["head"] = sp.worktree.head_state().sha
    return RunIdentity(parts, skip, root, dict(skipped.own), skipped.ignore,
                       frozenset(sp.worktree.gitlinks()))


def _command_parts(opts: RunOptions, root: str) -> dict[str, Any]:
    """The commands and how their outcome is judged."""
    parts: dict[str, Any] = {
        "build": _rooted(opts.build, root) if opts.build else opts.build,
        "repro": [_rooted(word, root) for word in opts.repro],
        "rules": [list(opts.rules.good_if), list(opts.rules.bad_if), list(opts.rules.skip_if)],
        "timeout": opts.timeout,
        "timeout_verdict": opts.timeout_verdict,
        "plugins": [list(x) for x in opts.plugin_options],
    }
    if opts.keep_output != DEFAULT_KEEP:
        # What the rules and the plugins' classifiers see of a long output (a match
        # spanning lines of the dropped middle is lost): only then, so the keys of
        # runs with the default stay as they were.
        parts["keep_output"] = opts.keep_output
    return parts


def workspace_gaps(opts: RunOptions, sp: Repo, moved: Collection[str],
                   skipped: Skipped) -> list[str]:
    """What the user's tree has that a workspace (committed files only) lacks: files the
    commands name that are not committed (the repro itself aside: it runs from the
    user's tree), untracked files and edits of the superproject, edits of the
    submodules the strategy does not move."""
    root = str(sp.workdir)
    named, written = named_files(opts, sp.workdir)
    covered = _Coverage(sp, moved)
    # The repro, a file of the user's tree the workspace lacks, runs from that tree.
    repro = _key_path(opts.repro[0], root) if opts.repro else ""
    gaps = {_key_path(str(p), root): "{} (named by the commands)" for p in named
            if str(p).startswith(root + "/") and not covered(p)}
    skip = frozenset({os.path.realpath(o) for o in skipped.outputs} | written)
    local = local_state(sp, skip, skipped.own, skipped.ignore)
    for p in local["untracked"]:
        gaps.setdefault(p, "untracked {}")
    for p in local["modified"]:
        gaps.setdefault(p, "the local edit of {}")
    for p, state in submodule_states(sp, moved).items():
        if isinstance(state, dict) and state["modified"]:
            gaps.setdefault(p, "the local edits of submodule {}")
    return [text.format(p) for p, text in gaps.items() if p != repro]


def _as_committed(states: dict[str, Any]) -> dict[str, Any]:
    """Submodule states as a workspace holds them: the user's HEAD, no edits."""
    return {p: {"head": s["head"], "modified": {}} if isinstance(s, dict) else s
            for p, s in states.items()}


def _rooted(text: str, root: str) -> str:
    """``text`` with the superproject root spelled :data:`ROOT` (where a path starts with
    it): the same commands in a checkout moved elsewhere have the same key."""
    return re.sub(re.escape(root) + r"(?=/|$|[\s'\";:&|()<>=,])", ROOT, text)


def _key_path(path: str, root: str) -> str:
    """A path as the key holds it: relative to the superproject root when inside it."""
    return path[len(root) + 1:] if path.startswith(root + "/") else path


class _Coverage:
    """Is a file's content already in the key through a tree (see :func:`run_identity`)?
    Tracked by the superproject, or tracked by a submodule the strategy checks out: an
    untracked file inside that submodule is in no tree, so it is hashed."""

    def __init__(self, sp: Repo, moved: Collection[str]) -> None:
        self.sp, self.moved = sp, sorted(moved, key=len, reverse=True)
        self._repos: dict[str, Repo | None] = {}

    def __call__(self, path: Path) -> bool:
        try:
            rel = path.relative_to(self.sp.workdir).as_posix()
        except ValueError:
            return False
        for sub in self.moved:
            if rel.startswith(sub + "/"):
                repo = self._repo(sub)
                return repo is not None and repo.worktree.index_has(rel[len(sub) + 1:])
        return self.sp.worktree.index_has(rel)

    def _repo(self, sub: str) -> Repo | None:
        if sub not in self._repos:
            self._repos[sub] = None
            with contextlib.suppress(BadInput):
                self._repos[sub] = Repo(self.sp.workdir / sub)
        return self._repos[sub]


def shape_material(sp: Repo) -> dict[str, dict[str, Any]]:
    """``{shape: {repository: material}}``: what the clone shapes of the superproject
    (``"."``) and of each checked-out submodule add to the key
    (:meth:`bisectkit.git.shapes.Shape.cache_material`: a sparse checkout's patterns
    decide which files the build sees, so a verdict tested in another cone is not the
    same test)."""
    found: dict[str, dict[str, Any]] = {}
    repos = {".": sp}
    for path in sorted(sp.worktree.gitlinks()):
        with contextlib.suppress(BadInput):
            if (sp.workdir / path / ".git").exists():
                repos[path] = Repo(sp.workdir / path)
    for key, repo in repos.items():
        for name, material in shapes.cache_material(repo).items():
            found.setdefault(name, {})[key] = material
    return found
