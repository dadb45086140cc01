"""Text from a repository, made safe to print or write: its control characters are shown,
never obeyed.

A commit subject, an author, a ref or branch name, a path, a remote URL: anything a
repository holds may carry a terminal escape (``\\x1b[2J`` clears the screen,
``\\x1b]52;c;...`` writes the clipboard, ``\\x1b]0;...`` sets the window title), a
C1 control (``\\x9b`` is a CSI on some terminals), a carriage return or backspaces
that overwrite what came before, or a bidi override (U+202E) that reorders it.
Everything that prints or writes such text (the console and its live panel, error
lines, step logs, the replay log, the Markdown report) passes it through here
first. What is shown instead:

- a C0 control or DEL in caret notation, as ``cat -v`` and ``less`` show them:
  ``^[`` for ESC, ``^M`` for a carriage return, ``^H`` for a backspace, ``^?`` for DEL;
- a byte of a path that is not UTF-8 (kept by Python as a surrogate escape) as
  ``\\xe9``;
- any other control, format or separator character (C1 controls, bidi overrides and
  isolates, zero-width characters, U+2028) as ``<U+202E>``.

Printable text, whatever its script, is unchanged. JSON output keeps the raw
text: it escapes control characters (and everything outside ASCII) itself.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from bisectkit.model import CommitInfo

#: Characters that are not shown as themselves, besides the C0 controls and DEL: the C1
#: controls, surrogates (a byte that is not UTF-8), and Unicode's format (Cf) and
#: separator (Zl, Zp) characters (bidi overrides and isolates, zero-width ones, U+2028).
_OTHERS = (r"\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
           r"\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff"
           r"\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
           r"\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_ONE_LINE = re.compile(rf"[\x00-\x1f{_OTHERS}]")
#: The same, less the line feed and the tab: a block of lines keeps its layout.
_LINES = re.compile(rf"[\x00-\x08\x0b-\x1f{_OTHERS}]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it
        return f"\\x{code - 0xDC00:02x}"
    return f"<U+{code:04X}>"


def one_line(text: str) -> str:
    """``text`` with every control character shown, line feeds and tabs included: a
    subject, a name, a path, a reason or an error stays on its one line."""
    return text if _ONE_LINE.search(text) is None else _ONE_LINE.sub(_shown, text)


def lines(text: str) -> str:
    """``text`` with every control character shown except line feeds and tabs: a commit
    message, a log, a block of output keeps its lines."""
    return text if _LINES.search(text) is None else _LINES.sub(_shown, text)


def data(value: Any) -> Any:
    """``value`` (a step record, a patch's details, JSON-like data) with every string in it
    made :func:`one_line`; dicts (their values), lists and tuples are copied, the rest is
    returned as is."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, Mapping):
        return {k: data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [data(v) for v in value]
    return value


def commit(info: CommitInfo) -> CommitInfo:
    """``info`` as shown: its subject, author and date :func:`one_line`, its message
    :func:`lines` (a message written with CRLF line ends reads as lines)."""
    return dataclasses.replace(info, subject=one_line(info.subject), author=one_line(info.author),
                               date=one_line(info.date),
                               message=lines(info.message.replace("\r\n", "\n")))
