"""What the compilers print about their actions, read into numbered actions; the flags of
each kind of action and the ``--kind``/``--tag`` input.

In-process and fast: every text here is a real tool's output captured in
``tests/data/actions`` (``opt-19``, ``opt-14`` new and legacy pass manager, ``llc-19``,
``mlir-opt-19`` counter tables and action logs, ``iree-opt`` action logs), the commands
that made them are in the docstrings of the tests that read them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisectkit.actions import kinds, listing
from bisectkit.actions.kinds import Kind, NothingCounted
from bisectkit.actions.listing import Action, Listing, ListingError
from bisectkit.errors import BadInput

DATA = Path(__file__).parent / "data" / "actions"


def text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# -- OptBisect ---------------------------------------------------------------------------

def test_opt19_new_pass_manager_lines_name_each_pass_execution_and_its_unit() -> None:
    """``opt-19 -S -passes='default<O2>' -opt-bisect-limit=-1 checked_add.ll``, stderr."""
    found = listing.opt_bisect(text("opt19_all.txt"))
    assert found is not None and found.total == 169 and len(found.actions) == 169
    assert [a.number for a in found.actions] == list(range(1, 170))
    assert found.named(7) == Action(7, "EarlyCSEPass", "checked_add")
    assert found.named(1) == Action(1, "Annotation2MetadataPass", "[module]")
    # CGSCC passes name their SCC in parentheses; template arguments stay in the name.
    assert found.named(24) == Action(24, "InlinerPass", "(checked_add)")
    assert found.named(22) == Action(22, "InvalidateAnalysisPass<llvm::AAManager>",
                                     "checked_add")
    assert found.named(0) is None and found.named(170) is None
    assert found.named(7).describe() == "EarlyCSEPass on checked_add"  # type: ignore[union-attr]


def test_a_limited_run_numbers_and_names_the_same_passes_as_the_full_run() -> None:
    """Numbering is prefix-only: at ``-opt-bisect-limit=7`` the NOT-running lines carry
    the same numbers and names as the full run (here the totals are equal too)."""
    full = listing.opt_bisect(text("opt19_all.txt"))
    limited = listing.opt_bisect(text("opt19_limit7.txt"))
    assert "BISECT: NOT running pass (8) " in text("opt19_limit7.txt")
    assert limited is not None and full is not None
    assert listing.difference(full, limited) is None


def test_opt14_counts_its_own_pipeline() -> None:
    """``opt-14``, the same command: 150 pass executions, EarlyCSE on checked_add is #7."""
    found = listing.opt_bisect(text("opt14_all.txt"))
    assert found is not None and found.total == 150
    assert found.named(7) == Action(7, "EarlyCSEPass", "checked_add")


@pytest.mark.parametrize("name, total, number, action", [
    # llc-19 -O2 -opt-bisect-limit=-1 nonmono.ll
    ("llc19_all.txt", 129, 8,
     Action(8, "X86 DAG->DAG Instruction Selection", "function (pick)")),
    # opt-14 -enable-new-pm=0 -O2 -opt-bisect-limit=-1 nonmono.ll
    ("opt14_legacy_all.txt", 162, 1, Action(1, "Simplify the CFG", "function (pick)")),
])
def test_legacy_pass_manager_descriptions_keep_their_spaces(name: str, total: int, number: int,
                                                           action: Action) -> None:
    found = listing.opt_bisect(text(name))
    assert found is not None and found.total == total
    assert found.named(number) == action


def test_two_tool_runs_in_one_output_are_a_restart_not_more_actions() -> None:
    once = text("opt19_all.txt")
    with pytest.raises(ListingError, match=r"restarts or jumps at pass \(1\) after \(169\)"):
        listing.opt_bisect(once + once)
    # A line lost in the middle (stderr cut short) is a jump, not a renumbering.
    lines = once.splitlines()
    with pytest.raises(ListingError, match=r"at pass \(9\) after \(7\)"):
        listing.opt_bisect("\n".join(lines[:7] + lines[8:]))


def test_bisect_lines_among_other_output_and_none_at_all() -> None:
    mixed = "main returned 1\n" + text("opt19_all.txt").replace("\n", "\r\n") + "done\n"
    found = listing.opt_bisect(mixed)
    assert found is not None and found.total == 169
    assert found.named(169) == Action(169, "RelLookupTableConverterPass", "[module]")
    assert listing.opt_bisect("main returned 1\n") is None


