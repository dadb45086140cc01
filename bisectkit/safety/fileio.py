"""Files written whole: readers (and a crash) never see half of one.

A write that fails (a full disk, a read-only folder, a file size limit) raises
:class:`~bisectkit.errors.WriteFailed` naming the file: one line for the user,
never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bisectkit.errors import WriteFailed


def write_json_atomic(path: Path, data: Any, started: bool = True) -> None:
    """Write JSON through a temp file + rename, so readers never see half a file."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n", started)


def write_text_atomic(path: Path, text: str, started: bool = True) -> None:
    """Write ``text`` through a temp file + rename, so readers never see half a file.

    A link is followed (its target is replaced, the link stays). The file gets
    the mode a plain ``open(path, "w")`` would give it: an existing file keeps
    its own, a new one gets ``0666 & ~umask`` (mkstemp alone would make every
    result file private, 0600). ``started``: see :func:`writing` (a failed write leaves
    the file as it was).
    """
    path = Path(os.path.realpath(path))
    with writing(path, started):
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _open_mode(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def writing(path: Path, started: bool = True) -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into :class:`WriteFailed`
    (``started``: a session exists, so the exit code says its journal is kept)."""
    try:
        yield
    except OSError as exc:
        raise WriteFailed(path, exc, started) from exc


def _open_mode(path: Path) -> int:
    """Permission bits ``open(path, "w")`` would leave ``path`` with."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (no window at 0)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
