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

import dataclasses
import re
from dataclasses import dataclass

from bisectkit.actions import listing
from bisectkit.actions.listing import Listing
from bisectkit.errors import BadInput
from bisectkit.text import plural

#: MLIR's debug-counter tags (``mlir/lib/...``): what ``--tag`` may name. An unknown tag
#: is accepted by the tool and counts nothing, so the list is checked here.
MLIR_TAGS = ("pass-execution", "apply-pattern", "GreedyPatternRewriteIteration",
             "apply-conversion", "walk-and-apply-patterns")
#: The tag ``--kind mlir-counter`` bisects when ``--tag`` is not given.
DEFAULT_MLIR_TAG = "pass-execution"
#: ``--within N``: the actions of this tag inside ``pass-execution`` N.
SUB_TAG = "apply-pattern"
#: MLIR tools run passes on several threads unless told not to, and the counter's
#: numbering then changes from run to run.
SINGLE_THREAD = "--mlir-disable-threading"


class NothingCounted(Exception):
    """The enumeration counted no action: why, in one line."""


@dataclass(frozen=True)
class Enumeration:
    """One enumeration run: the flags it adds (what each run tells, the total or the
    names, is :meth:`Kind.read`'s to know)."""

    flags: tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    """A kind of action (``family``: ``opt-bisect``, ``mlir-counter``, ``llvm-counter``)
    and the counter it limits (``tag``: the MLIR tag or LLVM counter name)."""

    family: str
    tag: str = ""
    #: ``--within N``: the ``apply-pattern`` actions inside ``pass-execution`` N are the
    #: ones limited (pass-executions after N do not run).
    within: int | None = None
    #: With ``within``: the ``apply-pattern`` actions the run executes before pass N
    #: begins (read from the enumeration, :meth:`settled`); for an LLVM counter, the
    #: index of pass N's first query.
    offset: int = 0
    #: With ``within``, an LLVM counter: how many queries pass N makes (the queries after
    #: them keep executing).
    span: int = 0

    @property
    def name(self) -> str:
        """``opt-bisect``, ``mlir-counter:apply-pattern``, ``llvm-counter:dagcombine``,
        ``mlir-counter:apply-pattern in pass-execution #6``."""
        if self.within is not None and self.family == "llvm-counter":
            return f"{self.family}:{self.tag} in pass #{self.within}"
        if self.within is not None:
            return f"{self.family}:{SUB_TAG} in {self.tag} #{self.within}"
        return f"{self.family}:{self.tag}" if self.tag else self.family

    @property
    def counted(self) -> str:
        """What ``--within`` counts inside the pass: ``apply-pattern``, ``dagcombine query``."""
        return f"{self.tag} query" if self.family == "llvm-counter" else SUB_TAG

    @property
    def parent_tag(self) -> str:
        """What ``--within N`` numbers: ``pass-execution`` (MLIR), ``pass`` (OptBisect)."""
        return "pass" if self.family == "llvm-counter" else self.tag

    def settled(self, found: Listing) -> Kind:
        """This kind once its enumeration is known (``--within``: the offset of the
        actions inside the pass, which the limits add)."""
        if self.within is None or not found.actions:
            return self
        return dataclasses.replace(self, offset=found.actions[0].number - 1, span=found.total)

    def ends(self, total: int) -> tuple[str, str]:
        """How the refusal names limit 0 and limit ``total``."""
        if self.within is None:
            return "with no action run (limit 0)", f"with all {total} actions run (limit {total})"
        inside = (f"'{self.tag}' queries of pass #{self.within}"
                  if self.family == "llvm-counter"
                  else f"{SUB_TAG} actions of {self.tag} #{self.within}")
        return (f"with none of the {total} {inside} run (K=0)",
                f"with all {total} {inside} run (K={total})")

    @property
    def mlir(self) -> bool:
        """Does the tool read MLIR's own flags (``--mlir-disable-threading``) for sure?"""
        return self.family == "mlir-counter"

    def limit(self, n: int) -> tuple[str, ...]:
        """The flags that run only the first ``n`` actions."""
        if self.within is not None and self.family == "llvm-counter":
            # Passes 1..N run (the first-level answer's bad limit); of the counter's queries
            # those before pass N execute, K of pass N's own, and every one after them
            # (later passes that do not run still query: instruction selection at -O0).
            return (f"-opt-bisect-limit={self.within}",
                    f"-debug-counter={self.tag}={_around(self.offset, self.span, n)}")
        if self.within is not None:
            # Passes 1..N run (N+1.. not: the IR judged is the IR right after pass N),
            # and of the patterns the first offset (before pass N) and n inside it.
            return (f"--mlir-debug-counter={self.tag}-skip=0,{self.tag}-count={self.within},"
                    f"{SUB_TAG}-skip=0,{SUB_TAG}-count={self.offset + n}",)
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
            # The counters' table says which debug counters are live (IREE's LLVM: the
            # second level); release builds print zeros, LLVM 14 nothing.
            return (Enumeration(("-opt-bisect-limit=-1", "-print-debug-counter")),)
        if self.family == "mlir-counter":
            counter = f"--mlir-debug-counter={self.tag}-skip=0,{self.tag}-count=-1"
            if self.within is not None:  # passes 1..N, every pattern in them
                counter = (f"--mlir-debug-counter={self.tag}-skip=0,{self.tag}-count="
                           f"{self.within},{SUB_TAG}-skip=0,{SUB_TAG}-count=-1")
            return (Enumeration((counter, "--mlir-print-debug-counter")),
                    Enumeration((f"--log-actions-to={log}", "--mlir-print-debuginfo")))
        # Every query executes (up to an index no run reaches) and is printed after the
        # OptBisect line of the pass it is made in (with --within N, passes 1..N run); the
        # table gives the total.
        passes = -1 if self.within is None else self.within
        return (Enumeration((f"-opt-bisect-limit={passes}", f"-debug-counter={self.tag}=0-{NEVER}",
                             "-print-debug-counter-queries", "-print-debug-counter")),)

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
            return dataclasses.replace(found, counters=listing.llvm_counters(texts[0]))
        if self.family == "mlir-counter":
            total = _mlir_total(texts[0], SUB_TAG if self.within else self.tag)
            if self.within is not None:
                return _inside(self.within, self.tag, total, log_text)
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
        counted = _llvm_counter_total(texts[0], self.tag)
        if not counted:
            raise NothingCounted(
                f"the LLVM debug counter '{self.tag}' counted nothing: it is compiled out of "
                "this LLVM (release builds without assertions, such as Debian's), misspelt, "
                "or never queried in this run")
        if self.within is not None:
            return _queries_inside(texts[0], self.tag, self.within)
        names = listing.llvm_counter_queries(texts[0], self.tag)
        return Listing(counted, names.actions if names.total == counted else ())


