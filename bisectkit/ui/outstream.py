"""A text stream for the console: a reader gone never stops a command, lost output is said.

After SIGHUP (terminal closed, ssh dropped) or with a closed pipe, every write
fails; a restore must go on regardless, so the console writes through
:class:`Resilient`, which drops output instead of raising. A failure that is
not the reader's (``> file`` on a full disk, a file size limit) is dropped too
but kept, so that the command can end by saying its output was lost.
"""

from __future__ import annotations

import errno
from typing import Any, TextIO

#: Write errors that mean the reader is gone (a closed pipe, a terminal hung up): the
#: output has nobody to reach, so it is dropped silently.
READER_GONE = (errno.EPIPE, errno.EIO, errno.ECONNRESET)


class Resilient:
    """A text stream whose write errors never stop a command.

    After SIGHUP (terminal closed, ssh dropped) or with a closed pipe, every
    write fails; a restore must go on regardless, so output is dropped
    instead of raised. Any other failure (a full disk, a file size limit) drops
    the output too, but is kept in :attr:`lost`: the command ends by saying
    so (its output did not reach the file), not with a silent exit 0.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._broken = False
        self.lost: OSError | None = None

    def _failed(self, exc: Exception) -> None:
        self._broken = True
        if isinstance(exc, OSError) and exc.errno not in READER_GONE and self.lost is None:
            self.lost = exc

    def write(self, text: str) -> int:
        if not self._broken:
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as exc:
                self._failed(exc)
        return len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._failed(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
