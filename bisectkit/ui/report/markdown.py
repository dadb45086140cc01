"""The Markdown report, ready to paste into a GitHub issue or a chat."""

from __future__ import annotations

from bisectkit.model import short
from bisectkit.ui.report.links import Links
from bisectkit.ui.report.logs import error_block
from bisectkit.ui.report.sections import (
    flagged_section,
    followup_section,
    moves_table,
    on_conflict_note,
    patch_table,
    searched,
    skipped_section,
    stops_applying_section,
)
from bisectkit.ui.report.text import (
    Result,
    capped,
    fence,
    md_text,
    reproduce_command,
    result_terms,
    where_ran,
)


def render_markdown(result: Result, commit_url: str | None = None,
                    max_error_lines: int = 12, fork_url: str | None = None) -> str:
    """The whole report as Markdown, ready to paste into a GitHub issue or a chat.

    ``commit_url`` is a template such as ``https://github.com/llvm/llvm-project/commit/{sha}``
    (git config ``bisectkit.commit-url``) used to link the commits; ``fork_url``
    (``bisectkit.fork-url``) links the commits only the fork has (see :class:`Links`).
    """
    status = result.get("status", "?")
    _, new = result_terms(result)
    first_bad = result.get("first_bad")
    where = where_ran(result)
    links = Links(result, commit_url, fork_url)

    if status == "found" and first_bad:
        out = [f"### bisectkit: first {new} commit{where}", ""]
    else:
        out = [f"### bisectkit: {status}{where}", ""]
    out += [f"**Searched:** {searched(result, links)}.", ""]
    out += on_conflict_note(result)
    if status == "found" and first_bad:
        out += culprit(result, first_bad, links, max_error_lines)
    else:
        out += _undecided(result, status, links)
    out += closing(result, links)
    return "\n".join(out).rstrip() + "\n"


def culprit(result: Result, first_bad: str, links: Links, max_error_lines: int) -> list[str]:
    """The first bad commit: who and when, the patch stack or the submodule moves there and
    just before, and the error lines of its log."""
    _, new = result_terms(result)
    link = links.md
    info = result.get("first_bad_info") or {}
    subject = info.get("subject") or result.get("first_bad_subject") or ""
    out = [f"**First {new} commit:** {link(first_bad)} {md_text(subject)}".rstrip()]
    out += [f"- {k}: {md_text(info[k])}" for k in ("author", "date") if info.get(k)]
    out.append("")
    prev = result.get("previous") or {}
    labels = (f"`{short(first_bad)}`", f"`{short(prev['sha'])}`" if prev.get("sha") else "previous")
    prev_desc = f"{link(prev.get('sha', ''))} {md_text(prev.get('subject'))}".rstrip()
    patches = result.get("patches_at_first_bad")
    if patches is not None:
        title = f"#### Patch stack at {labels[0]}"
        if prev.get("patches") is not None:
            title += f" and the commit before it, {prev_desc}"
        out += [title, "", *patch_table(patches, prev.get("patches"), labels, links), ""]
    moves = result.get("submodules_at_first_bad")
    if moves is not None:
        out += [f"#### Submodules moved by {labels[0]}", "", *moves_table(moves), ""]
    if prev.get("submodules"):
        out += [f"#### Submodules moved by the commit before it, {prev_desc}", "",
                *moves_table(prev["submodules"]), ""]
    elif prev.get("sha") and (patches is None or prev.get("patches") is None):
        out += [f"Commit before it: {prev_desc}", ""]
    block = error_block(result, max_error_lines)
    out += [*block, ""] if block else []
    return out


def _undecided(result: Result, status: str, links: Links) -> list[str]:
    """Why there is no first bad commit: the candidates left, the abort, or nothing found."""
    _, new = result_terms(result)
    if status == "inconclusive":
        cands = [str(c) for c in result.get("candidates") or []]
        return [f"Only skipped commits are left: the first {new} commit is one of these "
                f"{len(cands)}:", "",
                *capped([f"- {links.md(c)}" for c in cands], "candidates"), ""]
    if status == "aborted":
        return [f"The run stopped without a decision: "
                f"{md_text(result.get('error') or 'unknown')}.", ""]
    return [f"No first {new} commit was found.", ""]


def closing(result: Result, links: Links) -> list[str]:
    """The sections after the verdict: --check-stack, the patches that stop applying, the
    skipped and flagged steps, the follow-ups and the command that reproduces the run."""
    out: list[str] = []
    checked = (result.get("check_stack") or {}).get("conclusion")
    if checked:
        out += [f"**Check without the patch stack:** {md_text(checked)}.", ""]
    for section in (stops_applying_section(result, links), skipped_section(result, links),
                    flagged_section(result, links), followup_section(result)):
        out += [*section, ""] if section else []
    if reproduce_command(result):
        out += ["Reproduce with:", "", *fence([reproduce_command(result)], "sh"), ""]
    return out
