"""The commit graph's questions, asked of the git CLI: ancestry, merge-bases, range walks.

libgit2 answers "is A an ancestor of D?" and "what is the merge-base of A and B?"
by parsing every commit it walks, and it does not read git's commit-graph file;
git does, and its generation numbers let it stop a walk early. On a history the
size of llvm-project (550,000 commits) a libgit2 merge-base took 2.9 s and 490 MB,
``git merge-base`` on a commit-graph 0.15 s and 50 MB; "is a local patch in this
upstream commit?" (no: the patch is newer) 2.2 s without the file, 0.00 s with it.

The commit-graph is git's own cache of the commit graph
(``objects/info/commit-graph``, or a chain in ``objects/info/commit-graphs/``): ``git
gc`` writes it, so does ``git fetch`` with ``fetch.writeCommitGraph``. Where a
repository has none, :meth:`Graph.ensure` has git write one (``git commit-graph write
--reachable``: git writes it under a lock file and renames it into place, so a kill
leaves the old state or the new one), as ``git gc`` would, once: 3-5 s for
550,000 commits, then every later question and session reads it. It writes nothing
where git would not use or want one: a shallow clone (git ignores the file there),
``core.commitGraph=false`` or ``gc.writeCommitGraph=false`` (read by git, so that ``git -c
core.commitGraph=false bisect-patched ...`` counts too). A write that fails (a lock file
left behind, a full disk) is remembered for a day in ``<git dir>/bisectkit-commit-graph-
failed``, git's words in it: the processes of a session do not each try again (at
llvm-project's size a write that fails at the end costs its 3-5 s each time); the
questions are answered all the same, more slowly. A commit-graph that
does not cover the newest commits (fetched since) still answers: git walks the
commits it lacks, then uses the file.

Every question runs with ``--no-replace-objects``: answers are about the commits
themselves, as libgit2's were (``refs/replace`` grafts nothing here), and git
reads the commit-graph even where replace refs exist.

Performance: nothing here holds a structure proportional to the history. A walk
(:meth:`Graph.walk`) is streamed line by line; what git holds meanwhile is its
own (the commit-graph is mapped, not read).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import bisectkit.git.cli as gitcli
from bisectkit.errors import GitFailure

#: What precedes every graph question's subcommand (see the module docstring).
_NO_REPLACE = "--no-replace-objects"
#: A walk reads commits and trees from all over the pack: git maps it in 1 GiB windows
#: by default and keeps every page it touched resident, so the pack counted whole in
#: its memory (430 of the 600 MB a commit-graph write of 550,000 commits took), and it
#: keeps up to 96 MiB of delta bases. Small windows, 16 MiB at most mapped, 8 MiB of
#: bases: the same time, a third of the peak (the path-limited walk over 110,000
#: upstream commits: 212 MB -> 170 MB; the write: 600 -> 256 MB).
_WINDOWS = ("-c", "core.packedGitWindowSize=1m", "-c", "core.packedGitLimit=16m",
            "-c", "core.deltaBaseCacheLimit=8m")
#: How deep git follows ``objects/info/alternates`` (its own limit).
_ALTERNATES_DEPTH = 5
#: Where a failed commit-graph write is remembered (in the common git dir), and how long.
FAILED_WRITE = "bisectkit-commit-graph-failed"
_RETRY_AFTER_S = 24 * 3600
#: The config keys that say no to a commit-graph (git's names, lower case).
_GRAPH_KEYS = ("core.commitgraph", "gc.writecommitgraph")


class Graph:
    """The commit graph of one repository, asked of the git CLI."""

    def __init__(self, workdir: Path, git_dir: Path) -> None:
        self.workdir = workdir
        self.git_dir = git_dir
        self._ensured = False

    # -- the commit-graph file --------------------------------------------------
    @property
    def objects(self) -> Path:
        """The object directory (a linked worktree's is its main repository's)."""
        common = self.git_dir / "commondir"
        base = self.git_dir
        if common.is_file():
            base = (self.git_dir / common.read_text(encoding="utf-8").strip()).resolve()
        return base / "objects"

    def has_file(self) -> bool:
        """Does git find a commit-graph for this repository (here or in an alternate)?"""
        return any(_has_graph(d) for d in _object_dirs(self.objects, _ALTERNATES_DEPTH))

    def wanted(self) -> bool:
        """Would git use a commit-graph here, and may one be written as ``git gc`` would?

        The config is git's to read: libgit2 does not see ``git -c key=value`` (git hands
        it to ``git bisect-patched`` in ``GIT_CONFIG_PARAMETERS``), nor a value git reads
        as a boolean that libgit2 spells otherwise."""
        if (self.git_dir / "shallow").exists() or (self.objects.parent / "shallow").exists():
            return False  # git neither writes nor reads one in a shallow clone
        pattern = "^(" + "|".join(k.replace(".", r"\.") for k in _GRAPH_KEYS) + ")$"
        proc = gitcli.run(self.workdir, "config", "-z", "--type=bool", "--get-regexp", pattern)
        if proc.returncode == 1 and not proc.stdout:
            return True  # neither is set
        if proc.returncode != 0:
            return False  # a value that is no boolean: git's own gc would stop on it
        last = dict(rec.partition("\n")[::2] for rec in proc.stdout.split("\0") if rec)
        return all(value == "true" for value in last.values())

    def ensure(self) -> None:
        """Have git write a commit-graph where there is none and git would use one (once
        per process; a failure, another git holding its lock say, only costs time, and is
        remembered: see the module docstring)."""
        if self._ensured:
            return
        self._ensured = True
        if self.has_file() or self._failed_lately() or not self.wanted():
            return
        proc = gitcli.run(self.workdir, *_WINDOWS, _NO_REPLACE, "commit-graph", "write",
                          "--reachable", "--no-progress")
        if proc.returncode != 0:
            detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
            with contextlib.suppress(OSError):  # not even that: the next process tries again
                (self.objects.parent / FAILED_WRITE).write_text(
                    f"git commit-graph write --reachable: {detail}\n", encoding="utf-8")

    def _failed_lately(self) -> bool:
        """Did a write fail here less than a day ago?"""
        try:
            stamp = (self.objects.parent / FAILED_WRITE).stat().st_mtime
        except OSError:
            return False
        return 0 <= time.time() - stamp < _RETRY_AFTER_S

    # -- questions ----------------------------------------------------------------
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Is ``ancestor`` reachable from ``descendant`` (or the same commit)?"""
        self.ensure()
        proc = gitcli.run(self.workdir, *_WINDOWS, _NO_REPLACE, "merge-base",
                          "--is-ancestor", ancestor, descendant)
        if proc.returncode == 0 or (proc.returncode == 1 and not _complained(proc.stderr)):
            return proc.returncode == 0
        raise _failed(f"git merge-base --is-ancestor {ancestor} {descendant}", proc)

    def merge_bases(self, a: str, b: str) -> list[str]:
        """Every best common ancestor of ``a`` and ``b`` (none: no shared history)."""
        self.ensure()
        proc = gitcli.run(self.workdir, *_WINDOWS, _NO_REPLACE, "merge-base", "--all", a, b)
        if proc.returncode == 0 or (proc.returncode == 1 and not _complained(proc.stderr)):
            return proc.stdout.split()  # exit 1, nothing said: no shared history
        raise _failed(f"git merge-base --all {a} {b}", proc)

    def walk(self, tips: Sequence[str], hide: Sequence[str],
             paths: Sequence[str] | None = None) -> Iterator[str]:
        """The commits reachable from ``tips`` and from none of ``hide``, streamed in no set
        order; with ``paths``, a superset of those that change one of them against their
        first parent: every commit with one parent (or none) that changes them, on side
        branches too (``--full-history``), then every merge of the range. Merges come from
        a walk of their own (git's, alongside): which merges a path-limited walk shows
        depends on how they compare with their parents *in the range* (one whose first
        parent lies below it can be left out although its first-parent diff is exactly
        the paths'); the caller compares each with its first parent."""
        self.ensure()
        span = [*tips, *(f"^{h}" for h in hide)]
        if paths is None:
            yield from _Stream(self.workdir, ["rev-list", *span]).lines()
            return
        merges = _Stream(self.workdir, ["rev-list", "--min-parents=2", *span])
        try:
            # git reads stdin by lines, dropping a "\r" before the line feed: a path with
            # a line feed in it, or ending in "\r", goes on the command line (os.fsencode'd:
            # any bytes but NUL).
            if any("\n" in p or p.endswith("\r") for p in paths):
                changing = _Stream(self.workdir, ["rev-list", "--full-history", "--no-merges",
                                                  *span, "--", *paths])
            else:  # many paths would not fit on a command line: on stdin
                changing = _Stream(self.workdir, ["rev-list", "--full-history", "--no-merges",
                                                  *span, "--stdin"],
                                   b"--\n" + b"".join(os.fsencode(p) + b"\n" for p in paths))
            yield from changing.lines()
            yield from merges.lines()
        finally:
            merges.close()

    def first_parents(self, tip: str, hide: Sequence[str]) -> Iterator[tuple[str, bool]]:
        """The first-parent line from ``tip`` back to (excluding) anything reachable from
        ``hide``, newest first, streamed: each commit, and whether it has a parent here.

        ``--topo-order``: on a commit-graph git walks it by generation numbers, exact
        and bounded by the line, whatever the commit dates say (a walk by dates from a
        hidden commit newer than the line goes down until the dates are older: 2 s for a
        3-patch stack at llvm-project's size when its commits are dated before upstream's)."""
        self.ensure()
        args = ["rev-list", "--topo-order", "--first-parent", "--parents", tip,
                *(f"^{h}" for h in hide)]
        for line in _Stream(self.workdir, args).lines():
            sha, *parents = line.split()
            yield sha, bool(parents)


