"""The verdict cache: verdicts keyed by what was tested, and the key's material.

A verdict depends on the trees on disk and on everything that built and
judged them: commands, rules, timeout, plugins and their options, every file
the commands name, ``--cache-input`` paths, the submodules the strategy does
not move and the superproject's local edits and untracked files. The cache
key covers all of it (:func:`run_identity`), so a cached verdict is reused
across sessions and ranges only when the same test would run again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bisectkit.sparse as sparse
from bisectkit import keydiff
from bisectkit.commandinputs import command_env, named_files
from bisectkit.envscan import env_part, names_in_files
from bisectkit.errors import BadInput
from bisectkit.fingerprint import (
    file_digest,
    input_digest,
    local_state,
    submodule_states,
)
from bisectkit.git import Repo
from bisectkit.model import RunOptions, Step, Verdict
from bisectkit.pathglobs import PathGlobs
from bisectkit.session import SessionStore


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

    def text(self) -> str:
        """The key material (stable: sorted JSON)."""
        return json.dumps(self.parts, sort_keys=True)

    def changed_local_files(self, sp: Repo) -> list[str]:
        """Untracked or edited superproject files that differ from the start of the run."""
        before: dict[str, dict[str, str]] = self.parts["superproject"]
        now = local_state(sp, self.outputs, self.own, self.ignore)
        return sorted({p for kind in ("modified", "untracked")
                       for p in before[kind].keys() | now[kind].keys()
                       if before[kind].get(p) != now[kind].get(p)})


class VerdictCache:
    """Verdicts keyed by what was tested (trees on disk + :class:`RunIdentity`).

    Also counts, for the run, the trees it looked up that have a verdict under
    any key, and those whose verdicts were tested with other inputs only: see
    :meth:`not_reused`. ``notify`` gets one line the first time that happens.
    """

    def __init__(self, store: SessionStore, identity: RunIdentity,
                 notify: Callable[[str], None] | None = None) -> None:
        self._store = store
        self.identity = identity
        self._key_material = identity.text()
        self._inputs = hashlib.sha256(self._key_material.encode()).hexdigest()[:16]
        self._summary = keydiff.summary(identity.parts)
        self._data = store.load_cache()
        self._notify = notify
        #: trees digest -> the inputs of the entries for those trees (latest last).
        self._by_trees: dict[str, list[str]] = {}
        for entry in self._data.entries.values():
            if entry.get("trees"):
                self._by_trees.setdefault(entry["trees"], []).append(entry.get("inputs", ""))
        self._known: set[str] = set()
        self._missed: dict[str, str] = {}

    @property
    def problem(self) -> str | None:
        """Why the cache file was not used at all (None: it was, or there was none)."""
        return self._data.problem

    @property
    def damaged(self) -> int:
        """Entries of the file ignored because they are not valid verdicts."""
        return self._data.damaged

    def key(self, trees: tuple[str, ...]) -> str:
        h = hashlib.sha256(self._key_material.encode("utf-8", "surrogateescape"))
        for t in trees:
            h.update(b"\0" + t.encode("utf-8", "surrogateescape"))  # a Latin-1 path
        return h.hexdigest()

    def get(self, trees: tuple[str, ...]) -> dict[str, Any] | None:
        """The cached verdict of ``trees`` under this run's inputs, if any."""
        hit = self._data.entries.get(self.key(trees))
        digest = _trees_digest(trees)
        others = [i for i in self._by_trees.get(digest, ()) if i != self._inputs]
        if hit is not None or others:
            self._known.add(digest)
        if hit is None and others and digest not in self._missed:
            first = not self._missed
            self._missed[digest] = others[-1]
            if first and self._notify is not None:
                self._notify(f"note: verdicts cached for this tree are not reused: "
                             f"{self._reasons(others[-1])}")
        return hit

    def put(self, trees: tuple[str, ...], verdict: Verdict, reason: str,
            step: Step | None = None) -> None:
        if "timed out" in reason:
            return  # a timeout may be the machine's fault this time: test again next time
        entry: dict[str, Any] = {"verdict": verdict, "reason": reason,
                                 "trees": _trees_digest(trees), "inputs": self._inputs}
        if step is not None and (step.flags or step.extra):
            # A cached verdict keeps what plugins noted (flaky runs, crash kinds).
            entry.update(flags=list(step.flags), extra=step.extra)
        self._data.entries[self.key(trees)] = entry
        self._data.inputs.pop(self._inputs, None)  # the most recently used last
        self._data.inputs[self._inputs] = self._summary
        self._store.save_cache(self._data)

    def not_reused(self) -> str | None:
        """``N of M known verdicts reused: <what changed>``, when cached verdicts of trees
        this run looked up were tested with other inputs (None: all reused, or none known)."""
        if not self._missed:
            return None
        reused = len(self._known - self._missed.keys())
        other = Counter(self._missed.values()).most_common(1)[0][0]
        return f"{reused} of {len(self._known)} known verdicts reused: {self._reasons(other)}"

    def _reasons(self, other: str) -> str:
        """What differs between the inputs ``other`` and this run's, with the fix for
        superproject files the build does not read."""
        before = self._data.inputs.get(other)
        if before is None:
            return "the key changed (its parts are no longer recorded)"
        changes = keydiff.differences(before, self._summary, self.identity.root)
        text = keydiff.describe(changes)
        local = [c.item for c in changes if c.part in ("untracked", "modified")]
        if len(local) == 1:
            text += (f" (if the build does not read it: git config --add "
                     f"bisectkit.cacheIgnore {local[0]})")
        elif local:
            text += (" (for those the build does not read: git config --add "
                     "bisectkit.cacheIgnore PATTERN)")
        return text


