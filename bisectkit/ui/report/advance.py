"""The report of ``bisectkit advance``: where the pin can go, and what stops it there.

The first commit the pin cannot move to is shown as a bisection shows its
first bad commit (who, the patch stack there and at the last good commit, the
error lines, the command that tests both again).
"""

from __future__ import annotations

from bisectkit.model import short
from bisectkit.ui.report.links import Links
from bisectkit.ui.report.markdown import closing, culprit
from bisectkit.ui.report.terminal import render_terminal
from bisectkit.ui.report.text import Result, md_text


def headline(result: Result) -> str:
    """One line: how far the pin can move."""
    path, to = result.get("submodule", "?"), short(str(result.get("to", "")))
    status = result.get("status")
    if status == "up-to-date":
        return f"{path} is up to date with {result.get('to_ref')}"
    if status == "stuck":
        return f"{path} cannot move past its merge-base {to}"
    return (f"{path} can move {result.get('crossed')} of {result.get('range_size')} upstream "
            f"commits, to {to} {result.get('to_subject', '')}").rstrip()


def render_advance_markdown(result: Result, commit_url: str | None = None,
                            max_error_lines: int = 12, fork_url: str | None = None) -> str:
    """The whole report as Markdown (see :func:`bisectkit.ui.report.render_markdown`)."""
    links = Links(result, commit_url, fork_url)
    out = [f"### bisectkit advance: {md_text(headline(result))}", ""]
    search = "each commit in order" if result.get("search") == "linear" else \
        "a search biased toward the pin (the far end first)"
    out += [f"**Searched:** the {result.get('range_size')} affecting upstream commits after "
            f"the merge-base {links.md(str(result.get('from', '')))} up to "
            f"`{result.get('to_ref')}` {links.md(str(result.get('target', '')))}, by {search}: "
            f"{result.get('builds')} builds.", ""]
    first_bad = result.get("first_bad")
    stop = result.get("stopped_by")
    if first_bad and stop:
        out += [f"**Stopped at:** {links.md(first_bad)} (step {stop.get('step')}): "
                f"{md_text(stop.get('reason'))}.", ""]
    if first_bad:
        out += culprit(result, first_bad, links, max_error_lines)
    elif result.get("candidates"):
        out += ["Only skipped commits follow the last good one; the first commit the pin "
                "cannot move to is one of:", "",
                *(f"- {links.md(str(c))}" for c in result["candidates"]), ""]
    out += closing(result, links)
    return "\n".join(out).rstrip() + "\n"


def render_advance_terminal(result: Result, commit_url: str | None = None,
                            fork_url: str | None = None) -> list[str]:
    """The report in a few plain lines."""
    out = [f"advance: {headline(result)}"]
    stop = result.get("stopped_by")
    if result.get("first_bad") and stop:
        out.append(f"  stopped at {short(str(stop.get('commit')))} (step {stop.get('step')}): "
                   f"{stop.get('reason')}")
    if result.get("first_bad"):
        out += render_terminal(dict(result, status="found"), commit_url, fork_url)
    elif result.get("candidates"):
        out += render_terminal(dict(result, status="inconclusive"), commit_url, fork_url)
    # The bisection's "searched good .. bad" would call the far end bad: it is not.
    return [line for line in out if not line.startswith("  searched ")]