class _Stream:
    """A git command started now (graph settings, paths taken literally; ``feed`` on its
    stdin), its output read line by line as it comes (:meth:`lines`)."""

    def __init__(self, cwd: Path, args: list[str], feed: bytes = b"") -> None:
        self.args = args
        self.proc = subprocess.Popen(
            gitcli.argv(*_WINDOWS, _NO_REPLACE, "--literal-pathspecs", *args), cwd=cwd,
            env=gitcli.git_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True)
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(feed)  # git reads all of it before it walks
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # git stopped already: its words are on stderr

    def lines(self) -> Iterator[str]:
        """Each line of the output; :class:`GitFailure` when git fails."""
        proc = self.proc
        assert proc.stdout is not None and proc.stderr is not None
        try:
            for line in proc.stdout:
                yield line.decode("ascii").strip()
            err = proc.stderr.read()
            code = proc.wait()
        finally:
            self.close()
        if code != 0:
            detail = " ".join(os.fsdecode(err).split()) or f"exit {code}"
            raise GitFailure(f"git {' '.join(self.args)[:200]}: {detail}")

    def close(self) -> None:
        """Stop git if it still runs (its reader gone, it would wait on its pipe)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def _failed(what: str, proc: subprocess.CompletedProcess[str]) -> GitFailure:
    detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
    return GitFailure(f"{what}: {detail}")


def _has_graph(objects: Path) -> bool:
    info = objects / "info"
    return (info / "commit-graph").is_file() or \
        (info / "commit-graphs" / "commit-graph-chain").is_file()


def _object_dirs(objects: Path, depth: int) -> Iterator[Path]:
    """``objects`` and the object directories it borrows from (``info/alternates``)."""
    yield objects
    if depth <= 0:
        return
    try:
        text = (objects / "info" / "alternates").read_text(encoding="utf-8",
                                                           errors="surrogateescape")
    except OSError:
        return
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield from _object_dirs((objects / line).resolve(), depth - 1)


def _complained(stderr: str) -> bool:
    """Did git say something went wrong? ``merge-base`` exits 1 for "no" (not an ancestor,
    no common ancestor) and, before git 2.45, also when it could not read a commit on the
    way ("error: Could not read ..."): that 1 is no answer. Hints and warnings (such as
    the deprecation of grafts) are not complaints."""
    return any(line.startswith(("error:", "fatal:")) for line in stderr.splitlines())
