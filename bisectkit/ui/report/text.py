"""The words of a report: error lines worth quoting, Markdown-safe text, the result's terms.

Shared by the Markdown and the terminal renderers; pure functions of strings
and of the result dict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bisectkit import safetext
from bisectkit.strategies import kind_named

#: A bisect result: the dict ``run --json`` writes.
Result = Mapping[str, Any]

#: Substrings that make an output line worth quoting (case-sensitive).
ERROR_MARKERS: tuple[str, ...] = (
    "error:", "Error:", "ERROR:", "FAILED:", "Assertion", "LLVM ERROR",
    "UNREACHABLE executed", "PLEASE submit a bug report", "Stack dump:",
    "Segmentation fault", "core dumped", "terminate called", "Traceback (most recent call last)",
)
MAX_LINE = 200  # characters kept of one quoted output line
MAX_ROWS = 20  # rows of a table (skipped commits, candidates, patches) before "... N more"

_ERROR_RE = re.compile("|".join(re.escape(m) for m in ERROR_MARKERS))
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: Follow-up lines that are commands (quoted in ``sh`` blocks, listed by the terminal report).
COMMANDS = ("bisectkit ", "git ", "git-bisect-patched ")


def error_lines(text: str, limit: int) -> list[str]:
    """The first ``limit`` distinct lines of ``text`` that carry an error marker.

    Colour codes and carriage-return progress are removed; each line is stripped
    and cut to about ``MAX_LINE`` characters.
    """
    found: list[str] = []
    for raw in _ANSI_RE.sub("", text).replace("\r", "\n").splitlines():
        if len(found) >= limit:
            break
        line = cut(raw.strip())
        if _ERROR_RE.search(line) and line not in found:
            found.append(line)
    return found


def cut(line: str, width: int = MAX_LINE) -> str:
    """``line``, cut to ``width`` characters with ``...`` when longer."""
    return line if len(line) <= width else line[: width - 3] + "..."


def md_text(value: Any) -> str:
    """Free text for Markdown, shown as it is: control characters shown
    (:mod:`bisectkit.safetext`), no line breaks, and what would start markup escaped
    (no HTML tag or entity, no link or image, no code span, no @mention)."""
    return _escaped(_shown(value))


def md_cell(value: Any, width: int = 120) -> str:
    """Free text for a table cell (cut to ``width`` characters as shown)."""
    return _escaped(cut(_shown(value), width)).replace("|", "\\|")


def md_code(value: Any, cell: bool = False) -> str:
    """``value`` as an inline code span, shown as it is: control characters shown,
    delimited by more backticks than it holds (``cell``: in a table, ``|`` escaped)."""
    text = _shown(value)
    ticks = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


#: What would turn running text into markup: a backslash (it would escape our ``|``), a
#: backtick (a code span), ``<`` (HTML, an autolink), ``&`` (an entity: ``&#x202E;`` is a
#: real bidi override once rendered), ``](`` and ``][`` (a link, an image); escaped with a
#: backslash. ``[mlir]`` stays as it is.
_MD_SPECIAL = re.compile(r"[\\`<&]|\](?=[(\[])")
#: A GitHub @mention (``@user``, ``@org/team``: an ``@`` no letter or digit comes before):
#: pasted into an issue it would notify them. Shown in a code span, where GitHub mentions
#: nobody; ``dev@example.com`` is no mention and stays as it is.
_MENTION = re.compile(r"(?<![0-9A-Za-z_])@[0-9A-Za-z][0-9A-Za-z-]*(?:/[0-9A-Za-z_.-]+)?")


def _shown(value: Any) -> str:
    """``value`` on one line, its control characters shown, its blanks collapsed."""
    return " ".join(safetext.lines(str(value or "")).split())


def _escaped(text: str) -> str:
    """``text`` with what would start markup escaped and @mentions in code spans (after
    the escapes: a mention holds nothing they change)."""
    return _MENTION.sub(lambda m: f"`{m.group()}`", _MD_SPECIAL.sub(r"\\\g<0>", text))


def fence(lines: Sequence[str], lang: str = "") -> list[str]:
    """A fenced code block long enough not to be closed by backticks inside ``lines``
    (their control characters shown)."""
    lines = [safetext.lines(line) for line in lines]
    runs = [len(r) for line in lines for r in re.findall("`+", line)]
    marks = "`" * max(3, max(runs, default=0) + 1)
    return [marks + lang, *lines, marks]


def capped(rows: Sequence[str], what: str) -> list[str]:
    """``rows`` (of a table or list), at most ``MAX_ROWS``, then ``... N more <what>``."""
    if len(rows) <= MAX_ROWS:
        return list(rows)
    return [*rows[:MAX_ROWS], "", f"... {len(rows) - MAX_ROWS} more {what}."]


def result_terms(result: Result) -> tuple[str, str]:
    """The words for good and bad (``broken``/``fixed`` in a find-fix run)."""
    terms = result.get("terms") or {}
    return terms.get("old") or "good", terms.get("new") or "bad"


def verdict_word(verdict: str, result: Result) -> str:
    """``verdict`` in the result's words (``fixed`` for bad in a find-fix run)."""
    old, new = result_terms(result)
    return {"good": old, "bad": new, "skip": "skipped"}.get(verdict, verdict)


def where_ran(result: Result, markdown: bool = True) -> str:
    """Where the bisect ran, for the title: `` in `path` ``, `` on the integrate branch``
    (``markdown=False``: the path as it is)."""
    kind, sub = kind_named(str(result.get("strategy"))), result.get("submodule")
    path = (md_code(sub) if markdown else str(sub)) if sub else None
    if kind is None:  # a result of another bisectkit: its path alone
        return f" in {path}" if path else ""
    return kind.where(path)


def result_steps(result: Result) -> list[dict[str, Any]]:
    """The result's step records, in order."""
    return list(result.get("steps") or [])


def reproduce_command(result: Result) -> str:
    """The command that runs the bisection again: ``reproduce`` (full shas, settings from
    git config spelt out), else the command line as typed (results of older versions)."""
    return str(result.get("reproduce") or result.get("command") or "")
