"""The kinds of action a compiler lets bisectkit limit: their flags and how to read them.

``--kind opt-bisect`` (LLVM's OptBisect: every pass execution of opt, llc, clang
``-mllvm`` and iree-compile's LLVM codegen), ``--kind mlir-counter --tag TAG`` (MLIR's
debug counter in ``mlir-opt``, ``iree-opt`` and every ``MlirOptMain`` tool) and
``--kind llvm-counter:NAME`` (an LLVM debug counter, live in builds with assertions or
``LLVM_FORCE_ENABLE_STATS``, such as IREE's). bisectkit owns every flag it puts in
``$BISECTKIT_ACTIONS``: a repro splices the variable, unquoted, into the compiler's
command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bisectkit.actions import listing
from bisectkit.actions.listing import Listing
from bisectkit.errors import BadInput

#: MLIR's debug-counter tags (``mlir/lib/...``): what ``--tag`` may name. An unknown tag
#: is accepted by the tool and counts nothing, so the list is checked here.
MLIR_TAGS = ("pass-execution", "apply-pattern", "GreedyPatternRewriteIteration",
             "apply-conversion", "walk-and-apply-patterns")
#: The tag ``--kind mlir-counter`` bisects when ``--tag`` is not given.
DEFAULT_MLIR_TAG = "pass-execution"
#: MLIR tools run passes on several threads unless told not to, and the counter's
#: numbering then changes from run to run.
SINGLE_THREAD = "--mlir-disable-threading"


class NothingCounted(Exception):
    """The enumeration counted no action: why, in one line."""


@dataclass(frozen=True)
class Enumeration:
    """One enumeration run: the flags it adds and whether its verdict is the full run's."""

    flags: tuple[str, ...]
    #: What this run tells: ``"total"`` (how many actions), ``"names"`` (which ones).
    tells: tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    """A kind of action (``family``: ``opt-bisect``, ``mlir-counter``, ``llvm-counter``)
    and the counter it limits (``tag``: the MLIR tag or LLVM counter name)."""

    family: str
    tag: str = ""

    @property
    def name(self) -> str:
        """``opt-bisect``, ``mlir-counter:apply-pattern``, ``llvm-counter:dagcombine``."""
        return f"{self.family}:{self.tag}" if self.tag else self.family

    @property
    def mlir(self) -> bool:
        """Does the tool read MLIR's own flags (``--mlir-disable-threading``) for sure?"""
        return self.family == "mlir-counter"

    def limit(self, n: int) -> tuple[str, ...]:
        """The flags that run only the first ``n`` actions."""
        if self.family == "opt-bisect":
            return (f"-opt-bisect-limit={n}",)
        if self.family == "mlir-counter":
            return (f"--mlir-debug-counter={self.tag}-skip=0,{self.tag}-count={n}",)
        return (f"-debug-counter={self.tag}={_first(n)}",)

    def enumerations(self, log: str) -> tuple[Enumeration, ...]:
        """The runs that count (and name) every action; ``log``: a file for MLIR's action
        log. MLIR names its actions only in a run of its own: a tool given both
        ``--log-actions-to`` and the counter disables the counter (and exits 0)."""
        if self.family == "opt-bisect":
            return (Enumeration(("-opt-bisect-limit=-1",), ("total", "names")),)
        if self.family == "mlir-counter":
            counter = f"--mlir-debug-counter={self.tag}-skip=0,{self.tag}-count=-1"
            return (Enumeration((counter, "--mlir-print-debug-counter"), ("total",)),
                    Enumeration((f"--log-actions-to={log}", "--mlir-print-debuginfo"),
                                ("names",)))
        # Every query executes (up to an index no run reaches) and is printed after the
        # OptBisect line of the pass it is made in; the table gives the total.
        return (Enumeration(("-opt-bisect-limit=-1", f"-debug-counter={self.tag}=0-{NEVER}",
                             "-print-debug-counter-queries", "-print-debug-counter"),
                            ("total", "names")),)

    def read(self, texts: tuple[str, ...], log_text: str) -> Listing:
        """The actions the enumeration runs' outputs (``texts``, in :meth:`enumerations`'
        order) and the MLIR action log (``log_text``) name; :class:`NothingCounted`."""
        if self.family == "opt-bisect":
            found = listing.opt_bisect(texts[0])
            if found is None:
                raise NothingCounted(
                    "the compiler printed no 'BISECT: running pass' line: it is not an LLVM "
                    "tool run with $BISECTKIT_ACTIONS, or its stderr reaches neither the "
                    "repro's output nor $BISECTKIT_ACTION_LOG")
            return found
        if self.family == "mlir-counter":
            total = listing.mlir_counter_total(texts[0], self.tag)
            if total is None:
                raise NothingCounted(
                    "the compiler printed no MLIR debug-counter table: it is not an MLIR "
                    "tool built on MlirOptMain (iree-compile is not: use --kind opt-bisect), "
                    "or it did not get $BISECTKIT_ACTIONS")
            if total == 0:
                raise NothingCounted(
                    f"the MLIR debug counter '{self.tag}' counted nothing in this run: no "
                    f"such action runs here (tags: {', '.join(MLIR_TAGS)})")
            names = listing.mlir_action_log(log_text, self.tag)
            if names.total and names.total != total:
                # Two runs of one enumeration saw different compilations: naming either
                # would name an action of a run the limits do not reproduce.
                raise listing.ListingError(
                    f"the counting run counted {total} '{self.tag}' actions, the naming "
                    f"run (--log-actions-to) {names.total}: the compiler's run is not "
                    "deterministic (threads, an input or a flag that changes)")
            # No log at all (the tool runs where it cannot write it): numbers only.
            return Listing(total, names.actions)
        total = _llvm_counter_total(texts[0], self.tag)
        if not total:
            raise NothingCounted(
                f"the LLVM debug counter '{self.tag}' counted nothing: it is compiled out of "
                "this LLVM (release builds without assertions, such as Debian's), misspelt, "
                "or never queried in this run")
        names = listing.llvm_counter_queries(texts[0], self.tag)
        return Listing(total, names.actions if names.total == total else ())


