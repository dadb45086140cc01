"""What ``bisectkit actions`` says beyond the first bad action, with the real compilers
(Debian's ``opt-19``, ``opt-14``, ``mlir-opt-19``; IREE's ``iree-compile``):

- ``--within N``: the MLIR ``apply-pattern`` actions inside ``pass-execution`` N, the
  second level, whose command the first answer prints; checked against a sweep of
  every K;
- ``--ir``: the IR of the unit before and after the first bad action, as a diff, on the
  terminal, in ``--json`` and in ``--report``; when it cannot be read, one line;
- ``--confirm``: every action but the first bad one, where the tool takes intervals.

Each scenario is a real miscompilation-shaped change: a fold that trusts ``nsw``
(``EarlyCSEPass`` on ``checked_add``; MLIR's ``int-range-optimizations`` turning a call
into the constant 1) or a canonicalization pattern that merges two additions.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.lines import flat
from helpers.worlds import World, cli

from bisectkit.actions import irdump
from bisectkit.actions.details import _filter


def _needs(*tools: str) -> pytest.MarkDecorator:
    """Skip without the real tools (CI installs them: there a missing one fails)."""
    missing = [t for t in tools if shutil.which(t) is None]
    return pytest.mark.skipif(bool(missing) and not os.environ.get("CI"),
                              reason=f"not installed: {', '.join(missing)}")


#: @check(0) computes maxsi(0, 2147483642) + 10 with nsw, which wraps when run as
#: written; int-range-optimizations trusts nsw and makes @main return the constant 1.
UB_MLIR = """\
func.func @check(%a: i32) -> i32 {
  %big = arith.constant 2147483642 : i32
  %c10 = arith.constant 10 : i32
  %c0 = arith.constant 0 : i32
  %x = arith.maxsi %a, %big : i32
  %y = arith.addi %x, %c10 overflow<nsw> : i32
  %p = arith.cmpi sgt, %y, %c0 : i32
  %r = arith.extui %p : i1 to i32
  return %r : i32
}
func.func @main() -> i32 {
  %z = arith.constant 0 : i32
  %r = func.call @check(%z) : (i32) -> i32
  return %r : i32
}
"""
UB_REPRO = """\
#!/bin/sh
# Bad when @main returns the constant int-range-optimizations proved (trusting nsw).
PIPE='builtin.module(func.func(canonicalize,cse),int-range-optimizations,func.func(canonicalize,cse))'
out=$(mlir-opt-19 "$(dirname "$0")/ub.mlir" --pass-pipeline="$PIPE" $BISECTKIT_ACTIONS) || exit 125
echo "$out" | awk '/func.func @main/,/^  }/' | grep -q 'return %c1_i32' && exit 1
exit 0
"""
#: AddIAddConstant merges the two additions of @f (apply-pattern #6 of 39).
ADDS_MLIR = """\
func.func @f(%a: i32) -> i32 {
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %x = arith.addi %a, %c3 : i32
  %y = arith.addi %x, %c4 : i32
  %z = arith.subi %y, %c3 : i32
  return %z : i32
}
func.func @g(%a: i32, %b: i1) -> i32 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %s = arith.select %b, %c1, %c2 : i32
  %t = arith.select %b, %s, %c2 : i32
  return %t : i32
}
"""
ADDS_REPRO = """\
#!/bin/sh
# Bad when the two additions of @f are merged into one.
out=$(mlir-opt-19 --canonicalize --cse $BISECTKIT_ACTIONS "$(dirname "$0")/adds.mlir") || exit 125
n=$(echo "$out" | awk '/func.func @f/,/return/' | grep -c 'arith.addi')
[ "$n" -ge 2 ] && exit 0
exit 1
"""
#: EarlyCSEPass (pass 7 of opt's O2) folds the overflow check `a + 1 > a` (nsw) to true.
CHECKED_ADD_LL = """\
define i32 @checked_add(i32 %a) {
entry:
  %s = add nsw i32 %a, 1
  %c = icmp sgt i32 %s, %a
  br i1 %c, label %ok, label %bad
ok:
  ret i32 0
bad:
  ret i32 1
}
define i32 @f(i32 %x) {
  %y = mul i32 %x, 2
  %z = sdiv i32 %y, 2
  ret i32 %z
}
"""
#: The compiler's stderr: all of it, or (``STDERR=headless``) without the dumps' headers.
OPT_REPRO = """\
#!/bin/sh
# Bad when checked_add's overflow check is folded away.
here=$(dirname "$0")
if [ "$STDERR" = headless ]; then
  out=$({OPT} -passes='default<O2>' $BISECTKIT_ACTIONS -S "$here/ub.ll" 2>"$here/err")
  status=$?
  grep -v 'IR Dump' "$here/err" >&2
  [ $status = 0 ] || exit 125