def _mlir_total(text: str, tag: str) -> int:
    """What the MLIR debug-counter table in ``text`` says ``tag`` counted."""
    total = listing.mlir_counter_total(text, tag)
    if total is None:
        raise NothingCounted(
            "the compiler printed no MLIR debug-counter table: it is not an MLIR "
            "tool built on MlirOptMain (iree-compile is not: use --kind opt-bisect), "
            "or it did not get $BISECTKIT_ACTIONS")
    return total


def _inside(parent: int, tag: str, counted: int, log_text: str) -> Listing:
    """The ``apply-pattern`` actions inside ``tag`` #``parent``: named from the action
    log, which must agree with what the counter ``counted`` up to the end of that pass."""
    before, inside = listing.mlir_inside(log_text, parent, SUB_TAG)
    if inside.parent is None:
        passes = listing.mlir_action_log(log_text, tag).total
        raise BadInput(f"--within {parent}: this run has {plural(passes, tag + ' action')}, "
                       f"no #{parent}")
    where = f"{tag} #{parent} ({inside.parent.describe()})"
    if not inside.total:
        raise NothingCounted(f"{where} applies no {SUB_TAG} action itself (the passes it "
                             "runs are pass-executions of their own): nothing to bisect "
                             "inside it")
    if before + inside.total != counted:
        raise NothingCounted(
            f"the debug counter counted {counted} {SUB_TAG} actions up to the end of "
            f"{where}, the action log {before} before it and {inside.total} inside it: "
            "the two runs did not execute the same actions")
    return inside


#: A query index no compiler run reaches: the chunk ``NEVER`` executes nothing, and
#: ``A-NEVER`` every query from A on (LLVM >= 19 spells counters ``NAME=A-B:C``).
NEVER = 999_999_999


def _queries_inside(text: str, name: str, parent: int) -> Listing:
    """The queries of counter ``name`` made inside OptBisect pass ``parent``, numbered by
    their index in the run plus one (``dagcombine=7`` is #8)."""
    passes = listing.opt_bisect(text)
    if passes is None:
        raise NothingCounted(
            "the compiler printed no 'BISECT: running pass' line: --within N numbers the "
            "passes as OptBisect does, and the repro must let the tool's stderr through")
    pass_action = passes.named(parent)
    if pass_action is None:
        raise BadInput(f"--within {parent}: this run has {plural(passes.total, 'pass')}, "
                       f"no #{parent}")
    inside = listing.llvm_queries_in(text, name, parent)
    if not inside.total:
        raise NothingCounted(f"pass #{parent} ({pass_action.describe()}) makes no '{name}' "
                             "query: nothing to bisect inside it (is the counter compiled "
                             "in, and is it this pass's?)")
    return Listing(inside.total, inside.actions, pass_action)


def _around(offset: int, span: int, n: int) -> str:
    """The chunks that execute the queries before ``offset``, ``n`` of the ``span`` from
    ``offset`` on, and all after those."""
    chunks = [] if offset + n == 0 else [_range(0, offset + n - 1)]
    return ":".join([*chunks, f"{offset + span}-{NEVER}"])


def _range(first: int, last: int) -> str:
    """One chunk: ``A-B``, or ``A`` alone (LLVM refuses ``A-A``)."""
    return str(first) if first == last else f"{first}-{last}"


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


def parse(spec: str, tag: str | None, within: int | None = None) -> Kind:
    """``--kind``, ``--tag`` and ``--within`` as typed; :class:`BadInput` in one line."""
    kind = _parse_kind(spec, tag)
    if within is None:
        return kind
    if kind.family == "opt-bisect":
        raise BadInput("--within N bisects what one pass does: name the LLVM debug counter "
                       "whose queries inside OptBisect pass N to bisect "
                       "(--kind llvm-counter:NAME --within N), or use --kind mlir-counter "
                       "--within N for an MLIR pass")
    if kind.family == "llvm-counter":
        return dataclasses.replace(kind, within=within)
    if kind.tag != DEFAULT_MLIR_TAG:
        raise BadInput(f"--within N bisects the {SUB_TAG} actions inside pass-execution N: "
                       f"give it with --kind mlir-counter (tag {DEFAULT_MLIR_TAG}), not "
                       f"with tag {kind.tag}")
    return dataclasses.replace(kind, within=within)


def _parse_kind(spec: str, tag: str | None) -> Kind:
    """``--kind`` and ``--tag`` as typed."""
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