# -- MLIR debug counter ------------------------------------------------------------------

def test_the_last_counter_table_is_the_runs_counts() -> None:
    """``mlir-opt-19 ub.mlir --pass-pipeline=... --mlir-disable-threading
    --mlir-debug-counter=apply-pattern-...,pass-execution-...,bogus-tag-...
    --mlir-print-debug-counter``, stderr: two tables, the first all zeros."""
    out = text("mlir_counter.txt")
    assert out.count("DebugCounter counters:") == 2
    assert listing.mlir_counter_total(out, "apply-pattern") == 26
    assert listing.mlir_counter_total(out, "pass-execution") == 11
    # An unknown tag is accepted by the tool and counts nothing.
    assert listing.mlir_counter_total(out, "bogus-tag") == 0
    # A tag not given to the tool is not in the table; no table at all: unknown.
    assert listing.mlir_counter_total(out, "GreedyPatternRewriteIteration") is None
    assert listing.mlir_counter_total(text("mlir_log_stderr.txt"), "apply-pattern") is None
    assert listing.mlir_counter_total(out + "result=1\n", "apply-pattern") == 26


def test_log_and_counter_together_print_no_table() -> None:
    """``--log-actions-to`` with ``--mlir-debug-counter``: the tool disables the counter,
    says so on one line and exits 0: no total can be read from that run."""
    out = text("mlir_log_and_counter.txt")
    assert "Debug counters are incompatible with --log-actions-to" in out
    assert listing.mlir_counter_total(out, "apply-pattern") is None


def test_the_action_log_names_patterns_with_their_op_location_and_pass() -> None:
    """``mlir-opt-19 ub.mlir --pass-pipeline=... --mlir-disable-threading
    --log-actions-to=mlir_log.txt --mlir-print-debuginfo``."""
    log = text("mlir_log.txt")
    patterns = listing.mlir_action_log(log, "apply-pattern")
    assert patterns.total == 26  # as many as the counter counted (mlir_counter.txt)
    ninth = patterns.named(9)
    assert ninth == Action(9, "MaterializeKnownConstantValues",
                           "%0 = func.call @check(%c0_i32) : (i32) -> i32", "ub.mlir:13:8",
                           "ArithIntRangeOpts")
    assert patterns.named(8) == Action(8, "MaterializeKnownConstantValues",
                                       "func.return %0 : i32", "ub.mlir:14:3",
                                       "ArithIntRangeOpts")
    # The patterns of the first canonicalize ran inside Canonicalizer, not the adaptor.
    assert patterns.named(1) is not None and patterns.named(1).within == "Canonicalizer"  # type: ignore[union-attr]
    assert {a.within for a in patterns.actions} == {"Canonicalizer", "ArithIntRangeOpts"}


def test_the_action_log_names_pass_executions_adaptors_included() -> None:
    passes = listing.mlir_action_log(text("mlir_log.txt"), "pass-execution")
    assert passes.total == 11  # as many as the counter counted
    assert passes.named(1) == Action(1, "mlir::detail::OpToOpPassAdaptor", "builtin.module",
                                     "ub.mlir:0:0", None)
    assert passes.named(6) == Action(6, "ArithIntRangeOpts", "builtin.module", "ub.mlir:0:0",
                                     None)
    assert [a.name for a in passes.actions[1:5]] == ["Canonicalizer", "CSE"] * 2
    assert passes.named(2) is not None and passes.named(2).unit == "func.func @check"  # type: ignore[union-attr]


def test_an_ops_location_is_its_own_not_its_block_arguments() -> None:
    """``func.func @check(%arg0: i32 loc("ub.mlir":1:18)) -> i32 {...} loc("ub.mlir":1:1)``:
    the function is at 1:1; 1:18 is its argument's location."""
    passes = listing.mlir_action_log(text("mlir_log.txt"), "pass-execution")
    canonicalize_check = passes.named(2)
    assert canonicalize_check is not None and canonicalize_check.loc == "ub.mlir:1:1"
    on_check = [a for a in listing.mlir_action_log(text("mlir_log.txt"), "apply-pattern").actions
                if a.unit.startswith("func.func @check")]
    assert on_check and {a.loc for a in on_check} == {"ub.mlir:1:1"}


