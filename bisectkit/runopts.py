"""How steps are run (``RunOptions``) and the verdict cache keyed by what was tested.

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
import stat
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisectkit.errors import BadInput
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
        h = hashlib.sha256(self._key_material.encode())
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


#: An untracked superproject file up to this size is hashed by content...
CONTENT_LIMIT = 1 << 20
#: ...while one run's scan has read less than this; the rest are keyed by size and mtime,
#: so an in-tree build directory git does not ignore costs stats, not gigabytes of reads.
SCAN_BUDGET = 64 << 20


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
    skip = frozenset({os.path.realpath(o) for o in outputs} | written)
    parts["superproject"] = local_state(sp, skip)
    return RunIdentity(parts, skip)


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
        inner, out = _shell_words(word)
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


def _shell_words(text: str) -> tuple[list[str], list[str]]:
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


def file_digest(path: str | Path, small: bool = False) -> str:
    """sha256 of a file's content, whatever its size (``small``: read in one go)."""
    try:
        with open(path, "rb") as fh:
            if small:  # thousands of small untracked files: skip file_digest's buffer
                return hashlib.sha256(fh.read()).hexdigest()
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        # The repro cannot read it either; a change of that is still a change.
        return f"unreadable: {exc.strerror}"


def input_digest(path: Path) -> str:
    """sha256 of a ``--cache-input``: a file's content, or a directory's files (recursively:
    sorted relative paths, link targets and contents; ``.git`` skipped)."""
    if not path.is_dir():
        return file_digest(path)
    h = hashlib.sha256()
    for top, dirs, files in os.walk(path, onerror=_raise):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            if name == ".git":
                continue
            full = Path(top, name)
            rel = full.relative_to(path).as_posix()
            what = "link " + os.readlink(full) if full.is_symlink() else file_digest(full)
            h.update(f"{rel}\0{what}\0".encode("utf-8", "surrogateescape"))
        # Symlinks to directories are not followed (os.walk lists them as dirs).
        for name in dirs:
            link = Path(top, name)
            if link.is_symlink():
                h.update(f"{link.relative_to(path).as_posix()}\0link "
                         f"{os.readlink(link)}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _raise(exc: OSError) -> None:
    raise BadInput(f"--cache-input: cannot read {exc.filename}: {exc.strerror}")


def submodule_states(sp: Repo, moved: Collection[str]) -> dict[str, Any]:
    """HEAD and local edits of every submodule the strategy does not check out.

    Those stay wherever the user left them for the whole bisection, which may
    not be what the superproject pins: the build uses them as they are.
    """
    states: dict[str, Any] = {}
    for path in sorted(set(sp.gitlinks()) - set(moved)):
        if not (sp.workdir / path / ".git").exists():
            states[path] = "not initialised"
            continue
        try:
            sub = Repo(sp.workdir / path)
            head = sub.head_state().sha
        except BadInput as exc:
            states[path] = f"unreadable: {exc}"
            continue
        changes = sub.local_changes(untracked=False)
        states[path] = {"head": head, "modified": {
            p: _state_of(f"{sub.workdir}/{p}") for p in changes.modified}}
    return states


def local_state(sp: Repo, skip: Collection[str]) -> dict[str, dict[str, str]]:
    """The superproject's local edits and untracked files (not ignored), path -> digest.

    ``skip``: absolute paths of files the run writes itself. Contents are read
    smallest file first, each up to :data:`CONTENT_LIMIT` and all together up
    to :data:`SCAN_BUDGET` (so small inputs are read even beside a build
    directory git does not ignore); the files left over are keyed by size and
    mtime (in nanoseconds).
    """
    changes = sp.local_changes(untracked=True)
    root = str(sp.workdir)
    state: dict[str, dict[str, str]] = {}
    regular: list[tuple[int, str, str, os.stat_result]] = []
    for kind, paths in (("modified", changes.modified), ("untracked", changes.untracked)):
        state[kind] = {}
        for rel in paths:
            # Plain strings, not Path: pathlib's overhead was most of a 5,000-file scan.
            full = f"{root}/{rel.rstrip('/')}"
            if full in skip:
                continue
            try:
                st = os.lstat(full)
            except OSError as exc:
                state[kind][rel] = _unreadable(exc)
                continue
            if stat.S_ISREG(st.st_mode):
                regular.append((st.st_size, kind, rel, st))
            else:
                state[kind][rel] = _special(full, st)
    budget = SCAN_BUDGET
    for size, kind, rel, st in sorted(regular, key=lambda r: (r[0], r[2])):
        if size <= CONTENT_LIMIT and size <= budget:
            budget -= size
            state[kind][rel] = file_digest(f"{root}/{rel}", small=True)
        else:
            state[kind][rel] = f"size {size} mtime_ns {st.st_mtime_ns}"
    return state


def _state_of(path: str) -> str:
    """A tracked file's content digest (or what it is instead: deleted, a link...)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return _unreadable(exc)
    return file_digest(path) if stat.S_ISREG(st.st_mode) else _special(path, st)


def _special(path: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "link " + os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "directory"  # a nested repository: not looked into
    return f"mode {st.st_mode:o}"


def _unreadable(exc: OSError) -> str:
    return "deleted" if isinstance(exc, FileNotFoundError) else f"unreadable: {exc.strerror}"
