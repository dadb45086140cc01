"""The lines bisectkit writes where a command's output was dropped (``--keep-output``).

:class:`bisectkit.execute.keptoutput.Kept` writes them into the kept text, so that a reader of a
step log sees where the middle went; they are bisectkit's words, not the command's, so
the rules and the classifiers get the text without them (:func:`unmarked`).
"""

from __future__ import annotations

import re

#: Where the middle was dropped (``n`` bytes), ended by ``]`` or by :data:`MATCHED`.
DROPPED = "[bisectkit: {n} bytes of output dropped here (--keep-output)"
#: ... then the dropped lines that match the rules, then :data:`END`.
MATCHED = "; the {n} line(s) of them that match the rules:]"
END = "[bisectkit: end of the dropped output]"

_MARKERS = re.compile(r"^\[bisectkit: (?:\d+ bytes of output dropped here \(--keep-output\)"
                      r"(?:; the \d+ line\(s\) of them that match the rules:)?"
                      r"|end of the dropped output)\]\n", re.MULTILINE)


def unmarked(text: str) -> str:
    """``text`` without the lines above: what the command printed (its head, the dropped
    lines a rule matches, its tail), for the rules and the classifiers, which judge the
    command's output, never bisectkit's (a ``--skip-if dropped`` would match them)."""
    return _MARKERS.sub("", text) if "[bisectkit: " in text else text


def was_cut(text: str) -> bool:
    """Does ``text`` (a command's kept output) have its middle dropped?"""
    return "[bisectkit: " in text and _MARKERS.search(text) is not None