def test_callsite_fused_and_named_locations() -> None:
    """``mlir-opt-19 t3.mlir --canonicalize --mlir-disable-threading
    --log-actions-to=t3_log.txt --mlir-print-debuginfo``: a callsite location is the
    callee's position, a fused one its first file position, a name alone none."""
    found = listing.mlir_action_log(text("t3_log.txt"), "apply-pattern")
    locs = {a.loc for a in found.actions}
    assert "t3.mlir:4:8" in locs  # loc(callsite("inner"("t3.mlir":4:8) at "caller.py":10:2))
    assert "t3.mlir:2:3" in locs  # loc(fused["y", "c3"("t3.mlir":2:3)])
    assert None in locs  # loc("y")
    assert not any(loc and loc.startswith("caller.py") for loc in locs)


def test_iree_opt_logs_conversion_and_walk_actions() -> None:
    """``iree-opt`` (IREE 3.13): ``apply-conversion`` and ``walk-and-apply-patterns`` are
    bare-named actions; pattern names keep their C++ namespace."""
    scf = text("iree_opt_scf_log.txt")
    assert listing.mlir_action_log(scf, "apply-conversion").actions == (
        Action(1, "apply-conversion", "module {...}", "scf.mlir:0:0", "SCFToControlFlowPass"),)
    assert listing.mlir_action_log(scf, "apply-pattern").named(1) == Action(
        1, "ForLowering", "%0 = scf.for %arg1 = %c0 to %arg0 step %c1 iter_args(%arg2 = "
        "%c0_i32) -> (i32) {...}", "scf.mlir:6:8", "SCFToControlFlowPass")
    walk = text("iree_opt_walk_log.txt")
    walked = listing.mlir_action_log(walk, "walk-and-apply-patterns")
    assert walked.actions == (Action(1, "walk-and-apply-patterns", "func.func @w() {...}", None,
                                     "IREEInjectAssumeAlignmentPass"),)
    pattern = listing.mlir_action_log(walk, "apply-pattern").named(1)
    assert pattern is not None and pattern.name == (
        "mlir::iree_compiler::(anonymous namespace)::InjectAssumeAlignmentForSubspanOp")
    assert pattern.loc is None  # no --mlir-print-debuginfo: no location
    assert pattern.within == "IREEInjectAssumeAlignmentPass"


def test_difference_names_the_first_action_that_differs() -> None:
    a = Listing(3, (Action(1, "P", "f"), Action(2, "Q", "f"), Action(3, "R", "g")))
    assert listing.difference(a, a) is None
    assert listing.difference(a, Listing(4)) == "the first counted 3 actions, the second 4"
    swapped = Listing(3, (Action(1, "P", "f"), Action(2, "Q", "g"), Action(3, "R", "f")))
    assert listing.difference(a, swapped) == (
        "action #2 was Q on f the first time, Q on g the second")
    assert listing.difference(a, Listing(3)) == "the first named 3 actions, the second 0"


# -- kinds: flags, reading, input --------------------------------------------------------

def test_each_kind_limits_with_its_tools_flag() -> None:
    assert Kind("opt-bisect").limit(7) == ("-opt-bisect-limit=7",)
    assert Kind("mlir-counter", "apply-pattern").limit(9) == (
        "--mlir-debug-counter=apply-pattern-skip=0,apply-pattern-count=9",)
    # LLVM >= 19's chunks: ``0`` is query 0 alone (it refuses ``0-0``), and limit 0 is one
    # chunk past any run's queries.
    assert Kind("llvm-counter", "dagcombine").limit(0) == (
        "-debug-counter=dagcombine=999999999",)
    assert Kind("llvm-counter", "dagcombine").limit(1) == ("-debug-counter=dagcombine=0",)
    assert Kind("llvm-counter", "dagcombine").limit(58) == (
        "-debug-counter=dagcombine=0-57",)


def test_mlir_names_come_from_a_run_without_the_counter() -> None:
    """The log disables the counter: counting and naming are two runs."""
    runs = Kind("mlir-counter", "apply-pattern").enumerations("/tmp/x.log")
    assert len(runs) == 2
    counting, naming = runs
    assert not any(f.startswith("--log-actions-to") for f in counting.flags)
    assert not any(f.startswith("--mlir-debug-counter") for f in naming.flags)
    assert "--log-actions-to=/tmp/x.log" in naming.flags


