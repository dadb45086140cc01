"""The sections of a Markdown report: the range searched, tables and lists.

Each returns its lines (no trailing blank line), or none when it has nothing to say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bisectkit.model import short
from bisectkit.text import plural
from bisectkit.ui.report.links import Links
from bisectkit.ui.report.text import (
    COMMANDS,
    MAX_ROWS,
    Result,
    capped,
    fence,
    md_cell,
    md_code,
    md_text,
    result_steps,
    result_terms,
    verdict_word,
)


def searched(result: Result, links: Links | None, markdown: bool = True) -> str:
    """``good X .. bad Y on upstream: N candidate commits, M steps (a good, b bad, ...)``."""
    old, new = result_terms(result)
    show = links.md if markdown and links else short
    goods = ", ".join(show(g) for g in result.get("good") or []) or "?"
    text = f"{old} {goods} .. {new} {show(result['bad']) if result.get('bad') else '?'}"
    if result.get("upstream"):
        text += f" on {md_code(result['upstream']) if markdown else result['upstream']}"
    steps = result_steps(result)
    size = result.get("range_size")
    text += f": {size} candidate commits, " if size is not None else ": "
    counts = Counter(s.get("verdict") for s in steps)
    parts = [f"{counts[v]} {verdict_word(v, result)}" for v in ("good", "bad", "skip") if counts[v]]
    cached = sum(1 for s in steps if s.get("source") == "cache")
    if cached:
        parts.append(f"{cached} from cache")
    text += f"{plural(len(steps), 'step')}"
    return text + (f" ({', '.join(parts)})" if parts else "")


def _patch_name(p: Mapping[str, Any], links: Links) -> str:
    return f"{links.md(p.get('commit', ''), patch=True)} {md_cell(p.get('subject'), 70)}".rstrip()


def patch_table(at: Sequence[Mapping[str, Any]], before: Sequence[Mapping[str, Any]] | None,
                 labels: tuple[str, str], links: Links) -> list[str]:
    """What each patch did at the culprit (and the commit before it), one row per patch.

    When the stack is long, patches applied at both commits are summed up in one line.
    """
    prev = {p.get("commit"): p for p in before or []}
    rows: list[tuple[bool, list[str]]] = []  # (boring, cells)
    for p in at:
        action, why = p.get("action", "?"), md_cell(p.get("why"))
        cells = [md_cell(p.get("kind")), _patch_name(p, links), action]
        if before is not None:
            q = prev.pop(p.get("commit"), None)
            was = q.get("action", "?") if q else "(not in stack)"
            cells.append(was)
            if q and was != action and q.get("why") and q.get("why") != p.get("why"):
                why += f" (before: {md_cell(q.get('why'))})"
        rows.append((all(a == "applied" for a in cells[2:]), [*cells, why]))
    for q in prev.values():  # patches the stack had only at the previous commit
        rows.append((False, [md_cell(q.get("kind")), _patch_name(q, links), "(not in stack)",
                             q.get("action", "?"), md_cell(q.get("why"))]))
    hidden = sum(boring for boring, _ in rows) if len(rows) > MAX_ROWS else 0
    head = ["kind", "patch", f"at {labels[0]}"]
    head += [f"at {labels[1]}"] if before is not None else []
    out = ["| " + " | ".join([*head, "why"]) + " |", "|" + "---|" * (len(head) + 1)]
    out += ["| " + " | ".join(cells) + " |" for boring, cells in rows if not (hidden and boring)]
    if hidden:
        both = " at both commits" if before is not None else ""
        out += ["", f"... and {hidden} more patches applied{both}."]
    return out


def moves_table(moves: Sequence[Mapping[str, Any]]) -> list[str]:
    """The submodules an integrate commit moved, with their upstream ranges."""
    out = ["| submodule | old | new | upstream range | upstream commits |", "|---|---|---|---|---|"]
    for m in moves:
        old = f"`{short(m['old'])}`" if m.get("old") else "(none)"
        new = f"`{short(m['new'])}`" if m.get("new") else "(removed)"
        base = (f"`{short(m['old_base'])}`..`{short(m['new_base'])}`"
                if m.get("old_base") and m.get("new_base") else "")
        count = m.get("upstream_commits")
        out.append(f"| {md_code(m.get('path'), cell=True)} | {old} | {new} | {base} | "
                   f"{'' if count is None else count} |")
    return out


def skipped_section(result: Result, links: Links) -> list[str]:
    steps = [s for s in result_steps(result) if s.get("verdict") == "skip"
             and s.get("source") != "check-stack"]  # reported in its own section
    if not steps:
        return []
    rows = [f"| {s.get('index', '')} | {links.md(s.get('commit', ''))} | "
            f"{md_cell(s.get('reason'))} |" for s in steps]
    return [f"#### Skipped commits ({len(steps)})", "", "| step | commit | reason |",
            "|---|---|---|", *capped(rows, "skipped commits")]


def flagged_section(result: Result, links: Links) -> list[str]:
    steps = [s for s in result_steps(result) if s.get("flags")]
    if not steps:
        return []
    rows = [f"- step {s.get('index', '')} {links.md(s.get('commit', ''))} "
            f"({verdict_word(s.get('verdict', ''), result)}): "
            f"{md_text('; '.join(map(str, s['flags'])))}" for s in steps]
    return [f"#### Flagged steps ({len(steps)}): check these verdicts", "",
            *capped(rows, "flagged steps")]


def stops_applying_section(result: Result, links: Links) -> list[str]:
    """Local patches that stop applying in the range, and onto which commit to rebase them."""
    entries = list(result.get("stops_applying") or [])
    if not entries:
        return []
    rows: list[str] = []
    for e in entries:
        patch = (f"local patch {links.md(e.get('patch', ''), patch=True)} "
                 f"{md_text(e.get('subject'))}")
        first = f"{links.md(e.get('first_conflict', ''))} " \
                f"{md_text(e.get('first_conflict_subject'))}".rstrip()
        clean = e.get("last_clean")
        if not clean:
            rows.append(f"- {patch}: conflicts at every tested candidate from {first}; "
                        "rebase it onto that commit.")
        elif e.get("exact"):
            rows.append(f"- {patch}: stops applying at {first} (applied cleanly at "
                        f"{links.md(clean)}); rebase it onto that commit.")
        else:
            rows.append(f"- {patch}: stops applying between {links.md(clean)} "
                        f"(applied cleanly) and {first} (conflicts); the commits between could "
                        "not be checked; rebase it onto the latter.")
    return ["#### Local patches that stop applying", "", *capped(rows, "patches")]


def on_conflict_note(result: Result) -> list[str]:
    """With ``--on-conflict drop``: say that some steps lacked a local patch."""
    if result.get("on_conflict") != "drop":
        return []
    without = sum(1 for s in result_steps(result) if any(
        str(f).startswith("tested without ") for f in s.get("flags") or ()))
    return [f"**On conflict:** a conflicting local patch was left out (`--on-conflict drop`); "
            f"{plural(without, 'step')} tested without one (flagged below).", ""]


def followup_section(result: Result) -> list[str]:
    """Follow-up lines: commands in ``sh`` blocks, the rest as text."""
    lines = [str(line) for line in result.get("followup") or [] if str(line).strip()]
    if not lines:
        return []
    out = ["#### Next", ""]
    block: list[str] = []
    for line in [*lines, ""]:
        if line.startswith(COMMANDS):
            block.append(line)
            continue
        if block:
            out += [*fence(block, "sh"), ""]
            block = []
        if line:
            out += [md_text(line), ""]
    return out[:-1]
