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
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bisectkit.sparse as sparse
from bisectkit.errors import BadInput
from bisectkit.fingerprint import (
    file_digest,
    input_digest,
    local_state,
    submodule_states,
)
from bisectkit.git import Repo
from bisectkit.model import RunOptions, Step, Verdict
from bisectkit.session import SessionStore


@dataclass(frozen=True)
class RunIdentity:
    """What besides the trees decides a verdict, as read at the start of a run."""

    #: Commands, rules, named files, ``--cache-input``, submodules, superproject files.
    parts: dict[str, Any]
    #: Absolute paths of the files the run writes itself (never inputs).
    outputs: frozenset[str]

    def text(self) -> str:
        """The key material (stable: sorted JSON)."""
        return json.dumps(self.parts, sort_keys=True)

    def changed_local_files(self, sp: Repo) -> list[str]:
        """Untracked or edited superproject files that differ from the start of the run."""
        before: dict[str, dict[str, str]] = self.parts["superproject"]
        now = local_state(sp, self.outputs)
        return sorted({p for kind in ("modified", "untracked")
                       for p in before[kind].keys() | now[kind].keys()
                       if before[kind].get(p) != now[kind].get(p)})


class VerdictCache:
    """Verdicts keyed by what was tested (trees on disk + :class:`RunIdentity`)."""

    def __init__(self, store: SessionStore, identity: RunIdentity) -> None:
        self._store = store
        self.identity = identity
        self._key_material = identity.text()
        self._data = store.load_cache()

    def key(self, trees: Sequence[str]) -> str:
        h = hashlib.sha256(self._key_material.encode("utf-8", "surrogateescape"))
        for t in trees:
            h.update(b"\0" + t.encode())
        return h.hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        return self._data.get(key)

    def put(self, key: str, verdict: Verdict, reason: str, step: Step | None = None) -> None:
        if "timed out" in reason:
            return  # a timeout may be the machine's fault this time: test again next time
        entry: dict[str, Any] = {"verdict": verdict, "reason": reason}
        if step is not None and (step.flags or step.extra):
            # A cached verdict keeps what plugins noted (flaky runs, crash kinds).
            entry.update(flags=list(step.flags), extra=step.extra)
        self._data[key] = entry
        self._store.save_cache(self._data)


def run_identity(opts: RunOptions, sp: Repo, moved: Collection[str] = (),
                 outputs: Collection[str] = ()) -> RunIdentity:
    """Everything besides the tested trees that decides a verdict, read once per run.

    ``moved``: the submodules the strategy checks out (the trees cover them);
    ``outputs``: files the run writes (``--json``, ``--report``, ``--trace``).
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
    skip = frozenset({os.path.realpath(o) for o in outputs} | written)
    parts["superproject"] = local_state(sp, skip)
    return RunIdentity(parts, skip)


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


def named_files(opts: RunOptions, root: Path) -> tuple[list[Path], set[str]]:
    """Existing regular files named by the build and repro words, and the files they write.

    Words are the argv words and the shell words inside them (``sh -c
    './repro.sh input'``, ``--build``); relative ones are relative to the
    superproject root, where the commands run; ``--opt=FILE`` and ``VAR=FILE``
    name FILE. The target of a shell redirection (``> log``, ``>> log``) or of
    ``tee`` is an output, not an input: never hashed. Directories are never
    hashed from here (``.`` or ``build`` would mean the whole tree, or a build
    directory that changes at every step): ``--cache-input DIR`` adds one.
    """
    words: list[str] = []
    outputs: set[str] = set()
    for word in [*opts.repro, *([opts.build] if opts.build else [])]:
        words.append(word)
        inner, out = shell_words(word)
        words += inner
        outputs |= {_resolve(w, root) for w in out}
    found: dict[str, Path] = {}
    for word in words:
        for candidate in (word, word.partition("=")[2]):
            if not candidate:
                continue
            path = _resolve(candidate, root)
            with contextlib.suppress(OSError, ValueError):
                if path not in outputs and Path(path).is_file():
                    found.setdefault(path, Path(path))
    return [found[k] for k in sorted(found)], outputs


def shell_words(text: str) -> tuple[list[str], list[str]]:
    """(words, redirection and tee targets) of ``text`` read as a shell command."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # not valid shell (an unbalanced quote): nothing more to find
        return [], []
    words: list[str] = []
    outputs: list[str] = []
    redirect = tee = False
    for token in tokens:
        if token and all(c in lexer.punctuation_chars for c in token):
            redirect, tee = ">" in token, False
            continue
        if redirect or (tee and not token.startswith("-")):
            outputs.append(token)  # tee writes every file it is given
        else:
            words.append(token)
            tee = (tee and token.startswith("-")) or os.path.basename(token) == "tee"
        redirect = False
    return words, outputs


def _resolve(word: str, root: Path) -> str:
    path = os.path.expanduser(word)
    return os.path.normpath(path if os.path.isabs(path) else root / path)


def _covered(path: Path, sp: Repo, moved: Collection[str]) -> bool:
    """Is ``path``'s content already in the key through a tree (see :func:`run_identity`)?"""
    try:
        rel = path.relative_to(sp.workdir).as_posix()
    except ValueError:
        return False
    if any(rel == m or rel.startswith(m + "/") for m in moved):
        return True
    return sp.index_has(rel)

