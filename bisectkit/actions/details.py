"""What ``bisectkit actions`` adds to an answer on request, each from more repro runs:

- ``--ir``: the IR of the unit before and after the first bad action, as a diff.
- ``--confirm``: a run of every action but the first bad one, where the tool takes
  intervals (OptBisect's ``--opt-bisect=1-6,8-169``): does the output turn good?

Neither ever fails the answer: what cannot be had is said in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bisectkit.actions import irdump
from bisectkit.actions.kinds import Kind
from bisectkit.actions.listing import Action
from bisectkit.actions.tester import Ran, Tester
from bisectkit.errors import Aborted

#: MLIR dumps of the whole module after each pass: dumps of one function or one nested
#: op would not line up between two runs.
_MLIR_IR = ("--mlir-print-ir-after-all", "--mlir-print-ir-module-scope")
#: LLVM dumps before and after every pass. Not ``-print-before=P -print-after=P``: that
#: takes the pipeline name (``early-cse``) while OptBisect prints the class name
#: (``EarlyCSEPass``) or the legacy description (``Early CSE``), and a wrong name prints
#: nothing without an error (opt 14 and 19 alike); ``-print-pipeline-passes`` lists the
#: pipeline, not each execution. Every pass's dump, read next to the BISECT lines, names
#: pass N whichever pass manager runs it, and the bad limit bounds what is printed.
_LLVM_IR = ("-print-before-all", "-print-after-all")
_UNIT = re.compile(r"^(?:function |SCC )?\(([^)]*)\)$|in function (\S+)$|^([\w.$]+)$")


@dataclass
class IrDiff:
    """``--ir``'s result: the diff (None: not obtained) and what to tell the user."""

    diff: str | None
    note: str


def ir_diff(kind: Kind, tester: Tester, first: int, action: Action | None) -> IrDiff:
    """The IR before and after action ``first`` (``action``: as the enumeration named it)."""
    if kind.family == "opt-bisect":
        if action is None:
            return IrDiff(None, "--ir: the pass was not named, its IR dumps cannot be found")
        ran = tester.run(f"ir at limit {first}",
                         (*kind.limit(first), *_LLVM_IR, *_filter(action.unit)), None,
                         judge=False)
        pair = irdump.opt_pair(ran.text, first)
        if pair is None:
            return IrDiff(None, f"--ir: the tool printed no IR dump around pass ({first}) "
                                "(-print-before-all/-print-after-all)")
        return _diffed(*pair, action.describe(),
                       (f"before {action.describe()}", f"after {action.describe()}"))
    if kind.family == "mlir-counter":
        good, bad = (tester.run(f"ir at limit {n}", (*kind.limit(n), *_MLIR_IR), None,
                                judge=False) for n in (first - 1, first))
        pair = irdump.first_difference(irdump.mlir_dumps(good.text), irdump.mlir_dumps(bad.text))
        if pair is None:
            return IrDiff(None, f"--ir: the IR MLIR prints after each pass is the same at "
                                f"limits {first - 1} and {first}")
        named = action.describe() if action else f"action #{first}"
        after = irdump.mlir_title(pair[1])
        return _diffed(*pair, f"{named} (the module {after})",
                       (f"limit {first - 1}, {after}", f"limit {first}, {after}"))
    return IrDiff(None, "--ir: an LLVM debug-counter query has no IR dump of its own "
                        "(--ir covers --kind opt-bisect and mlir-counter)")


def _diffed(before: irdump.Dump, after: irdump.Dump, what: str,
            labels: tuple[str, str]) -> IrDiff:
    """The diff of two dumps (``labels``: their names in it), or why there is none."""
    if before.text == after.text:
        return IrDiff(None, f"--ir: the action did not change the IR printed ({what})")
    return IrDiff(irdump.unified(before, after, *labels), f"IR before and after {what}:")


def _filter(unit: str) -> tuple[str, ...]:
    """``-filter-print-funcs`` for the unit a BISECT line names: its functions (none for
    a module, or a loop whose function is not named)."""
    m = _UNIT.search(unit.strip())
    names = next((g for g in m.groups() if g), "") if m else ""
    names = ",".join(n.strip() for n in names.split(",") if n.strip())
    return (f"-filter-print-funcs={names}",) if names else ()


def confirm(kind: Kind, tester: Tester, first: int, total: int) -> dict[str, Any]:
    """``--confirm``: run every action but ``first``; the JSON ``confirm`` object."""
    if kind.family != "opt-bisect":
        what = ("MLIR's debug counter takes only skip and count" if kind.mlir
                else "this LLVM debug counter is not given intervals here")
        return {"confirmed": None, "line": f"--confirm: {what}, not intervals: not confirmed"}
    spans = ([f"1-{first - 1}"] if first > 1 else []) + (
        [f"{first + 1}-{total}"] if first < total else [])
    flag = f"--opt-bisect={','.join(spans) or '0'}"
    try:
        ran = tester.run(f"every action but #{first}", (flag,), None, crash_is_skip=True)
    except Aborted as exc:
        return {"confirmed": None, "flags": flag, "line": f"not confirmed: {exc}"}
    if not _skipped_only(ran, first, total):
        return {"confirmed": None, "flags": flag,
                "line": "the tool takes no --opt-bisect intervals: not confirmed"}
    verdict = ran.verdict
    if verdict == "good":
        line = f"confirmed: with every action but #{first} run, the repro says good"
    elif verdict == "bad":
        line = (f"not confirmed: with every action but #{first} run the repro still says "
                f"bad: other actions cause the behaviour too")
    else:
        line = f"not confirmed: with every action but #{first} run the repro says {verdict}"
    return {"confirmed": verdict == "good", "flags": flag, "verdict": verdict, "line": line,
            "reason": ran.reason}


def _skipped_only(ran: Ran, first: int, total: int) -> bool:
    """Did the tool read the intervals: pass ``first`` NOT run, its neighbours run?"""
    text = ran.text
    if f"BISECT: NOT running pass ({first}) " not in text:
        return False
    around = [n for n in (first - 1, first + 1) if 1 <= n <= total]
    return not around or any(f"BISECT: running pass ({n}) " in text for n in around)