#: A query index no compiler run reaches: the chunk ``NEVER`` executes nothing, and
#: ``A-NEVER`` every query from A on (LLVM >= 19 spells counters ``NAME=A-B:C``).
NEVER = 999_999_999


def _first(n: int) -> str:
    """The chunks that execute the first ``n`` queries (``0`` is query 0 alone: LLVM
    refuses ``0-0``)."""
    if n == 0:
        return str(NEVER)
    return "0" if n == 1 else f"0-{n - 1}"


def _llvm_counter_total(text: str, name: str) -> int | None:
    """What LLVM's ``-print-debug-counter`` table says counter ``name`` counted."""
    rows = re.findall(rf"^\s*{re.escape(name)}\s*:\s*\{{(\d+)", text, re.MULTILINE)
    return int(rows[-1]) if rows else None


def parse(spec: str, tag: str | None) -> Kind:
    """``--kind`` and ``--tag`` as typed; :class:`BadInput` in one line."""
    family, _, counter = spec.partition(":")
    if family == "opt-bisect":
        if counter or tag:
            raise BadInput("--kind opt-bisect takes no counter name and no --tag")
        return Kind("opt-bisect")
    if family == "mlir-counter":
        chosen = tag or counter or DEFAULT_MLIR_TAG
        if tag and counter and tag != counter:
            raise BadInput(f"--kind {spec} and --tag {tag} name two MLIR counters; give one")
        if chosen not in MLIR_TAGS:
            raise BadInput(f"unknown MLIR debug-counter tag '{chosen}' (the tool would "
                           f"count nothing); one of: {', '.join(MLIR_TAGS)}")
        return Kind("mlir-counter", chosen)
    if family == "llvm-counter":
        if tag:
            raise BadInput("--tag goes with --kind mlir-counter; name an LLVM counter as "
                           "--kind llvm-counter:NAME")
        if not counter or not all(c.isalnum() or c in "-_." for c in counter):
            raise BadInput("--kind llvm-counter needs the counter's name: "
                           "--kind llvm-counter:NAME (e.g. llvm-counter:dagcombine)")
        return Kind("llvm-counter", counter)
    raise BadInput(f"unknown --kind '{spec}': opt-bisect, mlir-counter or llvm-counter:NAME")
