"""What is kept of a build's or a repro's output: cleaned of terminal escapes, and bounded.

A command's output is kept as its head and its tail (``keep`` bytes of UTF-8 in
all, a marker between), so 50 MB of output per step costs neither memory nor
disk, binary output included; lines of the dropped middle that match ``watch``
patterns (the ``--*-if`` rules) are kept under the marker, so a rule still sees
them. What the rules, the classifiers and the step logs get is the text a reader
sees (:func:`clean_output`): no escapes, no ``\\r`` rewrites, no control characters.
The marker is bisectkit's, not the command's: the rules and the classifiers get the
text without it (:func:`bisectkit.model.dropped.unmarked`), the step logs with it.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence

from bisectkit.model import dropped

#: At most this many lines of the dropped middle are kept for matching the rules.
_MAX_KEPT_LINES = 200
#: A kept line of the dropped middle is at most this long (a longer one: from its match on).
_MAX_LINE = 4096


#: Control characters a terminal shows nothing for (NUL, BEL, backspace, C1 controls), left
#: once the escapes are removed and ``\r`` lines folded: tabs and line feeds stay.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: Terminal control sequences: CSI (colours, cursor moves, ``\x1b[K``), OSC (titles,
#: hyperlinks; ended by BEL or ST, or by the line's end: an OSC left open by the
#: --keep-output cut must not swallow the kept lines after it), and the other ESC
#: sequences, with intermediates (``tput sgr0`` is ``\x1b(B\x1b[m``; ``\x1b7``, ``\x1bM``).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"
                      r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
                      r"|\x1b[ -/]*[0-Z\\-~]"
                      r"|\x9b[0-?]*[ -/]*[@-~]")


def clean_output(text: str) -> str:
    """``text`` as a reader sees it: escapes removed, ``\\r`` progress lines folded, the
    other control characters (a NUL, a BEL, binary output's) dropped.

    The repro runs under a pty, so clang, MLIR and ninja colour their output:
    ``\\e[1m\\e[31merror:\\e[0m`` must still match ``--bad-if 'error:'``. A line
    rewritten in place (``50%\\r100%``) keeps only what was left on screen.
    """
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPES.sub("", text)
    if "\r" in text:
        lines = text.replace("\r\n", "\n").split("\n")
        text = "\n".join(_fold_cr(line) for line in lines)
    return text if _CONTROLS.search(text) is None else _CONTROLS.sub("", text)


#: Kept output is decoded and cleaned this many bytes at a time (up to a line's end).
_BLOCK = 65536


def _clean_lines(data: bytes, out: list[str]) -> None:
    """Append to ``out`` the :func:`clean_output` of UTF-8 ``data``, decoded and cleaned
    in blocks of whole lines (about :data:`_BLOCK` bytes, or one longer line).

    A string is as wide as its widest character (one emoji makes it four bytes a
    character), so each copy made while cleaning is one block, never the whole output;
    and a block, not a line, is one item of ``out`` (8 MiB of 3-byte lines would be
    millions of strings). No escape sequence spans a line feed and ``\\r`` rewrites only
    its own line, so cleaning whole lines together is cleaning each alone.
    """
    start = 0
    while start < len(data):
        end = data.rfind(b"\n", start, start + _BLOCK) + 1 or data.find(b"\n", start) + 1
        if not end:
            end = len(data)
        out.append(clean_output(data[start:end].decode("utf-8", "replace")))
        start = end


def _fold_cr(line: str) -> str:
    """What a terminal shows of a line rewritten with ``\\r``: its last non-empty rewrite.

    Progress meters pad or erase (``\\e[K``, removed before) what they rewrite,
    so the last rewrite is what was on screen.
    """
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


class Kept:
    """The head and the tail of a stream, plus the middle's lines that match ``watch``.

    Kept as UTF-8 (a byte a character for text, whatever characters the rest holds)
    and counted in its bytes: ``keep`` bounds the memory and the step log alike, for
    binary output too (each byte that is not UTF-8 is a U+FFFD, three bytes).
    """

    def __init__(self, keep: int, watch: Sequence[re.Pattern[str]]) -> None:
        self._head_room = keep // 2
        self._tail_room = keep - self._head_room
        self._head: list[bytes] = []
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self._watch = watch
        self._partial = ""
        self._matched: list[str] = []
        self.dropped = 0

    def add(self, text: str) -> None:
        data = text.encode()
        if self._head_room > 0:  # cut where a character starts: the head stays valid UTF-8
            cut = _char_start(data, min(self._head_room, len(data)), back=True)
            self._head.append(data[:cut])
            self._head_room = 0 if cut < len(data) else self._head_room - cut
            data = data[cut:]
        if not data:
            return
        self._tail.append(data)
        self._tail_len += len(data)
        while self._tail_len > self._tail_room:
            first = self._tail[0]
            over = _char_start(first, self._tail_len - self._tail_room, back=False)
            if len(first) <= over:
                self._tail.popleft()
                self._drop(first)
                self._tail_len -= len(first)
            else:
                self._tail[0] = first[over:]
                self._drop(first[:over])
                self._tail_len -= over

    def _drop(self, data: bytes) -> None:
        self.dropped += len(data)
        if not self._watch:
            return
        text = self._partial + data.decode("utf-8", "replace")
        cut = text.rfind("\n")
        partial = text[cut + 1:]
        # The whole lines cleaned at once (the same as each alone: see _clean_lines), and
        # only a line some rule matches looked at closely: millions of short lines cost
        # one search each.
        for line in clean_output(text[:cut]).split("\n") if cut >= 0 else ():
            for pattern in self._watch:
                if pattern.search(line) is not None:
                    self._look(line)
                    break
        self._partial = self._cut_long(partial) if len(partial) > 2 * _MAX_LINE else partial

    def _cut_long(self, partial: str) -> str:
        """The end of a long line still coming: what a rule matches in the part cut off is
        kept now (the rest is looked at with the line's end); a part rewritten by a later
        ``\\r`` is not on screen, so no rule sees it."""
        redrawn = partial.rstrip("\r").rfind("\r")
        if redrawn > 0:
            partial = partial[redrawn:]
        if len(partial) <= 2 * _MAX_LINE:
            return partial
        rest = partial[-_MAX_LINE:]
        line = clean_output(partial)
        self._look(line, before=len(line) - len(clean_output(rest)))
        return rest

    def _look(self, line: str, before: int | None = None) -> None:
        """Keep what ``line`` (cleaned) holds that a rule matches, starting before ``before``:
        the line, or from each match on when the line is long (a match never cut off)."""
        limit = len(line) if before is None else before
        starts = sorted({m.start() for p in self._watch
                         if (m := p.search(line)) is not None and m.start() < limit})
        if not starts:
            return
        shown = [line] if len(line) <= _MAX_LINE else [line[s:s + _MAX_LINE] for s in starts]
        self._matched += shown[:_MAX_KEPT_LINES - len(self._matched)]

    def text(self) -> str:
        """What was kept, cleaned (:func:`clean_output`); the kept bytes are let go as they
        are decoded."""
        out: list[str] = []
        if not self.dropped:
            _clean_lines(self._take(), out)
            return "".join(out)
        _clean_lines(self._take(head=True), out)
        self._look(clean_output(self._partial))
        out.append("\n" + dropped.DROPPED.format(n=self.dropped))
        if self._matched:
            out.append(dropped.MATCHED.format(n=len(self._matched)) + "\n")
            out += [line + "\n" for line in self._matched]
            out.append(dropped.END + "\n")
        else:
            out.append("]\n")
        _clean_lines(self._take(), out)
        return "".join(out)

    def _take(self, head: bool = False) -> bytes:
        """The head (``head``), else the rest of what is kept, forgotten here."""
        parts = self._head if head else [*self._head, *self._tail]
        self._head = []
        if not head:
            self._tail = deque()
        return b"".join(parts)


def _char_start(data: bytes, at: int, back: bool) -> int:
    """The first character start of UTF-8 ``data`` at or before (``back``) or after ``at``
    (``len(data)`` past the end)."""
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:  # a continuation byte
        at += -1 if back else 1
    return at