def _trees_digest(trees: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join(trees).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def run_identity(opts: RunOptions, sp: Repo, moved: Collection[str] = (),
                 outputs: Collection[str] = (), own: Mapping[str, str] | None = None,
                 declared_env: Collection[str] = ()) -> RunIdentity:
    """Everything besides the tested trees that decides a verdict, read once per run.

    ``moved``: the submodules the strategy checks out (the trees cover them);
    ``outputs``: files the run writes (``--json``, ``--report``, ``--trace``);
    ``own``: files earlier runs wrote (real path -> digest of what they wrote);
    ``declared_env``: environment variables plugins say their commands read.
    Read at the start of the run, so files the build writes during the run do
    not matter within it; in the next run a changed input means testing again.
    """
    parts: dict[str, Any] = {
        "build": opts.build,
        "repro": list(opts.repro),
        "rules": [list(opts.rules.good_if), list(opts.rules.bad_if), list(opts.rules.skip_if)],
        "timeout": opts.timeout,
        "timeout_verdict": opts.timeout_verdict,
        "plugins": [list(x) for x in opts.plugin_options],
    }
    root = sp.workdir
    named, written = named_files(opts, root)
    # A file the superproject tracks is covered by its tree in the key (and by
    # the local changes below when edited); one inside a checked-out submodule
    # by that submodule's tree. Hashing them too would make the key depend on
    # which candidate happens to be checked out when the run starts.
    parts["files"] = {str(path): file_digest(path) for path in named
                      if not _covered(path, sp, moved)}
    parts["cache_inputs"] = {p: input_digest(Path(p)) for p in opts.cache_inputs}
    parts["submodules"] = submodule_states(sp, moved)
    shapes = sparse_shapes(sp)
    if shapes:  # only then: the keys of checkouts that are not sparse stay as they were
        parts["sparse"] = shapes
    env = env_part([*command_env(opts), *names_in_files(named), *opts.cache_env,
                    *sp.config_get_all("bisectkit.cacheEnv"), *declared_env], os.environ)
    if env:  # likewise: commands that read no variable keep their keys
        parts["env"] = env
    skip = frozenset({os.path.realpath(o) for o in outputs} | written)
    ignore = PathGlobs(sp.config_get_all("bisectkit.cacheIgnore"))
    parts["superproject"] = local_state(sp, skip, own or {}, ignore)
    return RunIdentity(parts, skip, str(root), dict(own or {}), ignore)


def sparse_shapes(sp: Repo) -> dict[str, Any]:
    """The sparse-checkout patterns of the superproject (``"."``) and of each checked-out
    submodule that has them: they decide which files the build sees, so a verdict
    tested in another cone is not the same test."""
    shapes: dict[str, Any] = {}
    repos = {".": sp}
    for path in sorted(sp.gitlinks()):
        with contextlib.suppress(BadInput):
            if (sp.workdir / path / ".git").exists():
                repos[path] = Repo(sp.workdir / path)
    for key, repo in repos.items():
        shape = sparse.of(repo)
        if shape is not None:
            shapes[key] = {"cone": shape.cone, "patterns": shape.text}
    return shapes


def _covered(path: Path, sp: Repo, moved: Collection[str]) -> bool:
    """Is ``path``'s content already in the key through a tree (see :func:`run_identity`)?"""
    try:
        rel = path.relative_to(sp.workdir).as_posix()
    except ValueError:
        return False
    if any(rel == m or rel.startswith(m + "/") for m in moved):
        return True
    return sp.index_has(rel)