else
  out=$({OPT} -passes='default<O2>' $BISECTKIT_ACTIONS -S "$here/ub.ll") || exit 125
fi
echo "$out" | awk '/define.*@checked_add/,/^}/' | grep -q 'icmp' && exit 0
exit 1
"""


def _scenario(where: Path, files: dict[str, str]) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (where / name).write_text(text)
        if name.endswith(".sh"):
            (where / name).chmod(0o755)
    return where


def _actions(world: World, where: Path, *args: str, env: dict[str, str] | None = None
             ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``bisectkit actions ARGS`` in ``where`` (``--json`` added before the repro)."""
    out = where / "answer.json"
    out.unlink(missing_ok=True)
    cut = list(args).index("--")
    r = cli(world, "actions", *args[:cut], "--json", str(out), *args[cut:], cwd=where,
            extra_env=env)
    return r, (json.loads(out.read_text()) if out.exists() else {})


def _verdict(repro: Path, flags: str) -> int:
    """The repro's exit status under ``$BISECTKIT_ACTIONS=flags``, run by hand."""
    env = {**os.environ, "BISECTKIT_ACTIONS": flags, "BISECTKIT_ACTION_LOG": os.devnull}
    return subprocess.run([str(repro)], env=env,
                          capture_output=True, timeout=60).returncode


