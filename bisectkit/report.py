"""Paste-ready reports of a bisect result (the ``--json`` dict).

``render_markdown`` writes a report for a GitHub issue or a chat: the range
searched, the culprit, what the patch stack (or the submodule moves) did there
and just before, the first error lines of its logs, the local patches that stop
applying in the range, the skipped and flagged steps, the follow-up commands
and the command that reproduces the run. ``render_terminal`` is the same in a
few plain lines. Pure: reads step log files, nothing else.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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
_SECTION_RE = re.compile(r"^# --- (.+) ---$")
_COMMANDS = ("bisectkit ", "git ", "git-bisect-patched ")


# -- small pieces ---------------------------------------------------------------
def error_lines(text: str, limit: int) -> list[str]:
    """The first ``limit`` distinct lines of ``text`` that carry an error marker.

    Colour codes and carriage-return progress are removed; each line is stripped
    and cut to about ``MAX_LINE`` characters.
    """
    found: list[str] = []
    for raw in _ANSI_RE.sub("", text).replace("\r", "\n").splitlines():
        if len(found) >= limit:
            break
        line = _cut(raw.strip())
        if _ERROR_RE.search(line) and line not in found:
            found.append(line)
    return found


def commit_link(sha: str, template: str | None) -> str:
    """``sha`` as Markdown: a link if ``template`` (``{sha}``, ``{short}``), else `sha12`."""
    if not sha:
        return "(unknown)"
    url = _url(sha, template)
    return f"[`{sha[:12]}`]({url})" if url else f"`{sha[:12]}`"


def _url(sha: str, template: str | None) -> str | None:
    """The commit's web address from ``template``, if any."""
    if not template or not sha:
        return None
    return template.replace("{sha}", sha).replace("{short}", sha[:12])


class Links:
    """Which web address each commit of a result links to.

    Upstream commits (the candidates of a submodule bisect, its ends) use
    ``commit_url`` (git config ``bisectkit.commit-url``). Commits that exist
    only in the fork (every patch of the stack: local patches, the fork's
    cherry-picks and reverts, and so every candidate of a ``--stack`` bisect)
    use ``fork_url`` (``bisectkit.fork-url``) or get no link: an upstream
    address would 404. In an integrate bisect the commits are the
    superproject's, linked with ``commit_url`` as before.
    """

    def __init__(self, result: Result, commit_url: str | None = None,
                 fork_url: str | None = None) -> None:
        self.commit_url = commit_url
        self.fork_url = fork_url
        self._stack = result.get("strategy") == "stack"
        # The only upstream commit of a stack bisect: the --at it patches.
        self._upstream = {str(g) for g in result.get("good") or []}

    def template(self, sha: str, patch: bool = False) -> str | None:
        """The template for ``sha`` (``patch``: it is a patch of the stack)."""
        fork_only = patch or (self._stack and sha not in self._upstream)
        return self.fork_url if fork_only else self.commit_url

    def url(self, sha: str, patch: bool = False) -> str | None:
        return _url(sha, self.template(sha, patch))

    def md(self, sha: str, patch: bool = False) -> str:
        """``sha`` as Markdown, linked where it has an address."""
        return commit_link(sha, self.template(sha, patch))


def _cut(line: str, width: int = MAX_LINE) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def _text(value: Any) -> str:
    """Free text for Markdown: no line breaks, no accidental HTML tags."""
    return re.sub(r"<(?=[A-Za-z/!?])", r"\\<", " ".join(str(value or "").split()))


def _cell(value: Any, width: int = 120) -> str:
    """Free text for a table cell."""
    return _cut(_text(value), width).replace("|", "\\|")


