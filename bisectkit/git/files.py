"""Does a file in a work tree hold what a checkout of a blob writes there?

git writes a blob through the filters that ``.gitattributes`` and the config
name: end-of-line conversion (``core.autocrlf``, ``text``, ``eol``), ``ident``,
smudge drivers such as Git LFS's. So a file's raw bytes may differ from the
blob right after a checkout, and a status may call a file modified that
nobody touched: libgit2 runs no external driver, and git itself reports a
CRLF file under ``text eol=lf`` modified right after checking it out. The
restore (:mod:`bisectkit.safety.worktree`) and the tree-under-test check
(:mod:`bisectkit.safety.undertest`) therefore judge a path by its bytes: equal to
``git cat-file --filters`` of a blob it may hold (raw equality first: one
hash, no process), with the blob's kind (file, executable, link).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path
from typing import IO

import pygit2

import bisectkit.git.cli as gitcli
from bisectkit.git.objects import GITLINK_MODE, TREE_MODE
from bisectkit.git.repo import Repo

#: (blob id, mode) of a tree or index entry; ``None`` where there is none.
Entry = tuple[str, int] | None

_LINK = 0o120000
_EXEC = 0o100755
_CHUNK = 1 << 16


class Held(Enum):
    """What a path holds compared with one entry's checkout."""

    SAME = "same"
    #: Nothing, or the beginning of the checkout: what a git killed while writing the file
    #: leaves (it unlinks the old file, then writes the new one front to back).
    START = "start"
    OTHER = "other"


def hash_on_disk(repo: Repo, path: str) -> str | None:
    """Blob id of the file (or link) at ``path`` in the work tree, raw bytes; ``None`` if
    absent."""
    full = repo.workdir / path
    try:
        if full.is_symlink():
            return str(pygit2.hash(os.fsencode(os.readlink(full))))
        if full.is_file():
            return str(pygit2.hashfile(str(full)))
    except OSError:
        return None
    return None


def holds(repo: Repo, path: str, entries: Iterable[Entry]) -> bool:
    """Does ``path`` hold exactly what a checkout of one of ``entries`` writes (``None``:
    nothing there)?"""
    return any(compare(repo, path, e) is Held.SAME for e in set(entries))


def trace_of(repo: Repo, path: str, entries: Iterable[Entry]) -> bool:
    """Could a git killed while checking out one of ``entries`` at ``path`` have left what
    is there: nothing, one of them whole, or the beginning of one?"""
    return any(compare(repo, path, e) is not Held.OTHER for e in set(entries))


def really_changed(repo: Repo, commit: str, paths: Sequence[str]) -> list[str]:
    """Of ``paths`` (a status called them changed), those that do differ from ``commit``:
    not a path whose index entry is ``commit``'s and whose bytes are a checkout of it."""
    if not paths:
        return []
    tree = repo.tree_of(commit)
    found = []
    for path in paths:
        entry = repo.trees.entry_at(tree, path)
        if repo.worktree.index_entry(path) != entry or not holds(repo, path, [entry]):
            found.append(path)
    return found


def flagged(repo: Repo) -> frozenset[tuple[str, str]]:
    """(tag, path) of every index entry git status does not look at: marked skip-worktree
    (tag ``S``, a sparse checkout's too) or assume-unchanged (a lower-case tag).

    Asked after every build and repro: the answer is kept for as long as the index is
    the same file content (its trailing checksum), so that an unchanged index of
    150,000 entries is not listed again."""
    index = repo.git_dir / "index"
    seal = _index_seal(index)
    known = _FLAGGED.get(index)
    if known is not None and seal is not None and known[0] == seal:
        return known[1]
    listing = gitcli.read_bytes(repo.workdir, f"cannot list the index of {repo.workdir}",
                                "ls-files", "-v", "-z")
    # Records "T path", NUL-terminated: the few marked ones are picked out by the regular
    # expression (each record after a NUL), not by a Python loop over every entry (20 ms
    # a step at 150,000; this, 3 ms).
    found = frozenset((tag.decode("ascii"), os.fsdecode(path))
                      for tag, path in _MARKED.findall(b"\0" + listing))
    if seal is not None and _index_seal(index) == seal:  # not rewritten while listed
        _FLAGGED[index] = (seal, found)
    return found


