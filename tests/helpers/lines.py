"""Reading what bisectkit prints: its lines fit the width, so prose breaks between words.

A test that looks for a sentence compares it with the output's lines joined (:func:`flat`);
a command to copy is printed whole on the line after its hint (:func:`command_after`).
"""

from __future__ import annotations

import shlex


def flat(text: str) -> str:
    """``text`` with its line breaks (and runs of blanks) as single spaces."""
    return " ".join(text.split())


def command_after(text: str, hint: str) -> list[str]:
    """The words of the command printed on the line after the (possibly broken) line that
    holds ``hint``."""
    lines = text.splitlines()
    for end in range(len(lines)):
        # the hint's last line: the first whose lines so far (joined) hold the hint
        if hint in flat("\n".join(lines[max(end - 4, 0):end + 1])):
            return shlex.split(lines[end + 1])
    raise AssertionError(f"no {hint!r} in:\n{text}")
