"""The report in a few plain lines for a terminal (``bisectkit report`` without ``-o``)."""

from __future__ import annotations

from collections import Counter

from bisectkit.model import short
from bisectkit.ui.report.links import Links
from bisectkit.ui.report.sections import searched
from bisectkit.ui.report.text import (
    COMMANDS,
    Result,
    reproduce_command,
    result_steps,
    result_terms,
    where_ran,
)


def render_terminal(result: Result, commit_url: str | None = None,
                    fork_url: str | None = None) -> list[str]:
    """The report in a few plain lines for a terminal (no Markdown)."""
    status = result.get("status", "?")
    _, new = result_terms(result)
    where = where_ran(result, markdown=False)
    first_bad = result.get("first_bad")
    out: list[str] = []
    if status == "found" and first_bad:
        info = result.get("first_bad_info") or {}
        subject = info.get("subject") or result.get("first_bad_subject") or ""
        out.append(f"first {new} commit{where}: {short(first_bad)} {subject}".rstrip())
        who = ", ".join(str(info[k]) for k in ("author", "date") if info.get(k))
        out += [f"  {who}"] if who else []
        url = Links(result, commit_url, fork_url).url(first_bad)
        out += [f"  {url}"] if url else []
        patches = result.get("patches_at_first_bad")
        if patches:
            counts = Counter(p.get("action", "?") for p in patches)
            out.append("  patch stack: " + ", ".join(f"{n} {a}" for a, n in counts.items()))
        for m in result.get("submodules_at_first_bad") or []:
            span = m.get("upstream_commits")
            out.append(f"  moved {m.get('path')}: {short(m.get('old') or '(none)')} -> "
                       f"{short(m.get('new') or '(removed)')}"
                       + (f" ({span} upstream commits)" if span is not None else ""))
    elif status == "inconclusive":
        cands = [short(str(c)) for c in result.get("candidates") or []]
        shown = " ".join(cands[:5]) + (f" ... ({len(cands) - 5} more)" if len(cands) > 5 else "")
        out += [f"inconclusive{where}: only skipped commits left",
                f"  first {new} commit is one of {len(cands)}: {shown}"]
    else:
        out.append(f"{status}{where}: {result.get('error') or 'no decision'}")
    out.append(f"  searched {searched(result, None, markdown=False)}")
    checked = (result.get("check_stack") or {}).get("conclusion")
    out += [f"  check-stack: {checked}"] if checked else []
    for e in result.get("stops_applying") or []:
        first = short(str(e.get("first_conflict", "")))
        clean = short(str(e.get("last_clean") or ""))
        where = (f"from {first}" if not clean else f"at {first}" if e.get("exact")
                 else f"between {clean} and {first}")
        out.append(f"  local patch {short(str(e.get('patch', '')))} stops applying {where}: "
                   "rebase it")
    flagged = sum(1 for s in result_steps(result) if s.get("flags"))
    out += [f"  {flagged} flagged step(s): check these verdicts"] if flagged else []
    out += [f"  next: {line}" for line in result.get("followup") or [] if
            str(line).startswith(COMMANDS)]
    out += [f"  reproduce: {reproduce_command(result)}"] if reproduce_command(result) else []
    return out
