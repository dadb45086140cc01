"""How steps are run (``RunOptions``) and the verdict cache keyed by what was tested.

A verdict depends on the trees on disk and on everything that built and
judged them: commands, rules, timeout, plugins and their options, and the
contents of the repro and build scripts. The cache key covers all of it, so
a cached verdict is reused across sessions and ranges only when the same
test would run again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisectkit.classify import Rules
from bisectkit.engine import Verdict
from bisectkit.runner import DEFAULT_KEEP
from bisectkit.session import SessionStore
from bisectkit.step import Step

#: ``--max-env-skips`` default: three machine failures in a row are not bad luck.
DEFAULT_MAX_ENV_SKIPS = 3


@dataclass(frozen=True)
class RunOptions:
    """How each step is built and tested."""

    repro: tuple[str, ...]
    build: str | None = None
    rules: Rules = Rules()
    timeout: float | None = None
    timeout_verdict: Verdict = "skip"
    use_cache: bool = True
    #: Plugin-added option values that change verdicts (part of the cache key).
    plugin_options: tuple[tuple[str, str], ...] = ()
    #: ``-p`` plugins and their options as command-line words (for follow-up commands).
    plugin_argv: tuple[str, ...] = ()
    #: Characters of each command's output kept (``--keep-output``); not part of the cache
    #: key: the lines the rules match are kept whatever the limit.
    keep_output: int = DEFAULT_KEEP
    #: Test an untested end the answer rests on (``--no-verify`` turns it off).
    verify_ends: bool = True
    #: Consecutive steps skipped for the machine's sake that stop the run (0: never).
    max_env_skips: int = DEFAULT_MAX_ENV_SKIPS

    def argv(self) -> list[str]:
        """The run options and repro as command-line words (for follow-up commands)."""
        words: list[str] = []
        if self.build:
            words += ["--build", self.build]
        for flag, patterns in (("--good-if", self.rules.good_if), ("--bad-if", self.rules.bad_if),
                               ("--skip-if", self.rules.skip_if)):
            for p in patterns:
                words.append(f"{flag}={p}")  # '=' keeps a pattern starting with '-' whole
        if self.timeout is not None:
            words += ["--timeout", f"{self.timeout:g}"]
        if self.timeout_verdict != "skip":
            words += ["--timeout-verdict", self.timeout_verdict]
        if self.keep_output != DEFAULT_KEEP:
            words.append(f"--keep-output={self.keep_output}")
        if not self.verify_ends:
            words.append("--no-verify")
        if self.max_env_skips != DEFAULT_MAX_ENV_SKIPS:
            words += ["--max-env-skips", str(self.max_env_skips)]
        words += self.plugin_argv
        return [*words, "--", *self.repro] if self.repro else words


class VerdictCache:
    """Verdicts keyed by what was tested (trees on disk + build/repro identity)."""

    def __init__(self, store: SessionStore, identity: str) -> None:
        self._store = store
        self._identity = identity
        self._data = store.load_cache()

    def key(self, trees: Sequence[str]) -> str:
        h = hashlib.sha256(self._identity.encode())
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


_SCRIPTS = {".sh", ".bash", ".py", ".pl", ".rb", ".js", ".mlir", ".ll"}


def run_identity(opts: RunOptions, root: Path) -> str:
    """What besides the trees decides a verdict: commands, rules, and the scripts' contents."""
    parts: dict[str, Any] = {
        "build": opts.build,
        "repro": list(opts.repro),
        "rules": [list(opts.rules.good_if), list(opts.rules.bad_if), list(opts.rules.skip_if)],
        "timeout": opts.timeout,
        "timeout_verdict": opts.timeout_verdict,
        "plugins": [list(x) for x in opts.plugin_options],
    }
    # Editing repro.sh or build.sh must invalidate old verdicts even though
    # the command line is unchanged: hash every word that names a script (or
    # a repro input), including those inside shell strings (sh -c './repro.sh').
    words: list[str] = []
    for word in [*opts.repro, *([opts.build] if opts.build else [])]:
        words.append(word)
        with contextlib.suppress(ValueError):  # not valid shell: nothing more to find
            words += shlex.split(word)
    digests = {}
    for word in words:
        path = Path(word) if os.path.isabs(word) else root / word
        with contextlib.suppress(OSError, ValueError):
            # Scripts only: a log file the build appends to is not part of the test.
            if path.is_file() and (os.access(path, os.X_OK) or path.suffix in _SCRIPTS):
                digests[word] = hashlib.sha256(path.read_bytes()).hexdigest()
    parts["scripts"] = digests
    return json.dumps(parts, sort_keys=True)
