"""What the compilers print about their actions, read into numbered :class:`Action` s.

Pure text in, values out; every format here was read off the real tools (Debian's
``opt``/``llc``/``mlir-opt`` 14 and 19, IREE's ``iree-compile``/``iree-opt``):

- OptBisect, on stderr, one line per pass execution, numbered from 1::

      BISECT: running pass (17) InstCombinePass on checked_add
      BISECT: NOT running pass (18) Simplify the CFG on function (f)

- MLIR's ``--mlir-print-debug-counter``, on stderr, printed twice (the last table
  holds the run's counts)::

      DebugCounter counters:
      apply-pattern                   : {39,0,-1}

- MLIR's ``--log-actions-to=FILE`` (with ``--mlir-print-debuginfo``), one ``begins``
  line per action and a ``completed`` line when it ends, nested::

      [thread mlir-opt] begins (no breakpoint) Action `pass-execution` running `CSE` on
      Operation `builtin.module` (module {...} loc("m.mlir":0:0))`
      [thread mlir-opt] begins (no breakpoint) Action `apply-pattern pattern: X (%0 =
      arith.addi %a, %c : i32 loc("m.mlir":4:8))`
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Action:
    """Action ``number`` (1-based) of a run: what ran (``name``: a pass, a pattern, a
    counter) on what (``unit``: a function, an op, ``[module]``), where in the input
    (``loc``: MLIR's ``file:line:col``) and inside which pass (``within``)."""

    number: int
    name: str
    unit: str = ""
    loc: str | None = None
    within: str | None = None

    def describe(self) -> str:
        """``InstCombinePass on checked_add`` (``at m.mlir:4:8``, ``in pass Canonicalizer``)."""
        text = f"{self.name} on {self.unit}" if self.unit else self.name
        if self.loc:
            text += f" at {self.loc}"
        if self.within:
            text += f" in pass {self.within}"
        return text


@dataclass(frozen=True)
class Listing:
    """One enumeration: how many actions the counter counted (``total``) and, when the
    tool named them, each one in order (``actions``; empty: not named); for the actions
    inside one action (``--within``), that action (``parent``)."""

    total: int
    actions: tuple[Action, ...] = field(default_factory=tuple)
    parent: Action | None = None
    #: The LLVM debug counters that counted queries in the run (``-print-debug-counter``):
    #: name and count, for the second level of an OptBisect answer.
    counters: tuple[tuple[str, int], ...] = ()

    def named(self, number: int) -> Action | None:
        """Action ``number`` as named, if it was."""
        if 1 <= number <= len(self.actions):
            return self.actions[number - 1]
        return None


#: One OptBisect line: the pass execution's number, then ``NAME on UNIT``.
BISECT_LINE = re.compile(r"BISECT: (?:NOT )?running pass \((\d+)\) ([^\r\n]*)")


def opt_bisect(text: str) -> Listing | None:
    """The pass executions OptBisect printed in ``text`` (None: no BISECT line at all).

    Numbers must run 1, 2, 3, ... (one process's counter); a second counter in the same
    text (a tool run twice) makes the numbering ambiguous and is reported as a restart.
    """
    actions: list[Action] = []
    for m in BISECT_LINE.finditer(text):
        number, rest = int(m.group(1)), m.group(2).rstrip()
        if number != len(actions) + 1:
            raise ListingError(
                f"the OptBisect numbering restarts or jumps at pass ({number}) after "
                f"({len(actions)}): the compiler ran more than once, or in parallel")
        name, _, unit = rest.rpartition(" on ")
        actions.append(Action(number, name or rest, unit if name else ""))
    if not actions:
        return None
    return Listing(len(actions), tuple(actions))


_QUERY = re.compile(r"DebugCounter (\S+)=(\d+) (?:execute|skip)")


def llvm_counter_queries(text: str, name: str) -> Listing:
    """The queries of LLVM debug counter ``name`` that ``-print-debug-counter-queries``
    printed (``DebugCounter dagcombine=7 execute``), each in the pass execution whose
    OptBisect line came before it (``unit``: its unit, ``within``: ``x86-isel (#3465)``)."""
    actions: list[Action] = []
    current: tuple[str, str] | None = None
    for line in text.splitlines():
        bisect = BISECT_LINE.search(line)
        if bisect is not None:
            pass_name, _, unit = bisect.group(2).rstrip().rpartition(" on ")
            current = (f"{pass_name} (#{bisect.group(1)})", unit)
            continue
        query = _QUERY.search(line)
        if query is not None and query.group(1) == name:
            within, unit = current if current else (None, "")
            actions.append(Action(len(actions) + 1, f"{name}={query.group(2)}", unit,
                                  within=within))
    return Listing(len(actions), tuple(actions))


_COUNTER_ROW = re.compile(r"^\s*([\w.-]+)\s*:\s*\{(\d+),", re.MULTILINE)


def llvm_counters(text: str) -> tuple[tuple[str, int], ...]:
    """The counters LLVM's ``-print-debug-counter`` table (``dagcombine : {14151,empty}``)
    shows counting something, as last printed."""
    rows = dict(_COUNTER_ROW.findall(text))
    return tuple((name, int(count)) for name, count in sorted(rows.items()) if int(count))


def llvm_queries_in(text: str, name: str, parent: int) -> Listing:
    """The queries of counter ``name`` made inside OptBisect pass ``parent``, each numbered
    by its index in the run plus one; :class:`ListingError` when they are not one run of
    consecutive indices (two processes' queries mixed)."""
    inside: list[Action] = []
    for query in llvm_counter_queries(text, name).actions:
        if query.within is not None and query.within.endswith(f"(#{parent})"):
            index = int(query.name.rpartition("=")[2])
            if inside and index != inside[-1].number:
                raise ListingError(f"the '{name}' queries of pass #{parent} are not "
                                   f"consecutive ({inside[-1].name}, then {query.name})")
            inside.append(Action(index + 1, query.name, query.unit, within=query.within))
    return Listing(len(inside), tuple(inside))


class ListingError(ValueError):
    """The tool's output cannot be read as one numbered sequence of actions."""


_TABLE_LINE = re.compile(r"^\s*(\S+)\s+: \{(-?\d+),(-?\d+),(-?\d+)\}\s*$")


def mlir_counter_total(text: str, tag: str) -> int | None:
    """What the last ``DebugCounter counters:`` table in ``text`` says ``tag`` counted
    (None: no table, or ``tag`` not in it)."""
    _, header, last = text.rpartition("DebugCounter counters:")
    if not header:
        return None
    for line in last.splitlines()[1:]:
        m = _TABLE_LINE.match(line)
        if m is None:
            break  # the table ends at the first line that is not one of its rows
        if m.group(1) == tag:
            return int(m.group(2))
    return None


_BEGINS = re.compile(r"begins \([^)]*\) Action (.*)$")
_COMPLETED = re.compile(r"completed `([^`]+)`")
_PASS = re.compile(r"^`pass-execution` running `([^`]+)` on Operation `([^`]+)` \((.*)\)`$")
_PATTERN = re.compile(r"^`([\w-]+) pattern: (.+?) \(((?:%|\w).*)\)`$")
#: How MLIR names a pattern class declared in an anonymous namespace.
_ANONYMOUS = "(anonymous namespace)::"
_NAMED = re.compile(r"^`([\w-]+)`")
_CALLED = re.compile(r"^([\w-]+)\(")
#: A bare-named action and the op it runs on: ``apply-conversion (module {...} loc(...))```.
_BARE = re.compile(r"^([\w-]+) \((.*)\)`$")
#: A file position inside a location: ``"m.mlir":4:8``.
_POSITION = re.compile(r'"([^"]*)":(\d+):(\d+)')
_SYMBOL = re.compile(r"@([\w.$-]+)")


def mlir_action_log(text: str, tag: str) -> Listing:
    """The ``tag`` actions an MLIR action log names, in order, each with the pass it ran
    in (the innermost ``pass-execution`` open around it)."""
    actions: list[Action] = []
    passes: list[str] = []
    opened: list[str] = []
    for line in text.splitlines():
        begun = _BEGINS.search(line)
        if begun is None:
            done = _COMPLETED.search(line)
            if done is not None and opened and opened.pop() == "pass-execution" and passes:
                passes.pop()
            continue
        body = begun.group(1).strip()
        kind, name, unit, loc = _parse_action(body)
        opened.append(kind)
        if kind == tag:
            actions.append(Action(len(actions) + 1, name, unit, loc,
                                  passes[-1] if passes and kind != "pass-execution" else None))
        if kind == "pass-execution":
            passes.append(name)
    return Listing(len(actions), tuple(actions))


def mlir_inside(text: str, parent: int, tag: str) -> tuple[int, Listing]:
    """The ``tag`` actions an MLIR action log shows in ``pass-execution`` #``parent``
    itself (the passes it nests are pass-executions of their own, which a counter that
    stops at ``parent`` does not run), numbered as in the whole run, and how many ``tag``
    actions ran before it began. The listing has no parent when the run has no such
    pass."""
    before, inside = 0, list[Action]()
    passes: list[tuple[int, str]] = []  # the pass-executions open now: number, name
    opened: list[str] = []  # the tags open now
    seen = 0
    pass_action: Action | None = None
    for line in text.splitlines():
        begun = _BEGINS.search(line)
        if begun is None:
            if (_COMPLETED.search(line) is not None and opened
                    and opened.pop() == "pass-execution" and passes
                    and passes.pop()[0] == parent):
                break
            continue
        kind, name, unit, loc = _parse_action(begun.group(1).strip())
        opened.append(kind)
        if kind == tag and pass_action is None:
            before += 1
        elif kind == tag and passes and passes[-1][0] == parent:
            inside.append(Action(before + len(inside) + 1, name, unit, loc, passes[-1][1]))
        if kind == "pass-execution":
            seen += 1
            passes.append((seen, name))
            if seen == parent:
                pass_action = Action(seen, name, unit, loc)
    return before, Listing(len(inside), tuple(inside), pass_action)


def _parse_action(body: str) -> tuple[str, str, str, str | None]:
    """(tag, name, unit, loc) of one ``begins`` line's action text."""
    m = _PASS.match(body)
    if m is not None:
        return "pass-execution", m.group(1), _unit(m.group(2), m.group(3)), _loc(m.group(3))
    m = _PATTERN.match(body)
    if m is not None:
        name = m.group(2).removeprefix(_ANONYMOUS)
        return m.group(1), name, _op_name(m.group(3)), _loc(m.group(3))
    m = _NAMED.match(body) or _CALLED.match(body)
    if m is not None:
        return m.group(1), m.group(1), "", _loc(body)
    m = _BARE.match(body)
    if m is not None:
        return m.group(1), m.group(1), _op_name(m.group(2)), _loc(m.group(2))
    return body.split(" ", 1)[0].strip("`"), body, "", _loc(body)


def _unit(op_name: str, op_text: str) -> str:
    """``func.func @f`` (the op's symbol when it has one), else the op's name."""
    symbol = _SYMBOL.search(op_text.split("{", 1)[0])
    return f"{op_name} @{symbol.group(1)}" if symbol else op_name


def _op_name(op_text: str) -> str:
    """The op an action ran on, without its location: ``%0 = arith.addi %a, %c : i32``."""
    text = op_text
    at = text.rfind(" loc(")
    return (text[:at] if at >= 0 else text).strip()


def _loc(text: str) -> str | None:
    """The first ``file:line:col`` of the op's own location in ``text``: its last
    ``loc(...)`` (block arguments print theirs earlier), where a ``callsite`` names the
    callee's position first and a ``fused`` one its parts in order; None for a name alone."""
    at = text.rfind("loc(")
    m = _POSITION.search(text, at) if at >= 0 else None
    return f"{m.group(1)}:{m.group(2)}:{m.group(3)}" if m else None


def difference(first: Listing, second: Listing) -> str | None:
    """Why two enumerations of the same run disagree, in one phrase (None: they agree)."""
    if first.total != second.total:
        return f"the first counted {first.total} actions, the second {second.total}"
    for a, b in zip(first.actions, second.actions, strict=False):
        if (a.name, a.unit, a.within) != (b.name, b.unit, b.within):
            return (f"action #{a.number} was {a.describe()} the first time, "
                    f"{b.describe()} the second")
    if len(first.actions) != len(second.actions):
        return (f"the first named {len(first.actions)} actions, "
                f"the second {len(second.actions)}")
    return None