#: A record of ``git ls-files -v -z`` whose tag says skip-worktree (``S``) or assume-unchanged
#: (lower case): the tag and the path.
_MARKED = re.compile(rb"\0([Sa-z]) ([^\0]+)")

#: index file -> (its seal, its flagged entries) as last listed.
_FLAGGED: dict[Path, tuple[bytes, frozenset[tuple[str, str]]]] = {}


def _index_seal(index: Path) -> bytes | None:
    """What tells one content of ``index`` from another: git's trailing checksum of it
    (SHA-1 or SHA-256), or with ``index.skipHash`` (no checksum: zeros) a digest of the
    whole file; ``None`` when it cannot be read."""
    try:
        with open(index, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - 32))
            tail = f.read()
            if len(tail) == 32 and tail[-20:] != bytes(20):
                return tail
            f.seek(0)
            return hashlib.sha256(f.read()).digest()
    except OSError:
        return None


def compare(repo: Repo, path: str, entry: Entry) -> Held:
    """What ``path`` in the work tree holds compared with a checkout of ``entry``."""
    full = repo.workdir / path
    try:
        st = os.lstat(full)
    except OSError:  # absent (or not reachable: a file where a folder should be)
        return Held.SAME if entry is None else Held.START
    if entry is None:
        return Held.OTHER
    blob, mode = entry
    if mode in (TREE_MODE, GITLINK_MODE):
        return Held.SAME if stat.S_ISDIR(st.st_mode) else Held.OTHER
    if (mode == _LINK) != stat.S_ISLNK(st.st_mode) or \
            not (stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return Held.OTHER
    if mode != _LINK and _filemode(repo) and (mode == _EXEC) != bool(st.st_mode & 0o100):
        return Held.OTHER
    if hash_on_disk(repo, path) == blob:
        return Held.SAME
    if mode == _LINK:
        return Held.OTHER  # a link is made whole or not at all
    return _against_checkout(repo, path, blob)


def _filemode(repo: Repo) -> bool:
    """Does git track the executable bit here (``core.fileMode``, true unless set false)?"""
    value = (repo.config_get("core.filemode") or "true").strip().lower()
    return value not in ("false", "no", "off", "0")


def _against_checkout(repo: Repo, path: str, blob: str) -> Held:
    """The file at ``path`` against the bytes git's filters make of ``blob`` there, read
    side by side (a large file is never held in memory whole)."""
    argv = gitcli.argv("--no-optional-locks", "cat-file", "--filters", f"--path={path}", blob)
    # Its own session: a stop signal to bisectkit's process group (during a restore, which
    # ignores it) must not cut the checkout's bytes short, which would read as the
    # beginning of a file a killed git left.
    with subprocess.Popen(argv, cwd=repo.workdir, env=gitcli.git_env(),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, start_new_session=True) as proc:
        assert proc.stdout is not None
        try:
            with open(repo.workdir / path, "rb") as disk:
                found = _side_by_side(proc.stdout, disk)
        except OSError:
            found = Held.OTHER
        if found is not Held.SAME:
            proc.kill()  # the answer is known: a git still writing would block the wait
        proc.stdout.close()
    # Read to its end, the stream is the blob only if git succeeded (a blob it cannot give
    # prints nothing: an empty file would look like its checkout).
    return Held.OTHER if found is Held.SAME and proc.returncode != 0 else found


def _side_by_side(want: IO[bytes], disk: IO[bytes]) -> Held:
    """``disk`` against the stream ``want``: the same bytes, the beginning of them, or not."""
    while True:
        expected = want.read(_CHUNK)
        if not expected:
            return Held.SAME if not disk.read(1) else Held.OTHER
        have = disk.read(len(expected))
        if have == expected:
            continue
        if len(have) < len(expected) and expected.startswith(have):
            return Held.START
        return Held.OTHER