def _fence(lines: Sequence[str], lang: str = "") -> list[str]:
    """A fenced code block long enough not to be closed by backticks inside ``lines``."""
    runs = [len(r) for line in lines for r in re.findall("`+", line)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return [fence + lang, *lines, fence]


def _terms(result: Result) -> tuple[str, str]:
    """The words for good and bad (``broken``/``fixed`` in a find-fix run)."""
    terms = result.get("terms") or {}
    return terms.get("old") or "good", terms.get("new") or "bad"


def _verdict(verdict: str, result: Result) -> str:
    old, new = _terms(result)
    return {"good": old, "bad": new, "skip": "skipped"}.get(verdict, verdict)


def _where(result: Result) -> str:
    """Where the bisect ran, for the title: `` in `path` ``, `` on the integrate branch``."""
    strategy, sub = result.get("strategy"), result.get("submodule")
    if strategy == "integrate":
        return " on the integrate branch"
    if strategy == "stack":
        return f" in the patch stack of `{sub}`" if sub else " in the patch stack"
    return f" in `{sub}`" if sub else ""


def _steps(result: Result) -> list[dict[str, Any]]:
    return list(result.get("steps") or [])


def _searched(result: Result, links: Links | None, markdown: bool = True) -> str:
    """``good X .. bad Y on upstream: N candidate commits, M steps (a good, b bad, ...)``."""
    old, new = _terms(result)
    show = links.md if markdown and links else (lambda s: s[:12])
    goods = ", ".join(show(g) for g in result.get("good") or []) or "?"
    text = f"{old} {goods} .. {new} {show(result['bad']) if result.get('bad') else '?'}"
    if result.get("upstream"):
        text += f" on `{result['upstream']}`" if markdown else f" on {result['upstream']}"
    steps = _steps(result)
    size = result.get("range_size")
    text += f": {size} candidate commits, " if size is not None else ": "
    counts = Counter(s.get("verdict") for s in steps)
    parts = [f"{counts[v]} {_verdict(v, result)}" for v in ("good", "bad", "skip") if counts[v]]
    cached = sum(1 for s in steps if s.get("source") == "cache")
    if cached:
        parts.append(f"{cached} from cache")
    text += f"{len(steps)} step{'s' * (len(steps) != 1)}"
    return text + (f" ({', '.join(parts)})" if parts else "")


# -- step logs ------------------------------------------------------------------
def _log_sections(path: str | None) -> dict[str, str] | None:
    """The ``# --- phase ---`` sections of a step log; None if it cannot be read."""
    if not path:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _SECTION_RE.match(line)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
    return {phase: "\n".join(lines) for phase, lines in sections.items()}


def _evidence_step(result: Result) -> tuple[dict[str, Any] | None, bool]:
    """The step whose log shows the failure, and whether it tested the culprit itself."""
    # A --check-stack step tested the culprit without the patch stack: not the failure.
    steps = [s for s in _steps(result) if s.get("log") and s.get("source") != "check-stack"]
    first_bad = result.get("first_bad")
    own = [s for s in steps if s.get("commit") == first_bad]
    if own:
        return own[-1], True
    bad = [s for s in steps if s.get("verdict") == "bad"]
    return (bad[0], False) if bad else (None, False)


def _error_block(result: Result, limit: int) -> list[str]:
    """The "error lines" section: repro first, then build, capped at ``limit`` lines."""
    step, own = _evidence_step(result)
    if step is None:
        return []
    _, new = _terms(result)
    label = f"step {step.get('index')} (`{str(step.get('commit', ''))[:12]}`"
    label += f", {_verdict(step.get('verdict', ''), result)}: {_text(step.get('reason'))})"
    if not own:
        label += f"; the first {new} commit is the {new} end and was not tested itself"
    sections = _log_sections(step.get("log"))
    if sections is None:
        return ["#### Error lines", "", f"_The log of {label} is missing: `{step['log']}`._"]
    order = sorted(sections, key=lambda p: (not p.startswith("repro"), p != "build", p))
    body: list[str] = []
    room = limit
    for phase in order:
        lines = error_lines(sections[phase], room) if room > 0 else []
        if lines:
            body += [f"# --- {phase} ---", *lines]
            room -= len(lines)
    heading = [f"#### Error lines from {label}", ""]
    if body:
        return heading + _fence(body, "text")
    tail = [_cut(line.strip()) for line in sections.get("repro", "").splitlines() if line.strip()]
    if not tail:
        return heading + ["_No error lines in its log._"]
    return heading + ["No error lines; the last lines of its repro output:", ""] + _fence(
        ["# --- repro ---", *tail[-min(5, limit) :]], "text")


# -- tables ---------------------------------------------------------------------
def _patch_name(p: Mapping[str, Any], links: Links) -> str:
    return f"{links.md(p.get('commit', ''), patch=True)} {_cell(p.get('subject'), 70)}".rstrip()


def _patch_table(at: Sequence[Mapping[str, Any]], before: Sequence[Mapping[str, Any]] | None,
                 labels: tuple[str, str], links: Links) -> list[str]:
    """What each patch did at the culprit (and the commit before it), one row per patch.

    When the stack is long, patches applied at both commits are summed up in one line.
    """
    prev = {p.get("commit"): p for p in before or []}
    rows: list[tuple[bool, list[str]]] = []  # (boring, cells)
    for p in at:
        action, why = p.get("action", "?"), _cell(p.get("why"))
        cells = [_cell(p.get("kind")), _patch_name(p, links), action]
        if before is not None:
            q = prev.pop(p.get("commit"), None)
            was = q.get("action", "?") if q else "(not in stack)"
            cells.append(was)
            if q and was != action and q.get("why") and q.get("why") != p.get("why"):
                why += f" (before: {_cell(q.get('why'))})"
        rows.append((all(a == "applied" for a in cells[2:]), [*cells, why]))
    for q in prev.values():  # patches the stack had only at the previous commit
        rows.append((False, [_cell(q.get("kind")), _patch_name(q, links), "(not in stack)",
                             q.get("action", "?"), _cell(q.get("why"))]))
    hidden = sum(boring for boring, _ in rows) if len(rows) > MAX_ROWS else 0
    head = ["kind", "patch", f"at {labels[0]}"]
    head += [f"at {labels[1]}"] if before is not None else []
    out = ["| " + " | ".join([*head, "why"]) + " |", "|" + "---|" * (len(head) + 1)]
    out += ["| " + " | ".join(cells) + " |" for boring, cells in rows if not (hidden and boring)]
    if hidden:
        both = " at both commits" if before is not None else ""
        out += ["", f"... and {hidden} more patches applied{both}."]
    return out


def _moves_table(moves: Sequence[Mapping[str, Any]]) -> list[str]:
    """The submodules an integrate commit moved, with their upstream ranges."""
    out = ["| submodule | old | new | upstream range | upstream commits |", "|---|---|---|---|---|"]
    for m in moves:
        old = f"`{m['old'][:12]}`" if m.get("old") else "(none)"
        new = f"`{m['new'][:12]}`" if m.get("new") else "(removed)"
        base = (f"`{m['old_base'][:12]}`..`{m['new_base'][:12]}`"
                if m.get("old_base") and m.get("new_base") else "")
        count = m.get("upstream_commits")
        out.append(f"| `{_cell(m.get('path'))}` | {old} | {new} | {base} | "
                   f"{'' if count is None else count} |")
    return out


def _capped(rows: Sequence[str], what: str) -> list[str]:
    """``rows`` (of a table or list), at most ``MAX_ROWS``, then ``... N more <what>``."""
    if len(rows) <= MAX_ROWS:
        return list(rows)
    return [*rows[:MAX_ROWS], "", f"... {len(rows) - MAX_ROWS} more {what}."]


def _skipped(result: Result, links: Links) -> list[str]:
    steps = [s for s in _steps(result) if s.get("verdict") == "skip"
             and s.get("source") != "check-stack"]  # reported in its own section
    if not steps:
        return []
    rows = [f"| {s.get('index', '')} | {links.md(s.get('commit', ''))} | "
            f"{_cell(s.get('reason'))} |" for s in steps]
    return [f"#### Skipped commits ({len(steps)})", "", "| step | commit | reason |",
            "|---|---|---|", *_capped(rows, "skipped commits")]


def _flagged(result: Result, links: Links) -> list[str]:
    steps = [s for s in _steps(result) if s.get("flags")]
    if not steps:
        return []
    rows = [f"- step {s.get('index', '')} {links.md(s.get('commit', ''))} "
            f"({_verdict(s.get('verdict', ''), result)}): "
            f"{_text('; '.join(map(str, s['flags'])))}" for s in steps]
    return [f"#### Flagged steps ({len(steps)}): check these verdicts", "",
            *_capped(rows, "flagged steps")]


def _stops_applying(result: Result, links: Links) -> list[str]:
    """Local patches that stop applying in the range, and onto which commit to rebase them."""
    entries = list(result.get("stops_applying") or [])
    if not entries:
        return []
    rows: list[str] = []
    for e in entries:
        patch = f"local patch {links.md(e.get('patch', ''), patch=True)} {_text(e.get('subject'))}"
        first = f"{links.md(e.get('first_conflict', ''))} " \
                f"{_text(e.get('first_conflict_subject'))}".rstrip()
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
    return ["#### Local patches that stop applying", "", *_capped(rows, "patches")]


def _on_conflict(result: Result) -> list[str]:
    """With ``--on-conflict drop``: say that some steps lacked a local patch."""
    if result.get("on_conflict") != "drop":
        return []
    without = sum(1 for s in _steps(result) if any(
        str(f).startswith("tested without ") for f in s.get("flags") or ()))
    return [f"**On conflict:** a conflicting local patch was left out (`--on-conflict drop`); "
            f"{without} step{'s' * (without != 1)} tested without one (flagged below).", ""]


def _followup(result: Result) -> list[str]:
    """Follow-up lines: commands in ``sh`` blocks, the rest as text."""
    lines = [str(line) for line in result.get("followup") or [] if str(line).strip()]
    if not lines:
        return []
    out = ["#### Next", ""]
    block: list[str] = []
    for line in [*lines, ""]:
        if line.startswith(_COMMANDS):
            block.append(line)
            continue
        if block:
            out += [*_fence(block, "sh"), ""]
            block = []
        if line:
            out += [_text(line), ""]
    return out[:-1]


def _reproduce(result: Result) -> str:
    """The command that runs the bisection again: ``reproduce`` (full shas, settings from
    git config spelt out), else the command line as typed (results of older versions)."""
    return str(result.get("reproduce") or result.get("command") or "")


# -- reports --------------------------------------------------------------------
def render_markdown(result: Result, commit_url: str | None = None,
                    max_error_lines: int = 12, fork_url: str | None = None) -> str:
    """The whole report as Markdown, ready to paste into a GitHub issue or a chat.

    ``commit_url`` is a template such as ``https://github.com/llvm/llvm-project/commit/{sha}``
    (git config ``bisectkit.commit-url``) used to link the commits; ``fork_url``
    (``bisectkit.fork-url``) links the commits only the fork has (see :class:`Links`).
    """
    status = result.get("status", "?")
    old, new = _terms(result)
    first_bad = result.get("first_bad")
    where = _where(result)

    links = Links(result, commit_url, fork_url)
    link = links.md

    if status == "found" and first_bad:
        out = [f"### bisectkit: first {new} commit{where}", ""]
    else:
        out = [f"### bisectkit: {status}{where}", ""]
    out += [f"**Searched:** {_searched(result, links)}.", ""]
    out += _on_conflict(result)

    if status == "found" and first_bad:
        info = result.get("first_bad_info") or {}
        subject = info.get("subject") or result.get("first_bad_subject") or ""
        out.append(f"**First {new} commit:** {link(first_bad)} {_text(subject)}".rstrip())
        out += [f"- {k}: {_text(info[k])}" for k in ("author", "date") if info.get(k)]
        out.append("")
        prev = result.get("previous") or {}
        labels = (f"`{first_bad[:12]}`", f"`{prev['sha'][:12]}`" if prev.get("sha") else "previous")
        prev_desc = f"{link(prev.get('sha', ''))} {_text(prev.get('subject'))}".rstrip()
        patches = result.get("patches_at_first_bad")
        if patches is not None:
            title = f"#### Patch stack at {labels[0]}"
            if prev.get("patches") is not None:
                title += f" and the commit before it, {prev_desc}"
            out += [title, "", *_patch_table(patches, prev.get("patches"), labels,
                                                      links), ""]
        moves = result.get("submodules_at_first_bad")
        if moves is not None:
            out += [f"#### Submodules moved by {labels[0]}", "", *_moves_table(moves), ""]
        if prev.get("submodules"):
            out += [f"#### Submodules moved by the commit before it, {prev_desc}", "",
                    *_moves_table(prev["submodules"]), ""]
        elif prev.get("sha") and (patches is None or prev.get("patches") is None):
            out += [f"Commit before it: {prev_desc}", ""]
        block = _error_block(result, max_error_lines)
        out += [*block, ""] if block else []
    elif status == "inconclusive":
        cands = [str(c) for c in result.get("candidates") or []]
        out += [f"Only skipped commits are left: the first {new} commit is one of these "
                f"{len(cands)}:", "", *_capped([f"- {link(c)}" for c in cands], "candidates"), ""]
    elif status == "aborted":
        out += [f"The run stopped without a decision: {_text(result.get('error') or 'unknown')}.",
                ""]
    else:
        out += [f"No first {new} commit was found.", ""]

    checked = (result.get("check_stack") or {}).get("conclusion")
    if checked:
        out += [f"**Check without the patch stack:** {_text(checked)}.", ""]
    for section in (_stops_applying(result, links), _skipped(result, links),
                    _flagged(result, links), _followup(result)):
        out += [*section, ""] if section else []
    if _reproduce(result):
        out += ["Reproduce with:", "", *_fence([_reproduce(result)], "sh"), ""]
    return "\n".join(out).rstrip() + "\n"


def render_terminal(result: Result, commit_url: str | None = None,
                    fork_url: str | None = None) -> list[str]:
    """The report in a few plain lines for a terminal (no Markdown)."""
    status = result.get("status", "?")
    _, new = _terms(result)
    where = _where(result).replace("`", "")
    first_bad = result.get("first_bad")
    out: list[str] = []
    if status == "found" and first_bad:
        info = result.get("first_bad_info") or {}
        subject = info.get("subject") or result.get("first_bad_subject") or ""
        out.append(f"first {new} commit{where}: {first_bad[:12]} {subject}".rstrip())
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
            out.append(f"  moved {m.get('path')}: {(m.get('old') or '(none)')[:12]} -> "
                       f"{(m.get('new') or '(removed)')[:12]}"
                       + (f" ({span} upstream commits)" if span is not None else ""))
    elif status == "inconclusive":
        cands = [str(c)[:12] for c in result.get("candidates") or []]
        shown = " ".join(cands[:5]) + (f" ... ({len(cands) - 5} more)" if len(cands) > 5 else "")
        out += [f"inconclusive{where}: only skipped commits left",
                f"  first {new} commit is one of {len(cands)}: {shown}"]
    else:
        out.append(f"{status}{where}: {result.get('error') or 'no decision'}")
    out.append(f"  searched {_searched(result, None, markdown=False)}")
    checked = (result.get("check_stack") or {}).get("conclusion")
    out += [f"  check-stack: {checked}"] if checked else []
    for e in result.get("stops_applying") or []:
        first, clean = str(e.get("first_conflict", ""))[:12], str(e.get("last_clean") or "")[:12]
        where = (f"from {first}" if not clean else f"at {first}" if e.get("exact")
                 else f"between {clean} and {first}")
        out.append(f"  local patch {str(e.get('patch', ''))[:12]} stops applying {where}: "
                   "rebase it")
    flagged = sum(1 for s in _steps(result) if s.get("flags"))
    out += [f"  {flagged} flagged step(s): check these verdicts"] if flagged else []
    out += [f"  next: {line}" for line in result.get("followup") or [] if
            str(line).startswith(_COMMANDS)]
    out += [f"  reproduce: {_reproduce(result)}"] if _reproduce(result) else []
    return out
