"""The verdict cache: verdicts keyed by what was tested.

The key is the tested trees plus the run's :class:`~bisectkit.store.cachekey.RunIdentity`
(commands, rules, files, environment, local state: :mod:`bisectkit.store.cachekey`),
so a cached verdict is reused across sessions and ranges only when the same
test would run again. A verdict is kept only when it is the commit's: never
one a timeout or the machine decided, never one tested while the
superproject's untracked or edited files were changing.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from bisectkit.git import cli as gitcli
from bisectkit.model import Step, Verdict
from bisectkit.store import keydiff
from bisectkit.store.cachekey import RunIdentity
from bisectkit.store.pathglobs import literal_pattern
from bisectkit.store.session import SessionStore


class VerdictCache:
    """Verdicts keyed by what was tested (trees on disk + :class:`RunIdentity`).

    Also counts, for the run, the trees it looked up that have a verdict under
    any key, and those whose verdicts were tested with other inputs only: see
    :meth:`not_reused`. ``notify`` gets one line the first time that happens,
    and the first time an entry turns out damaged. ``changed`` says which of
    the superproject's untracked or edited files differ from the key (checked
    before each verdict is kept: once some do, the run's verdicts are dropped
    and no more are kept).
    """

    def __init__(self, store: SessionStore, identity: RunIdentity,
                 notify: Callable[[str], None] | None = None,
                 changed: Callable[[], list[str]] | None = None) -> None:
        self._store = store
        self.identity = identity
        self._key_material = identity.text()
        self._inputs = hashlib.sha256(
            self._key_material.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self._summary = keydiff.summary(identity.parts)
        self._data = store.load_cache()
        self._notify = notify
        self._changed = changed
        #: trees digest -> the inputs of the entries for those trees (latest last).
        self._by_trees: dict[str, list[str]] = {}
        for entry in self._data.entries.values():
            if entry.get("trees"):
                self._by_trees.setdefault(entry["trees"], []).append(entry.get("inputs", ""))
        self._known: set[str] = set()
        self._missed: dict[str, str] = {}
        #: Keys this run wrote (dropped if the local files change during the run).
        self._written: list[str] = []
        #: Local files that changed since the key was read (then nothing more is kept).
        self.changed_files: list[str] = []
        #: Entries found, at lookup, under a key they were not written for.
        self.damaged_hits = 0

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
        digest = _trees_digest(trees)
        hit = self._valid(self._data.entries.get(self.key(trees)), digest)
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

    def _valid(self, hit: dict[str, Any] | None, digest: str) -> dict[str, Any] | None:
        """``hit``, if it says it was written for these trees and these inputs (an entry
        moved to another key, by a hand merge of two files say, is damaged: tested again
        and overwritten). Entries of format 1 say nothing: their key is all there is."""
        if hit is None or (hit.get("trees", digest) == digest
                           and hit.get("inputs", self._inputs) == self._inputs):
            return hit
        self.damaged_hits += 1
        if self.damaged_hits == 1 and self._notify is not None:
            self._notify(f"note: a damaged entry of the verdict cache {self._store.cache_path} "
                         "was ignored: it was written for other trees or inputs than its key "
                         "says (tested again)")
        return None

    def put(self, trees: tuple[str, ...], verdict: Verdict, reason: str,
            step: Step | None = None) -> None:
        """Keep a verdict, unless it may not be the commit's: a command of the step timed
        out (the machine's load, this time), the machine decided a skip
        (``step.environment``), or the superproject's local files changed during the run."""
        if step is not None and (step.timed_out or step.environment is not None):
            return
        if not self.unchanged():
            return
        entry: dict[str, Any] = {"verdict": verdict, "reason": reason,
                                 "trees": _trees_digest(trees), "inputs": self._inputs}
        if step is not None and (step.flags or step.extra):
            # A cached verdict keeps what plugins noted (flaky runs, crash kinds).
            entry.update(flags=list(step.flags), extra=step.extra)
        key = self.key(trees)
        self._data.entries[key] = entry
        self._written.append(key)
        self._data.inputs.pop(self._inputs, None)  # the most recently used last
        self._data.inputs[self._inputs] = self._summary
        self._store.save_cache(self._data)

    def unchanged(self) -> bool:
        """Do the superproject's untracked and edited files still hold what the key says?
        The first time they do not, the verdicts this run kept are dropped: they may have
        been tested with the files changing, under a key that says otherwise."""
        if not self.changed_files and self._changed is not None:
            self.changed_files = self._changed()
            if self.changed_files and self._written:
                for key in self._written:
                    self._data.entries.pop(key, None)
                self._written.clear()
                self._store.save_cache(self._data)
        return not self.changed_files

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
            command = gitcli.shown("config", "--add", "bisectkit.cacheIgnore",
                                   literal_pattern(local[0]))
            text += f" (if the build does not read it: {command})"
        elif local:
            text += (" (for those the build does not read: git config --add "
                     "bisectkit.cacheIgnore PATTERN)")
        return text


def _trees_digest(trees: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join(trees).encode("utf-8", "surrogateescape")).hexdigest()[:16]
