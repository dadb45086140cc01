"""``--no-checkout``: the candidate under test is named by ``BISECT_HEAD`` (as ``git bisect
start --no-checkout`` does) in the repository bisected, and no work tree moves.

Which refs bisectkit may delete is written down before it writes them: the record
(``bisect-head.json`` in the state folder) exists from ``start --no-checkout`` on (it is
what says the session checks nothing out), and lists every commit bisectkit pointed
``BISECT_HEAD`` at, each added *before* the ref moves. ``reset`` (even after a kill at any
point) deletes ``BISECT_HEAD`` only while it names one of those, never a ref a real ``git
bisect`` wrote. ``refs/bisectkit/bisect-head`` names the same commit: a patched candidate
is a commit no branch holds, and ``git gc`` does not count ``BISECT_HEAD`` as a root.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisectkit.errors import BadInput, BisectkitError
from bisectkit.git.repo import Repo
from bisectkit.model import GIT_PROG, short
from bisectkit.safety.fileio import write_json_atomic

#: The pseudo-ref git's own ``--no-checkout`` writes, and the ref that keeps it from gc.
BISECT_HEAD = "BISECT_HEAD"
KEEP_REF = "refs/bisectkit/bisect-head"


class BisectHead:
    """The ``BISECT_HEAD`` a ``--no-checkout`` session owns, through its record ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def wanted(self) -> bool:
        """Does the session name its candidates by ``BISECT_HEAD`` (``--no-checkout``)?"""
        return self.path.exists()

    def claim(self, wanted: bool, open_repo: Callable[[str], Repo]) -> list[str]:
        """At ``start``, the superproject idle: a record a killed start left is released
        first; then, with ``wanted``, this session's record, empty. What was done."""
        done = self.release(open_repo)
        if wanted:
            write_json_atomic(self.path, {})
        return done

    def point(self, key: str, repo: Repo, commit: str) -> None:
        """``BISECT_HEAD`` (and the ref that keeps it) of ``repo`` (journal key ``key``) to
        ``commit``; refused, nothing moved, while a real ``git bisect`` is in progress there
        or a ``BISECT_HEAD`` not bisectkit's is."""
        record = self._load()
        written = list(record.get("written", ())) if record.get("repo") == key else []
        where = key if key != "." else "the superproject"
        if (repo.git_dir / "BISECT_START").exists():
            raise BadInput(f"a git bisect session is in progress in {where} (its BISECT_START"
                           f"); end it with 'git bisect reset' there, or start without "
                           f"--no-checkout")
        current = repo.refs.ref_value(BISECT_HEAD)
        if current is not None and current not in written:
            raise BadInput(f"{where} has a BISECT_HEAD that bisectkit did not write "
                           f"({short(current)}); remove it ('git update-ref -d BISECT_HEAD' "
                           f"there), or start without --no-checkout")
        # Written down before the refs move: a kill after this leaves refs reset removes.
        write_json_atomic(self.path, {"repo": key, "written": [*written, commit]})
        message = f"{GIT_PROG}: candidate under test (--no-checkout)"
        repo.refs.point_ref(KEEP_REF, commit, message)
        repo.refs.point_ref(BISECT_HEAD, commit, message)

    def release(self, open_repo: Callable[[str], Repo]) -> list[str]:
        """Delete the refs the record lists (only while they name a commit it lists), then
        the record: what was done. Idempotent; ``open_repo``: a journal key's repository."""
        try:
            record = self._load()
        except BadInput as exc:  # what was written is unknown: left as it is
            return [f"{exc}; BISECT_HEAD left as it is", *self._forget()]
        key, written = record.get("repo"), list(record.get("written", ()))
        done: list[str] = []
        if isinstance(key, str) and written:
            where = key if key != "." else "the superproject"
            try:
                repo = open_repo(key)
            except BisectkitError as exc:  # gone: nothing left to remove it from
                return [f"BISECT_HEAD of {where} not checked ({exc})", *self._forget()]
            # A git bisect started there since owns BISECT_HEAD now, whatever it names.
            theirs = (repo.git_dir / "BISECT_START").exists()
            for name in (KEEP_REF,) if theirs else (BISECT_HEAD, KEEP_REF):
                sha = repo.refs.ref_value(name)
                if sha is not None and sha in written and \
                        repo.refs.delete_ref_at(name, sha) and name == BISECT_HEAD:
                    done.append(f"removed {name} ({short(sha)}) from {where}")
        return [*done, *self._forget()]

    def _forget(self) -> list[str]:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        return []

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise BadInput(f"cannot read {self.path} ({exc}); run '{GIT_PROG} reset'"
                           ) from exc
        return data if isinstance(data, dict) else {}
