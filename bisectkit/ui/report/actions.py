"""The answer of ``bisectkit actions``, for the terminal and as Markdown for an upstream
bug, both from its JSON document (:meth:`bisectkit.actions.search.Answer.to_json`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _action(data: Mapping[str, Any]) -> str:
    """``EarlyCSEPass on checked_add`` (at LOC, in pass P), or '' when not named."""
    action = data.get("action")
    if not action:
        return ""
    text = f"{action['name']} on {action['unit']}" if action.get("unit") else action["name"]
    if action.get("loc"):
        text += f" at {action['loc']}"
    if action.get("pass"):
        text += f" in pass {action['pass']}"
    return text


def headline(data: Mapping[str, Any]) -> str:
    """The answer in one line."""
    total = data["total"]
    first = data.get("first_bad")
    if first is None:
        numbers = ", ".join(f"#{n}" for n in data.get("candidates", []))
        return (f"only skipped limits separate good from bad: the first bad of the {total} "
                f"actions is one of {numbers}")
    named = _action(data)
    within = data.get("within")
    if within:
        # K counts the patterns inside the pass; the run's own number is before + K.
        what = (f"{within['counted']} {first} of the {total} inside {within['tag']} "
                f"#{within['number']} ({within['counted']} #{within['before'] + first} of "
                "the run)")
    else:
        what = f"action #{first} of {total}"
    return (f"{what} is the first bad action"
            + (f": {named}" if named else " (the tool does not name it)"))


def render_terminal(data: Mapping[str, Any]) -> list[str]:
    """The answer as the terminal shows it."""
    lines = ["", headline(data)]
    first = data.get("first_bad")
    runs = data["runs"]
    if first is not None:
        lines.append(f"  limit {first - 1}: good   limit {first}: bad")
    probes = f" + {runs['probes']} probes" if runs["probes"] else ""
    lines.append(f"  repro runs: {runs['enumeration']} to enumerate + {runs['limits']} at "
                 f"limits{probes} (bound for the limits: {runs['bound']})")
    for wrong in data.get("non_monotone", []):
        lines.append(f"  non-monotone: limit {wrong['limit']} is {wrong['verdict']}, "
                     f"against the answer; the behaviour comes and goes with the actions")
    for note in data.get("notes", []):
        lines.append(f"  note: {note}")
    replay = data.get("replay")
    if replay and data.get("commit"):
        lines.append(f"  at commit {str(data['commit'])[:12]}: the replays need it checked "
                     "out and built")
    if replay:
        lines.append(f"  replay (good): {replay['good']}")
        lines.append(f"  replay (bad):  {replay['bad']}")
    lines += _details_terminal(data)
    return lines


def _details_terminal(data: Mapping[str, Any]) -> list[str]:
    """The second-level command, the confirmation and the IR diff, as the terminal shows
    them."""
    lines: list[str] = []
    if data.get("within"):
        lines.append(f"  inside {data['within']['tag']} #{data['within']['number']}: "
                     f"{data['within']['action']}")
    if data.get("second_level"):
        lines.append(f"  bisect inside it: {data['second_level']}")
    if data.get("confirm"):
        lines.append(f"  {data['confirm']['line']}")
    if data.get("ir_note"):
        lines.append(f"  {data['ir_note']}")
    if data.get("ir_diff"):
        lines += data["ir_diff"].rstrip("\n").split("\n")
    return lines


def render_markdown(data: Mapping[str, Any]) -> str:
    """A Markdown report for an upstream bug: the action, the limits, the replay commands
    (or, for a procedure that stopped, why)."""
    kind = data.get("kind", "")
    if data.get("status") == "aborted":
        return (f"# Compiler actions bisection ({kind}): stopped\n\n"
                f"{data.get('reason', '')}\n")
    out = [f"# {headline(data)}", "", f"- kind: `{kind}`, {data['total']} actions"]
    if data.get("commit"):
        out.append(f"- at commit `{data['commit']}` (checked out and built as a bisection "
                   "step would)")
    first = data.get("first_bad")
    if first is not None:
        out.append(f"- limit {first - 1} is good, limit {first} is bad")
    runs = data["runs"]
    out.append(f"- repro runs: {runs['enumeration']} to enumerate, {runs['limits']} at limits "
               f"(bound {runs['bound']}), {runs['probes']} probes")
    for wrong in data.get("non_monotone", []):
        out.append(f"- **non-monotone**: limit {wrong['limit']} is {wrong['verdict']}")
    for note in data.get("notes", []):
        out.append(f"- note: {note}")
    if data.get("within"):
        out.append(f"- inside {data['within']['tag']} #{data['within']['number']}: "
                   f"`{data['within']['action']}`")
    if data.get("confirm"):
        out.append(f"- {data['confirm']['line']}")
    replay = data.get("replay")
    if replay:
        out += ["", "## Reproduce", "", "```sh", f"# good\n{replay['good']}",
                f"# bad\n{replay['bad']}", "```"]
    if data.get("second_level"):
        out += ["", "Bisect inside that action:", "", "```sh", data["second_level"], "```"]
    if data.get("ir_note") and not data.get("ir_diff"):
        out += ["", data["ir_note"]]
    if data.get("ir_diff"):
        out += ["", "## IR before and after the action", "", "```diff",
                data["ir_diff"].rstrip("\n"), "```"]
    return "\n".join(out) + "\n"
