"""The IR dumps compilers print, read into the IR before and after one action. Pure.

- LLVM (``-print-before-all -print-after-all``, on stderr), one header per dump::

      ; *** IR Dump Before EarlyCSEPass on checked_add ***      (opt 19, new PM)
      *** IR Dump After EarlyCSEPass on checked_add ***         (opt 14: no '; ')
      *** IR Dump After Early CSE (early-cse) ***               (legacy PM, llc)
      # *** IR Dump After Finalize ISel and expand pseudo-instructions (finalize-isel) ***:

  The new pass manager prints the OptBisect line first, then the pass's Before dump,
  then its After dump; the legacy one prints the Before dump first (a printer pass runs
  before the pass, which asks OptBisect when it starts).
- MLIR (``--mlir-print-ir-after-all --mlir-print-ir-module-scope``)::

      // -----// IR Dump After Canonicalizer (canonicalize) ('builtin.module' operation) //----- //
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass

from bisectkit.actions.listing import BISECT_LINE

_LLVM_HEADER = re.compile(r"^(?:; |# )?\*\*\* IR Dump (Before|After) (.*?) \*\*\*:?$")
_MLIR_HEADER = re.compile(r"^// -----// IR Dump (?:Before|After) .* //----- //$")
_MLIR_PASS = re.compile(r"^// -----// IR Dump (Before|After) (.*?)(?: \('[^']*' operation.*\))? //")


@dataclass(frozen=True)
class Dump:
    """One IR dump: its header line (``title``, without the stars) and its text."""

    title: str
    text: str


def _lines(text: str) -> list[str]:
    """``text``'s lines (a pty writes ``\\r\\n``)."""
    return text.replace("\r\n", "\n").split("\n")


@dataclass(frozen=True)
class _Seen:
    """An LLVM dump as read: the OptBisect number of the last BISECT line before it,
    whether its header came right after that line, ``Before`` or ``After``, the dump."""

    number: int
    next_to_bisect: bool
    when: str
    dump: Dump


def llvm_dumps(text: str) -> list[_Seen]:
    """Every LLVM dump in ``text``, in order. A dump ends at the next header or BISECT
    line."""
    found: list[_Seen] = []
    number, fresh, current, body = 0, False, None, list[str]()
    for line in [*_lines(text), "*** IR Dump End  ***"]:
        header = _LLVM_HEADER.match(line)
        bisect = BISECT_LINE.match(line)
        if (header or bisect) and current is not None:
            found.append(dataclasses.replace(current, dump=Dump(current.dump.title,
                                                                _trimmed(body))))
            current, body = None, []
        if bisect:
            number, fresh = int(bisect.group(1)), True
        elif header:
            current = _Seen(number, fresh, header.group(1), Dump(header.group(2), ""))
            fresh = False
        elif current is not None:
            body.append(line)
        elif line.strip():
            fresh = False
    return found


def opt_pair(text: str, number: int) -> tuple[Dump, Dump] | None:
    """The dumps before and after OptBisect pass execution ``number``: the dump printed
    right after its BISECT line is its Before dump (new pass manager: the pass is
    asked, then dumped) or its After dump (legacy: a printer pass dumps it before it
    starts and asks); the other one of the pair has the same title. Matched by position,
    not by name: newer LLVMs name passes differently in the two (``early-cse`` in the
    BISECT line, ``EarlyCSEPass`` in the dump)."""
    dumps = llvm_dumps(text)
    i = next((i for i, d in enumerate(dumps) if d.number == number and d.next_to_bisect),
             None)
    if i is None:
        return None
    first = dumps[i]
    if first.when == "Before":
        after = next((d.dump for d in dumps[i + 1:]
                      if d.when == "After" and d.dump.title == first.dump.title), None)
        return (first.dump, after) if after else None
    before = [d.dump for d in dumps[:i] if d.when == "Before" and d.dump.title == first.dump.title]
    return (before[-1], first.dump) if before else None


def mlir_dumps(text: str) -> list[Dump]:
    """Every MLIR dump in ``text``, in order; a module-scope dump ends at its closing
    ``}`` (what the repro prints after it is not IR)."""
    found: list[Dump] = []
    title: str | None = None
    body: list[str] = []
    for line in [*_lines(text), ""]:
        if _MLIR_HEADER.match(line) or (title is not None and line == "}"):
            if title is not None:
                found.append(Dump(title, _trimmed([*body, line] if line == "}" else body)))
            title, body = (line, []) if line != "}" else (None, [])
        elif title is not None:
            body.append(line)
    if title is not None:
        found.append(Dump(title, _trimmed(body)))
    return found


def mlir_title(dump: Dump) -> str:
    """``after Canonicalizer (canonicalize)``: which pass an MLIR dump follows."""
    m = _MLIR_PASS.match(dump.title)
    return f"{m.group(1).lower()} {m.group(2)}" if m else dump.title


def first_difference(good: list[Dump], bad: list[Dump]) -> tuple[Dump, Dump] | None:
    """The first dump that differs between a good run and a bad one (same headers in
    the same order up to it), as (good's, bad's); None when none differs."""
    for g, b in zip(good, bad, strict=False):
        if g != b:
            return g, b
    return None


def unified(before: Dump, after: Dump, old: str, new: str) -> str:
    """The unified diff from ``before`` (named ``old`` in it) to ``after`` (``new``)."""
    lines = difflib.unified_diff(before.text.splitlines(), after.text.splitlines(),
                                 old, new, lineterm="")
    return "\n".join(lines) + "\n"


def _trimmed(body: list[str]) -> str:
    """A dump's text without the blank lines around it."""
    return "\n".join(body).strip("\n") + "\n"
