"""Words every package may use: plurals, sizes, clock times, ETA, lines that fit a width.

Pure functions (no rich, no I/O), so the pipeline's messages, the console and the
live panel word and lay text out the same way, and the tests can check them
directly. Widths are terminal cells (:func:`cells`): a CJK character takes two, a
combining mark none; commit subjects and paths may hold either.
"""

from __future__ import annotations

import re
import statistics
import textwrap
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bisectkit.model import CommitInfo, short

ELLIPSIS = "…"
#: A subject shorter than this is not worth keeping on a line: what follows it moves to a
#: continuation line instead.
MIN_SUBJECT = 24
INDENT = "    "


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files`` (``many``: the plural when it is not ``word + "s"``)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def cells(text: str) -> int:
    """The columns ``text`` takes on a terminal: wide (East Asian) characters two, combining
    marks and zero-width characters none, every other character one."""
    if text.isascii():
        return len(text)
    return sum(_cell(ch) for ch in text)


def _cell(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def ellipsize(text: str, room: int) -> str:
    """``text`` cut to ``room`` columns, the cut marked with an ellipsis."""
    if cells(text) <= room:
        return text
    if room <= 1:
        return ELLIPSIS[:max(room, 0)]
    return _head(text, room - 1).rstrip() + ELLIPSIS


def _head(text: str, room: int) -> str:
    """The longest start of ``text`` that takes at most ``room`` columns."""
    if text.isascii():
        return text[:room]
    used = 0
    for i, ch in enumerate(text):
        used += _cell(ch)
        if used > room:
            return text[:i]
    return text


def fold(line: str, width: int, more: str = "  ") -> list[str]:
    """``line`` as lines of at most ``width`` columns, broken between words only, the
    continuations indented as ``line`` is plus ``more`` (a hanging indent). A word longer
    than a whole line (a path, a sha range) gets a continuation line of its own, whole: it
    is what the reader copies. A line that fits is returned as it is (its spacing kept)."""
    if cells(line) <= width or width < 8:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    hang = (indent + more)[:width // 2]
    out: list[str] = []
    current = indent
    for gap, word in re.findall(r"(\s*)(\S+)", line[len(indent):]):
        sep = "" if current.strip() == "" else gap  # the line's own spacing kept
        if current.strip() and cells(current) + len(sep) + cells(word) > width:
            out.append(current)  # the word starts the next line
            current, sep = hang, ""
        current += sep + word
    out.append(current)
    return out


def clock(seconds: float) -> str:
    """``0:07``, ``12:30``, ``1:02:03``: short enough for a status line."""
    whole = max(int(round(seconds)), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def eta(durations: Sequence[float], steps_left: int, in_step: float = 0.0) -> float | None:
    """Seconds left: the median step so far times the steps left (the current one
    included), less what the current step has already taken; None before any step ran."""
    if not durations:
        return None
    return max(statistics.median(durations) * max(steps_left, 0) - in_step, 0.0)


def eta_text(seconds: float | None) -> str:
    return "ETA ?" if seconds is None else f"ETA ~{clock(seconds)}"


def fit(head: str, middle: str, tail: str, width: int,
        min_middle: int = MIN_SUBJECT) -> tuple[str, bool]:
    """Lay out ``head + middle + tail`` in ``width`` columns: the middle (a subject, a
    reason) ellipsized to make room. Returns the middle as shown and whether ``tail`` must
    go on a continuation line instead (it would leave the middle less than ``min_middle``).
    """
    room = width - cells(head) - cells(tail)
    if room >= cells(middle) or room >= min_middle:
        return ellipsize(middle, room), False
    return ellipsize(middle, width - cells(head)), True


def flow(head: int, text: str, width: int, indent: str = INDENT + "  ") -> list[str]:
    """``text`` after ``head`` columns of a line, then on continuation lines indented by
    ``indent``: broken between words, never cut (a reason or a file name is information
    the reader needs, unlike the end of a subject)."""
    lines = textwrap.wrap(text, width, initial_indent="\0" * head, subsequent_indent=indent,
                          break_long_words=False, break_on_hyphens=False) or [""]
    return [lines[0].lstrip("\0"), *lines[1:]]


def wrap(text: str, width: int, indent: str = INDENT, more: str = "") -> list[str]:
    """A paragraph's line, indented, broken between words to fit ``width`` (a word longer
    than a line, a URL say, stays whole); continuations indented by ``more`` again."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + more,
                         break_long_words=False, break_on_hyphens=False) or [""]


def commit_lines(info: CommitInfo, width: int) -> list[str]:
    """A commit as ``git show`` heads it: ``commit``, ``Author:``, ``Date:``, then the
    message indented, its lines broken between words to fit ``width``."""
    lines = [f"commit {info.sha}", f"Author: {info.author}", f"Date:   {info.date}", ""]
    for text in info.message.rstrip().split("\n"):
        lines += wrap(text, width)
    return lines


def pack(parts: Sequence[str], width: int, first: str = "", sep: str = ", ",
         indent: str = INDENT) -> list[str]:
    """``first`` then ``parts`` joined by ``sep``, broken between parts into lines of at
    most ``width`` columns (continuations indented); a part never breaks inside."""
    lines: list[str] = []
    line, empty = first, True
    for part in parts:
        joined = line + ("" if empty else sep) + part
        if len(joined) <= width or empty:
            line, empty = joined, False
            continue
        lines.append(line.rstrip())
        line = indent + part
    lines.append(line.rstrip())
    return [ellipsize(x, width) for x in lines if x.strip()]


def words(terms: Mapping[str, object] | None) -> tuple[str, str]:
    """The words of the old and new sides (``good``/``bad`` unless the session says)."""
    terms = terms or {}
    return str(terms.get("old") or "good"), str(terms.get("new") or "bad")


def moved(m: dict[str, Any]) -> str:
    """``old -> new (N upstream commits)`` for one submodule of an integrate step."""
    old = short(m["old"]) if m.get("old") else "(none)"
    new = short(m["new"]) if m.get("new") else "(removed)"
    span = m.get("upstream_commits")
    return f"{old} -> {new}" + (f" ({span} upstream commits)" if span is not None else "")


def step_times(step: dict[str, Any]) -> list[str]:
    """What a step wrote and cost, and where it ran."""
    times = []
    if step.get("files_written"):
        times.append(f"{plural(step['files_written'], 'file')} written")
    if step.get("fetched"):
        times.append(fetched(step["fetched"]))
    if step.get("prepare_s") is not None and step.get("source") != "manual":
        times.append(f"prepare {secs(step['prepare_s'])}")
    for phase in ("build", "repro"):
        if step.get(f"{phase}_s") is not None:
            times.append(f"{phase} {secs(step[f'{phase}_s'])}")
    if step.get("worker"):
        times.append(f"on {step['worker']}:{Path(step.get('workspace', '')).name}")
    return times


def fetched(data: dict[str, Any]) -> str:
    """``fetched 12 objects (3.4 KiB) in 40 ms``: what a partial clone fetched."""
    return (f"fetched {plural(int(data['objects']), 'object')} ({size(int(data['bytes']))}) "
            f"in {secs(float(data['seconds']))}")


def fetched_total(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the steps fetched in all (``None``: nothing, as for a full clone)."""
    got = [s["fetched"] for s in steps if s.get("fetched")]
    return {k: sum(g[k] for g in got) for k in ("objects", "bytes", "seconds")} if got else None


def size(n: int) -> str:
    """Bytes, readable: ``512 B``, ``3.4 KiB``, ``12.0 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


def secs(value: float) -> str:
    """Seconds, readable from milliseconds to hours."""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def affecting_lines(status: dict[str, Any], limit: int) -> list[str]:
    """``bisectkit status``: the upstream commits since the merge-base (those touching
    the pathspec, when given), the newest ``limit`` of them (0: all), newest last."""
    total = status["upstream_commits_since_merge_base"]
    shown = status["affecting"]
    where = (f", {len(shown)} touching {' '.join(status['pathspec'])}"
             if status["pathspec"] else "")
    lines = [f"  upstream commits since the merge-base: {total}{where}"
             f"{' (newest last)' if shown else ''}"]
    hidden = len(shown) - limit if limit and len(shown) > limit else 0
    if hidden:
        lines.append(f"    ... {hidden} older not shown (--limit 0 shows all)")
    lines += [f"    {short(c['commit'])} {c['subject']}" for c in shown[hidden:]]
    return lines