@_needs("mlir-opt-19")
def test_pass_answer_prints_the_command_that_names_the_pattern_inside_it(
        world: World, tmp_path: Path) -> None:
    where = _scenario(tmp_path / "ub", {"ub.mlir": UB_MLIR, "repro.sh": UB_REPRO})
    r, first = _actions(world, where, "--kind", "mlir-counter", "--ir", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert first["first_bad"] == 6 and first["action"]["name"] == "ArithIntRangeOpts"
    command = first["second_level"]
    assert command == shlex.join(["bisectkit", "actions", "--kind", "mlir-counter",
                                  "--within", "6", "--", str(where / "repro.sh")])
    assert f"  bisect inside it: {command}" in r.stdout.splitlines()

    words = shlex.split(command)
    r, second = _actions(world, where, *words[2:-2], "--ir", *words[-2:])
    assert r.returncode == 0, r.stderr
    within, action = second["within"], second["action"]
    k, before = second["first_bad"], within["before"]
    assert (within["number"], within["counted"]) == (6, "apply-pattern")
    assert within["action"].startswith("ArithIntRangeOpts on builtin.module")
    assert (k, before, second["total"], action["number"]) == (2, 7, 19, 9)
    assert action["name"] == "MaterializeKnownConstantValues"
    assert action["unit"].startswith("%0 = func.call @check")
    assert action["loc"].endswith("ub.mlir:13:8") and action["pass"] == "ArithIntRangeOpts"
    assert ("apply-pattern 2 of the 19 inside pass-execution #6 (apply-pattern #9 of the "
            "run) is the first bad action: MaterializeKnownConstantValues") in flat(r.stdout)
    assert "+    return %c1_i32 : i32" in second["ir_diff"].splitlines()
    assert "-    return %0 : i32" in second["ir_diff"].splitlines()

    # Brute force: every K, by hand, with the recipe the answer replays.
    sweep = [_verdict(where / "repro.sh",
                      "--mlir-disable-threading --mlir-debug-counter=pass-execution-skip=0,"
                      f"pass-execution-count=6,apply-pattern-skip=0,"
                      f"apply-pattern-count={before + n}")
             for n in range(second["total"] + 1)]
    assert sweep == [0] * k + [1] * (second["total"] + 1 - k)
    assert second["replay"]["bad"].endswith(
        "pass-execution-count=6,apply-pattern-skip=0,apply-pattern-count=9' "
        f"{where / 'repro.sh'}")


@_needs("mlir-opt-19")
def test_within_refuses_a_pass_it_cannot_bisect_inside(world: World, tmp_path: Path) -> None:
    where = _scenario(tmp_path / "ub", {"ub.mlir": UB_MLIR, "repro.sh": UB_REPRO})
    cases = {
        # Canonicalizer on @check: its 7 patterns leave the output good.
        "2": (5, "bisectkit: error: with all 7 apply-pattern actions of pass-execution #2 "
                 "run (K=7) the repro says good, not bad"),
        # The nested pipeline's adaptor applies no pattern itself.
        "1": (3, "bisectkit: error: pass-execution #1 (mlir::detail::OpToOpPassAdaptor on "
                 "builtin.module"),
        "40": (2, "bisectkit: error: --within 40: this run has 11 pass-execution actions, "
                  "no #40"),
    }
    for n, (code, said) in cases.items():
        r, _ = _actions(world, where, "--kind", "mlir-counter", "--within", n, "--",
                        "./repro.sh")
        assert r.returncode == code, (n, r.stderr)
        assert r.stderr.startswith(said) and len(r.stderr.splitlines()) == 1, r.stderr


def test_within_without_a_counter_inside_the_pass_is_refused_before_any_run(
        world: World, tmp_path: Path) -> None:
    """OptBisect counts passes, not what one pass does: ``--within`` needs the LLVM
    counter to bisect (``llvm-counter:NAME --within N``, tested on iree-compile); an MLIR
    tag other than pass-execution has nothing inside it."""
    where = _scenario(tmp_path / "x", {"repro.sh": "#!/bin/sh\ntouch ran\nexit 1\n"})
    for kind in (["--kind", "opt-bisect"], ["--kind", "mlir-counter", "--tag", "apply-pattern"]):
        r, _ = _actions(world, where, *kind, "--within", "3", "--", "./repro.sh")
        assert r.returncode == 2, r.stderr
        assert len(r.stderr.splitlines()) == 1 and "--within" in r.stderr
        assert not (where / "ran").exists()
    assert "--kind llvm-counter:NAME --within N" in cli(
        world, "actions", "--kind", "opt-bisect", "--within", "3", "--", "./repro.sh",
        cwd=where).stderr


@pytest.mark.parametrize("opt", ["opt-19", "opt-14"])
def test_ir_diff_and_confirm_of_the_first_bad_pass(world: World, tmp_path: Path, opt: str
                                                   ) -> None:
    if shutil.which(opt) is None and not os.environ.get("CI"):
        pytest.skip(f"not installed: {opt}")
    where = _scenario(tmp_path / opt, {"ub.ll": CHECKED_ADD_LL,
                                       "repro.sh": OPT_REPRO.replace("{OPT}", opt)})
    report = where / "bug.md"
    r, data = _actions(world, where, "--kind", "opt-bisect", "--ir", "--confirm",
                       "--report", str(report), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == 7 and data["action"]["name"] == "EarlyCSEPass"
    diff = data["ir_diff"].splitlines()
    assert diff[:2] == ["--- before EarlyCSEPass on checked_add",
                        "+++ after EarlyCSEPass on checked_add"]
    assert "-  %c = icmp sgt i32 %s, %a" in diff and "+  ret i32 0" in diff
    assert not any("@f" in line for line in diff)  # filtered to the pass's function
    assert "\n".join(diff) in r.stdout.replace("\r\n", "\n")
    assert data["ir_diff"].rstrip("\n") in report.read_text()
    # Neither opt takes OptBisect intervals: said, and the answer stands.
    assert data["confirm"]["confirmed"] is None
    assert "  the tool takes no --opt-bisect intervals: not confirmed" in r.stdout.splitlines()
    assert data["runs"]["checks"] == 2 and data["runs"]["limits"] <= data["runs"]["bound"]


@_needs("mlir-opt-19")
def test_ir_diff_of_the_first_bad_pattern(world: World, tmp_path: Path) -> None:
    where = _scenario(tmp_path / "adds", {"adds.mlir": ADDS_MLIR, "repro.sh": ADDS_REPRO})
    r, data = _actions(world, where, "--kind", "mlir-counter", "--tag", "apply-pattern",
                       "--ir", "--confirm", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == 6 and data["action"]["name"] == "AddIAddConstant"
    diff = data["ir_diff"].splitlines()
    assert diff[:2] == ["--- limit 5, after Canonicalizer (canonicalize)",
                        "+++ limit 6, after Canonicalizer (canonicalize)"]
    assert "-    %1 = arith.addi %0, %c4_i32 : i32" in diff
    assert "+    %c7_i32 = arith.constant 7 : i32" in diff
    assert "second_level" not in data  # the second level is inside pass executions
    assert data["confirm"]["confirmed"] is None
    assert "MLIR's debug counter takes only skip and count" in data["confirm"]["line"]


@_needs("opt-19")
def test_ir_that_cannot_be_read_is_said_and_the_answer_stands(world: World, tmp_path: Path
                                                              ) -> None:
    where = _scenario(tmp_path / "q", {"ub.ll": CHECKED_ADD_LL,
                                       "repro.sh": OPT_REPRO.replace("{OPT}", "opt-19")})
    r, data = _actions(world, where, "--kind", "opt-bisect", "--ir", "--", "./repro.sh",
                       env={"STDERR": "headless"})
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == 7 and data["ir_diff"] is None
    line = "--ir: the tool printed no IR dump around pass (7) (-print-before-all/-print-after-all)"
    assert data["ir_note"] == line and f"  {line}" in r.stdout.replace("\n    ", " ")


#: IREE's LLVM codegen folds `x + 1 > x` (nsw) to true: element 0 (x = INT32_MAX) turns
#: from 0 to 1. The compiler's stderr goes to $BISECTKIT_ACTION_LOG.
IREE_MLIR = """\
func.func @ub(%x: tensor<4xi32>) -> tensor<4xi1> {
  %c1 = arith.constant dense<1> : tensor<4xi32>
  %s = arith.addi %x, %c1 overflow<nsw> : tensor<4xi32>
  %r = arith.cmpi sgt, %s, %x : tensor<4xi32>
  return %r : tensor<4xi1>
}
"""
IREE_REPRO = """\
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \\
  --iree-llvmcpu-target-cpu=generic "$here/ub.mlir" -o "$here/ub.vmfb" $BISECTKIT_ACTIONS \\
  2>>"$BISECTKIT_ACTION_LOG" || exit 125
out=$(iree-run-module --module="$here/ub.vmfb" --function=ub \\
  --input="4xi32=2147483647 5 -1 0" 2>&1) || exit 125
case "$out" in
  *"4xi1=00 01 01 01"*) exit 0 ;;
  *"4xi1=01 01 01 01"*) exit 1 ;;
esac
exit 125
"""


@_needs("iree-compile", "iree-run-module")
def test_confirm_runs_every_pass_but_the_first_bad_one_where_the_tool_takes_intervals(
        world: World, tmp_path: Path) -> None:
    where = _scenario(tmp_path / "iree", {"ub.mlir": IREE_MLIR, "repro.sh": IREE_REPRO})
    r, data = _actions(world, where, "--kind", "opt-bisect", "--confirm", "--ir", "--",
                       "./repro.sh")
    assert r.returncode == 0, r.stderr
    first, total = data["first_bad"], data["total"]
    assert data["action"]["name"] == "early-cse" and first == 8
    flag = f"--opt-bisect=1-{first - 1},{first + 1}-{total}"
    confirm = data["confirm"]
    # The tool read the intervals (pass 8 NOT run): later passes fold the check too.
    assert (confirm["flags"], confirm["verdict"], confirm["confirmed"]) == (flag, "bad", False)
    assert ("  not confirmed: with every action but #8 run the repro still says bad: other "
            "actions cause the behaviour too") in r.stdout.replace("\n    ", " ").splitlines()
    assert _verdict(where / "repro.sh", f"--mlir-disable-threading {flag}") == 1
    step = next(s for s in data["steps"] if s["run"] == "every action but #8")
    assert step["actions"] == f"--mlir-disable-threading {flag}"
    assert any(line.startswith("+  store <4 x i8> splat (i8 1)")
               for line in data["ir_diff"].splitlines())


LEGACY_DUMPS = """\
*** IR Dump Before Constant Hoisting (consthoist) ***
define i32 @pick(i1 %b) {
  ret i32 1
}
BISECT: running pass (3) Constant Hoisting on function (pick)
*** IR Dump After Constant Hoisting (consthoist) ***
define i32 @pick(i1 %b) {
  ret i32 2
}
*** IR Dump Before Expand memcmp() (expand-memcmp) ***
define i32 @pick(i1 %b) {
  ret i32 2
}
BISECT: NOT running pass (4) Expand memcmp() on function (pick)
"""
NEW_PM_DUMPS = """\
BISECT: running pass (6) SROAPass on f\r
; *** IR Dump Before SROAPass on f ***\r
define i32 @f() {\r
  ret i32 1\r
}\r
\r
; *** IR Dump Before CoroEarlyPass on f ***\r
define i32 @f() {\r
  ret i32 1\r
}\r
; *** IR Dump After CoroEarlyPass on f ***\r
define i32 @f() {\r
  ret i32 1\r
}\r
; *** IR Dump After SROAPass on f ***\r
define i32 @f() {\r
  ret i32 3\r
}\r
BISECT: running pass (7) EarlyCSEPass on f\r
"""


def test_llvm_dumps_are_paired_by_position_in_both_pass_managers() -> None:
    legacy = irdump.opt_pair(LEGACY_DUMPS, 3)
    assert legacy is not None
    assert [d.title for d in legacy] == ["Constant Hoisting (consthoist)"] * 2
    assert [d.text.split("\n")[1] for d in legacy] == ["  ret i32 1", "  ret i32 2"]
    new = irdump.opt_pair(NEW_PM_DUMPS, 6)
    assert new is not None and [d.title for d in new] == ["SROAPass on f"] * 2
    assert [d.text.split("\n")[1] for d in new] == ["  ret i32 1", "  ret i32 3"]
    # Pass 4 did not run, pass 7 printed no dump: no pair, never a neighbour's.
    assert irdump.opt_pair(LEGACY_DUMPS, 4) is None and irdump.opt_pair(NEW_PM_DUMPS, 7) is None


def test_the_ir_filter_names_the_function_of_the_unit() -> None:
    assert _filter("checked_add") == ("-filter-print-funcs=checked_add",)
    assert _filter("(f, g)") == ("-filter-print-funcs=f,g",)
    assert _filter("function (pick)") == ("-filter-print-funcs=pick",)
    assert _filter("loop %loop in function sum") == ("-filter-print-funcs=sum",)
    assert _filter("[module]") == _filter("Loop at depth 1 containing: %loop<header>") == ()