def test_reading_an_mlir_enumeration() -> None:
    kind = Kind("mlir-counter", "apply-pattern")
    found = kind.read((text("mlir_counter.txt"), ""), text("mlir_log.txt"))
    assert found.total == 26 and found.named(9) is not None
    assert found.named(9).name == "MaterializeKnownConstantValues"  # type: ignore[union-attr]
    # No log written (the tool ran where it could not write it): numbers only.
    assert kind.read((text("mlir_counter.txt"), ""), "") == Listing(26)


def test_an_action_log_of_another_compilation_is_refused() -> None:
    """The counting run and the naming run saw different compilations (a repro that is
    not deterministic): naming would name an action the limits never run."""
    kind = Kind("mlir-counter", "pass-execution")
    log = text("mlir_log.txt")
    other = log + log.splitlines()[1] + "\n"  # one more pass-execution
    with pytest.raises(ListingError, match="counted 11 'pass-execution' actions, the "
                                           "naming run .* 12"):
        kind.read((text("mlir_counter.txt"), ""), other)


@pytest.mark.parametrize("tag, output, why", [
    ("bogus-tag", "mlir_counter.txt", "counted nothing"),
    ("apply-pattern", "mlir_log_stderr.txt", "printed no MLIR debug-counter table"),
])
def test_an_mlir_counter_that_counted_nothing_says_why(tag: str, output: str,
                                                      why: str) -> None:
    with pytest.raises(NothingCounted, match=why):
        Kind("mlir-counter", tag).read((text(output), ""), "")


def test_an_opt_run_without_bisect_lines_counted_nothing() -> None:
    with pytest.raises(NothingCounted, match="no 'BISECT: running pass' line"):
        Kind("opt-bisect").read(("main returned 1\n",), "")


def test_a_compiled_out_llvm_counter_counted_nothing() -> None:
    """Debian's release LLVM parses ``-debug-counter`` and counts nothing."""
    kind = Kind("llvm-counter", "dagcombine")
    with pytest.raises(NothingCounted, match="compiled out"):
        kind.read(("",), "")
    with pytest.raises(NothingCounted, match="compiled out"):
        kind.read(("Counters and values:\ndagcombine : {0,0,-1}\n",), "")
    assert kind.read(("Counters and values:\ndagcombine : {1234,0,-1}\n",), "") == Listing(1234)


@pytest.mark.parametrize("spec, tag, expected", [
    ("opt-bisect", None, Kind("opt-bisect")),
    ("mlir-counter", None, Kind("mlir-counter", kinds.DEFAULT_MLIR_TAG)),
    ("mlir-counter", "apply-pattern", Kind("mlir-counter", "apply-pattern")),
    ("mlir-counter:apply-pattern", None, Kind("mlir-counter", "apply-pattern")),
    ("mlir-counter:apply-pattern", "apply-pattern", Kind("mlir-counter", "apply-pattern")),
    ("llvm-counter:dagcombine", None, Kind("llvm-counter", "dagcombine")),
])
def test_kind_and_tag_as_typed(spec: str, tag: str | None, expected: Kind) -> None:
    assert kinds.parse(spec, tag) == expected


@pytest.mark.parametrize("spec, tag, says", [
    ("opt-bisects", None, "unknown --kind 'opt-bisects'"),
    ("opt-bisect", "apply-pattern", "takes no counter name and no --tag"),
    ("opt-bisect:x", None, "takes no counter name"),
    ("mlir-counter", "apply-patterns", "unknown MLIR debug-counter tag 'apply-patterns'"),
    ("mlir-counter:pass-execution", "apply-pattern", "name two MLIR counters"),
    ("llvm-counter", None, "needs the counter's name"),
    ("llvm-counter:a b", None, "needs the counter's name"),
    ("llvm-counter:dagcombine", "apply-pattern", "--tag goes with --kind mlir-counter"),
])
def test_bad_kind_or_tag_is_refused_in_one_line(spec: str, tag: str | None, says: str) -> None:
    with pytest.raises(BadInput, match=says) as raised:
        kinds.parse(spec, tag)
    assert "\n" not in str(raised.value)
