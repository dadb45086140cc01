"""gitignore-like path patterns (``git config bisectkit.cacheIgnore``), matched in Python.

A pattern is relative to the superproject root. As in ``.gitignore``: a
pattern with no ``/`` but a trailing one matches a file or directory name at
any depth; one with a ``/`` at the start or in the middle is anchored to the
root; a trailing ``/`` matches directories only (so everything under them);
``*``, ``?`` and ``[...]`` do not cross ``/`` while ``**`` does (``**/x``,
``x/**``, ``a/**/b``); ``!`` re-includes what an earlier pattern excluded
(the last pattern that matches decides); ``#`` starts a comment; ``\\``
escapes; trailing spaces are dropped unless escaped (``\\ ``). A pattern that
matches a directory matches every path under it. :func:`literal_pattern`
writes the pattern of exactly one path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    dir_only: bool
    negated: bool


class PathGlobs:
    """A list of patterns; :meth:`match` says whether a path is excluded."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p for p in (_compile(text) for text in patterns) if p is not None)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, path: str) -> bool:
        """Is ``path`` (relative, ``/``-separated; a trailing ``/``: a directory) excluded?"""
        is_dir = path.endswith("/")
        parts = path.strip("/").split("/")
        # Every directory above the path, then the path itself.
        prefixes = [("/".join(parts[:i]), True) for i in range(1, len(parts))]
        prefixes.append(("/".join(parts), is_dir))
        excluded = False
        for pattern in self.patterns:
            if any(pattern.regex.fullmatch(text) and (is_a_dir or not pattern.dir_only)
                   for text, is_a_dir in prefixes):
                excluded = not pattern.negated
        return excluded


#: Characters a pattern gives a meaning to anywhere: escaped by :func:`literal_pattern`.
_SPECIAL = frozenset("\\*?[]")


def literal_pattern(path: str) -> str:
    """The pattern that matches ``path`` (relative to the root; a trailing ``/``: a
    directory) and nothing else: anchored with a leading ``/`` (so a leading ``!`` or
    ``#`` is a name), ``\\*?[]`` and trailing spaces escaped with a backslash."""
    body = path.rstrip("/")
    stem = body.rstrip(" ")
    escaped = "".join("\\" + c if c in _SPECIAL else c for c in stem)
    escaped += "\\ " * (len(body) - len(stem))
    return "/" + escaped + ("/" if path.endswith("/") else "")


def _compile(text: str) -> _Pattern | None:
    # Leading whitespace goes; trailing whitespace too, unless a backslash escapes it
    # (an odd number of them: ``\\\\`` is an escaped backslash).
    text = text.lstrip()
    trimmed = text.rstrip()
    slashes = len(trimmed) - len(trimmed.rstrip("\\"))
    if slashes % 2 and len(trimmed) < len(text):
        trimmed += text[len(trimmed)]
    text = trimmed
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated:
        text = text[1:]
    dir_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    body = _translate(text.lstrip("/"))
    regex = body if anchored else f"(?:.*/)?{body}"
    return _Pattern(re.compile(regex, re.DOTALL), dir_only, negated)


def _translate(glob: str) -> str:
    """The regex of one glob: ``*``, ``?``, ``[...]`` within a path component, ``**``."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        end = glob.find("]", i + 2) if c == "[" else -1
        if end != -1:
            inner = glob[i + 1:end]
            negate = inner[:1] in ("!", "^")
            inner = inner[1:] if negate else inner
            inner = inner.replace("\\", "\\\\")
            out.append(f"[^/{inner}]" if negate else f"[{inner}]")
            i = end + 1
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    return "".join(out)
