"""``bisectkit actions`` end to end with the real compilers: the first bad action it names
is the one a brute-force sweep of the repro over the limits finds.

The scenarios (``tests/data/actions``) are real miscompilations of undefined behaviour:
``opt``'s ``default<O2>`` folds an ``add nsw`` overflow check (EarlyCSE on
``checked_add``, action #7 of 169 with ``opt-19``, of 150 with ``opt-14``) and
``mlir-opt``'s ``int-range-optimizations`` does the same in MLIR (pattern
``MaterializeKnownConstantValues`` at ``ub.mlir:13:8``, pass-execution #6). Each test runs
the real CLI in an empty directory (no git) and checks its JSON and printed answer against
the repro run by the test itself at every limit (or, for the long opt pipelines, every
limit up to the first bad one and a sample above). Also: the refusals (a run that is not
deterministic, a counter that counts nothing, a repro that never splices
``$BISECTKIT_ACTIONS``, ends that are not good/bad, bad ``--kind``/``--tag``), a
non-monotone repro and ``--probe``, a compiler crash taken as skip, ``--jobs 2``,
``--report`` and Ctrl-C.

Needs Debian's ``llvm-14``, ``llvm-19`` and ``mlir-19-tools``; without them the tests
skip saying which tool is missing, except under CI (``$CI`` set), where they fail.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from helpers.lines import flat
from helpers.sessions import wait_for
from worldgen import hermetic_env

from bisectkit.safety.processes import alive

DATA = Path(__file__).parent / "data" / "actions"
OPT = {"19": ("opt-19", "lli-19"), "14": ("opt-14", "lli-14")}
MLIR = ("mlir-opt-19", "mlir-cpu-runner-19")
#: The action flags the sweeps give the repro (bisectkit owns them in its own runs).
OPT_LIMIT = "-opt-bisect-limit={}"
MLIR_LIMIT = "--mlir-disable-threading --mlir-debug-counter={tag}-skip=0,{tag}-count={n}"


def need(*tools: str) -> None:
    """Skip (fail under CI, which installs them) when a tool is not on PATH."""
    missing = [t for t in tools if shutil.which(t) is None]
    if not missing:
        return
    why = (f"{', '.join(missing)} not installed (Debian: apt-get install llvm-14 llvm-19 "
           "mlir-19-tools)")
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the compiler-actions tests: {why}")
    pytest.skip(why)


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A hermetic environment whose temporary directory is the test's own."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**hermetic_env(tmp_path / "home"), "TMPDIR": str(tmp), **extra}


def actions(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``bisectkit actions ARGS`` run by the real console script in ``tmp_path``."""
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    return subprocess.run([*argv, "actions", *args], cwd=tmp_path,
                          env=env or env_for(tmp_path), text=True, capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def found(tmp_path: Path, *args: str, env: dict[str, str] | None = None
          ) -> tuple[dict[str, Any], str]:
    """Run ``bisectkit actions --json FILE ARGS``: (the JSON answer, what it printed)."""
    out = tmp_path / "answer.json"
    r = actions(tmp_path, "--json", str(out), *args, env=env)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr)
    return json.loads(out.read_text(encoding="utf-8")), r.stdout


# -- the brute force -----------------------------------------------------------------------

def verdict(repro: str, flags: str, **env: str) -> str:
    """The repro's own verdict with ``$BISECTKIT_ACTIONS`` = ``flags``."""
    r = subprocess.run([str(DATA / repro)], env={**os.environ, **env,
                                                  "BISECTKIT_ACTIONS": flags},
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return {0: "good", 125: "skip"}.get(r.returncode, "bad" if r.returncode < 125 else "?")


def sweep(repro: str, limit: str, limits: Sequence[int], **env: str) -> dict[int, str]:
    """The repro's verdict at each of ``limits`` (``limit``: the flags, ``{}`` the limit),
    two at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = pool.map(lambda n: verdict(repro, limit.format(n), **env), limits)
        return dict(zip(limits, verdicts, strict=True))


@cache
def scan_up(repro: str, limit: str, total: int, stride: int, env: tuple[tuple[str, str], ...]
            ) -> tuple[int, dict[int, str]]:
    """The smallest bad limit by trying 0, 1, 2, ... in turn, and every verdict seen: those
    up to it and a sample above it (every ``stride``-th limit and the total)."""
    seen: dict[int, str] = {}
    first = None
    for n in range(total + 1):
        seen[n] = verdict(repro, limit.format(n), **dict(env))
        if seen[n] == "bad":
            first = n
            break
    assert first is not None, f"{repro}: no limit is bad"
    seen.update(sweep(repro, limit, [*range(first + stride, total, stride), total], **dict(env)))
    return first, seen


def assert_answer(data: dict[str, Any], printed: str, first: int, total: int,
                  description: str) -> None:
    """The JSON and the printed headline name action ``first`` of ``total`` as
    ``description``, with its limits either side, in at most the bound of limit runs."""
    assert data["status"] == "found" and data["total"] == total
    assert (data["first_bad"], data["good_limit"], data["bad_limit"]) == (first, first - 1, first)
    assert f"action #{first} of {total} is the first bad action: {description}" in flat(printed)
    assert f"limit {first - 1}: good   limit {first}: bad" in printed
    bound = math.ceil(math.log2(total + 1)) + 2
    assert data["runs"]["bound"] == bound
    limit_steps = [s for s in data["steps"] if s["limit"] is not None]
    assert data["runs"]["limits"] == len(limit_steps) - data["runs"]["probes"] <= bound
    verdicts = {s["limit"]: s["verdict"] for s in limit_steps}
    assert verdicts[first - 1] == "good" and verdicts[first] == "bad"


def assert_refused(r: subprocess.CompletedProcess[str], code: int, *says: str) -> str:
    """Exit ``code`` with one error line on stderr that says each of ``says``."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == code, (r.stdout[-3000:], r.stderr)
    assert len(lines) == 1 and lines[0].startswith("bisectkit: error: "), r.stderr
    for part in says:
        assert part in lines[0], lines[0]
    return lines[0]


# -- opt: OptBisect ------------------------------------------------------------------------

@pytest.mark.parametrize("llvm, total", [("19", 169), ("14", 150)])
def test_opt_names_the_pass_execution_that_folds_the_overflow_check(
        tmp_path: Path, llvm: str, total: int) -> None:
    need(*OPT[llvm])
    env = env_for(tmp_path, LLVM=llvm)
    first, seen = scan_up("checked_add.sh", OPT_LIMIT, total, 16, (("LLVM", llvm),))
    assert first == 7 and seen[total] == "bad"
    assert set(seen.values()) == {"good", "bad"}
    assert all(v == ("bad" if n >= first else "good") for n, v in seen.items())

    data, printed = found(tmp_path, "--kind", "opt-bisect", "--",
                          str(DATA / "checked_add.sh"), env=env)
    assert_answer(data, printed, first, total, "EarlyCSEPass on checked_add")
    assert data["action"] == {"number": 7, "name": "EarlyCSEPass", "unit": "checked_add",
                              "loc": None, "pass": None}
    assert data["kind"] == "opt-bisect" and data["non_monotone"] == []
    # Every limit it tested has the verdict the sweep gives it.
    for step in data["steps"]:
        if step["limit"] in seen:
            assert step["verdict"] == seen[step["limit"]], step
    # The replay commands it prints reproduce good and bad by hand.
    for which, code in (("good", 0), ("bad", 1)):
        assert f"replay ({which})" in printed
        r = subprocess.run(["bash", "-c", data["replay"][which]], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == code, (data["replay"][which], r.stdout, r.stderr)


def test_two_limits_at_once_give_the_same_answer(tmp_path: Path) -> None:
    need(*OPT["19"])
    first, _ = scan_up("checked_add.sh", OPT_LIMIT, 169, 16, (("LLVM", "19"),))
    data, printed = found(tmp_path, "--kind", "opt-bisect", "--jobs", "2", "--",
                          str(DATA / "checked_add.sh"))
    assert data["first_bad"] == first == 7
    assert data["action"]["name"] == "EarlyCSEPass" and data["action"]["unit"] == "checked_add"
    assert "action #7 of 169 is the first bad action: EarlyCSEPass on checked_add" in printed
    # Each limit is tested once; the runs in flight had their own step and action log.
    limits = [s["limit"] for s in data["steps"] if s["limit"] is not None]
    assert len(limits) == len(set(limits))


def test_runs_left_in_flight_by_the_answer_do_not_cancel_the_probes_and_the_ir(
        tmp_path: Path) -> None:
    """Four limits at once, those from 60 up slow: the answer (7) comes while they still
    run. Stopping them must not stop the runs that follow (the probes, the IR dumps)."""
    need(*OPT["19"])
    slow = tmp_path / "slow.sh"
    slow.write_text(f'#!/bin/sh\n[ "$BISECTKIT_ACTION_LIMIT" -ge 60 ] && sleep 2\n'
                    f'exec {DATA / "checked_add.sh"}\n')
    slow.chmod(0o755)
    data, printed = found(tmp_path, "--kind", "opt-bisect", "--jobs", "4", "--probe", "3",
                          "--ir", "--", str(slow))
    assert data["first_bad"] == 7 and data["runs"]["probes"] == 3
    assert data["ir_diff"] and "icmp" in data["ir_diff"]
    assert "action #7 of 169 is the first bad action" in printed


# -- mlir-opt: MLIR debug counter -----------------------------------------------------------

@pytest.mark.parametrize("tag, total, first, description, action", [
    ("apply-pattern", 26, 9,
     "MaterializeKnownConstantValues on %0 = func.call @check(%c0_i32) : (i32) -> i32 at "
     "{ub}:13:8 in pass ArithIntRangeOpts",
     {"number": 9, "name": "MaterializeKnownConstantValues",
      "unit": "%0 = func.call @check(%c0_i32) : (i32) -> i32", "loc": "{ub}:13:8",
      "pass": "ArithIntRangeOpts"}),
    ("pass-execution", 11, 6, "ArithIntRangeOpts on builtin.module at {ub}:0:0",
     {"number": 6, "name": "ArithIntRangeOpts", "unit": "builtin.module", "loc": "{ub}:0:0",
      "pass": None}),
])
def test_mlir_opt_names_the_action_with_its_location_and_pass(
        tmp_path: Path, tag: str, total: int, first: int, description: str,
        action: dict[str, Any]) -> None:
    need(*MLIR)
    ub = str(DATA / "ub.mlir")
    limit = MLIR_LIMIT.format(tag=tag, n="{}")
    every = sweep("ub_mlir.sh", limit, range(total + 1))
    assert every == {n: "bad" if n >= first else "good" for n in range(total + 1)}

    data, printed = found(tmp_path, "--kind", "mlir-counter", "--tag", tag, "--",
                          str(DATA / "ub_mlir.sh"))
    assert_answer(data, printed, first, total, description.format(ub=ub))
    assert data["kind"] == f"mlir-counter:{tag}"
    assert data["action"] == {k: v.format(ub=ub) if isinstance(v, str) else v
                              for k, v in action.items()}
    for step in data["steps"]:
        if step["limit"] is not None:
            assert step["verdict"] == every[step["limit"]], step
            # bisectkit owns the threading flag: every limit runs on one thread.
            assert step["actions"].startswith("--mlir-disable-threading "), step
    # Two enumerations, each a counting run and a naming run.
    assert data["runs"]["enumeration"] == 4


# -- refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, says", [
    # An input with one more function on every other run: other totals.
    ("count", ("counted 26 'apply-pattern' actions", "(--log-actions-to) 55",
               "not deterministic")),
    # The same functions in the other order: the same totals, other actions first.
    ("order", ("the two enumerations of the compiler's actions differ (action #",
               "ub_swapped.mlir", "not deterministic")),
])
def test_an_enumeration_that_changes_from_run_to_run_names_nothing(
        tmp_path: Path, mode: str, says: tuple[str, ...]) -> None:
    need(*MLIR)
    env = env_for(tmp_path, NONDET_MODE=mode, NONDET_STATE=str(tmp_path / "runs"))
    r = actions(tmp_path, "--kind", "mlir-counter", "--tag", "apply-pattern", "--",
                str(DATA / "nondet_mlir.sh"), env=env)
    assert_refused(r, 3, *says, "no action can be named")
    assert "is the first bad action" not in r.stdout


def test_a_tag_mlir_opt_never_counts_is_refused(tmp_path: Path) -> None:
    """``apply-conversion`` is not in ``mlir-opt-19`` (the tool accepts it, counts 0)."""
    need(*MLIR)
    r = actions(tmp_path, "--kind", "mlir-counter", "--tag", "apply-conversion", "--",
                str(DATA / "ub_mlir.sh"))
    assert_refused(r, 3, "the MLIR debug counter 'apply-conversion' counted nothing")


@pytest.mark.parametrize("kind, says", [
    ("opt-bisect", "printed no 'BISECT: running pass' line"),
    ("mlir-counter", "printed no MLIR debug-counter table"),
])
def test_a_repro_that_never_splices_the_action_flags_is_refused(
        tmp_path: Path, kind: str, says: str) -> None:
    need(*OPT["19"])
    r = actions(tmp_path, "--kind", kind, "--", str(DATA / "no_splice.sh"))
    assert_refused(r, 3, says, "$BISECTKIT_ACTIONS")


#: Two opt-19 runs get the flags: select.ll's (93 passes) logs to $BISECTKIT_ACTION_LOG,
#: checked_add.ll's (169, whose #7 decides the verdict) prints to the output.
#: ``$TEE``: the second run's stderr goes to the log too (a tee: one place is counted).
SPLIT_REPRO = """\
#!/bin/bash
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
log=/dev/null
if [ -n "$TEE" ]; then
  log=$BISECTKIT_ACTION_LOG
else
  opt-19 -S -passes='default<O2>' $BISECTKIT_ACTIONS "{data}/select.ll" -o /dev/null \\
    2>>"$BISECTKIT_ACTION_LOG" || exit 125
fi
opt-19 -S -passes='default<O2>' $BISECTKIT_ACTIONS "{data}/checked_add.ll" -o "$tmp/o.ll" \\
  2> >(tee -a "$log" >&2) || exit 125
wait
lli-19 "$tmp/o.ll"
"""


def test_action_lines_split_between_the_log_and_the_output_are_refused(
        tmp_path: Path) -> None:
    """Counting select.ll's passes from the log while the limits decide checked_add's named
    "EarlyCSEPass on pick": two compiler runs limited, one counted, is refused; the same
    lines in both places (a tee) are one run's, counted once."""
    need(*OPT["19"])
    repro = tmp_path / "split.sh"
    repro.write_text(SPLIT_REPRO.format(data=DATA), encoding="utf-8")
    repro.chmod(0o755)
    r = actions(tmp_path, "--kind", "opt-bisect", "--", str(repro))
    assert_refused(r, 3, "the repro's output has action lines that $BISECTKIT_ACTION_LOG "
                   "has not", "two compiler runs get $BISECTKIT_ACTIONS")
    assert "is the first bad action" not in r.stdout
    data, _ = found(tmp_path, "--kind", "opt-bisect", "--keep-output", "2000", "--",
                    str(repro), env=env_for(tmp_path, TEE="1"))
    assert (data["total"], data["first_bad"]) == (169, 7)
    assert data["action"]["unit"] == "checked_add"


def test_action_lines_cut_by_keep_output_are_refused_saying_so(tmp_path: Path) -> None:
    """checked_add.sh prints its 169 BISECT lines (about 10 kB) to its output; with
    ``--keep-output 4096`` the middle is dropped: the refusal names the cut and its fixes,
    not a compiler that "ran more than once"."""
    need(*OPT["19"])
    r = actions(tmp_path, "--kind", "opt-bisect", "--keep-output", "4096", "--",
                str(DATA / "checked_add.sh"))
    assert_refused(r, 3, "more than --keep-output keeps", "$BISECTKIT_ACTION_LOG")
    assert "ran more than once" not in r.stderr


def test_a_behaviour_the_full_pipeline_undoes_is_not_bisected(tmp_path: Path) -> None:
    """select.ll: SimplifyCFG makes a select (bad), InstCombine removes it: all 93 pass
    executions run give good again."""
    need("opt-19")
    assert sweep("select.sh", OPT_LIMIT, [0, 93]) == {0: "good", 93: "good"}
    r = actions(tmp_path, "--kind", "opt-bisect", "--", str(DATA / "select.sh"))
    assert_refused(r, 5, "with all 93 actions run (limit 93) the repro says good, not bad",
                   "not caused by actions bisectkit can skip")


@pytest.mark.parametrize("args, says", [
    ((), "give the kind of action to bisect"),
    (("--kind", "opt-bisects"), "unknown --kind 'opt-bisects'"),
    (("--kind", "opt-bisect", "--tag", "apply-pattern"), "takes no counter name and no --tag"),
    (("--kind", "mlir-counter", "--tag", "apply-patterns"),
     "unknown MLIR debug-counter tag 'apply-patterns'"),
    (("--kind", "llvm-counter"), "needs the counter's name"),
    (("--kind", "opt-bisect", "--jobs", "0"), "--jobs"),
])
def test_bad_kind_or_tag_is_refused_before_any_run(tmp_path: Path, args: tuple[str, ...],
                                                   says: str) -> None:
    ran = tmp_path / "ran"
    repro = tmp_path / "repro.sh"
    repro.write_text(f"#!/bin/sh\ntouch {ran}\n", encoding="utf-8")
    repro.chmod(0o755)
    r = actions(tmp_path, *args, "--", str(repro))
    # A value argparse refuses (--jobs 0) comes after the command's usage line.
    lines = [line for line in r.stderr.splitlines()
             if line.strip() and not line.startswith("usage: bisectkit actions ")]
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert not ran.exists()


# -- non-monotone, crashes ---------------------------------------------------------------------

def test_probes_report_the_limits_that_contradict_a_non_monotone_answer(tmp_path: Path) -> None:
    """nonmono.sh with opt-19: bad from #5 (SimplifyCFG makes a select), good again at
    21..23 (InstCombine removes it), bad for good from #24 (the overflow fold)."""
    need(*OPT["19"])
    first, _ = scan_up("nonmono.sh", OPT_LIMIT, 245, 245, ())
    assert first == 5
    data, printed = found(tmp_path, "--kind", "opt-bisect", "--probe", "10", "--",
                          str(DATA / "nonmono.sh"))
    assert_answer(data, printed, first, 245, "SimplifyCFGPass on pick")
    assert data["runs"]["probes"] == 10
    tested = sorted({s["limit"] for s in data["steps"] if s["limit"] is not None})
    truth = sweep("nonmono.sh", OPT_LIMIT, tested)
    assert {s["limit"]: s["verdict"] for s in data["steps"] if s["limit"] is not None} == truth
    contradicting = [n for n in tested
                     if (truth[n] == "bad" and n < first) or (truth[n] == "good" and n >= first)]
    assert contradicting, "the probes should land in 21..23"
    assert data["non_monotone"] == [{"limit": n, "verdict": truth[n]} for n in contradicting]
    for n in contradicting:
        assert (f"non-monotone: limit {n} is {truth[n]}, against the answer") in printed


CRASH_REPRO = """\
#!/bin/bash
# checked_add.sh, but at limit $CRASH_AT the repro also runs llc-19 on an input GlobalISel
# cannot legalize (global_isel_crash.ll): a real LLVM crash (abort, stack dump) in its
# output; the repro still says bad.
"{data}/checked_add.sh"; rc=$?
if [ "$BISECTKIT_ACTION_LIMIT" = "$CRASH_AT" ]; then
  llc-19 -O2 -global-isel "{data}/global_isel_crash.ll" -o /dev/null
  exit 1
fi
exit $rc
"""


def test_a_compiler_crash_under_a_limit_is_skip(tmp_path: Path) -> None:
    """No limit of the scenarios here crashes the compiler by itself (the Debian tools are
    release builds); the crash is real (``llc-19 -global-isel`` aborting with LLVM's crash
    banner) but the repro chooses the limit it happens at: 5, which the bisection of
    checked_add tests. A crash is not the behaviour bisected: skip, stepped around."""
    need(*OPT["19"], "llc-19")
    repro = tmp_path / "crash.sh"
    repro.write_text(CRASH_REPRO.format(data=DATA), encoding="utf-8")
    repro.chmod(0o755)
    env = env_for(tmp_path, CRASH_AT="5")
    crashed = subprocess.run([str(repro)], env={**env, "BISECTKIT_ACTION_LIMIT": "5",
                                                "BISECTKIT_ACTIONS": "-opt-bisect-limit=5"},
                             capture_output=True, text=True, timeout=60)
    assert crashed.returncode == 1 and "Stack dump:" in crashed.stderr, crashed.stderr
    data, printed = found(tmp_path, "--kind", "opt-bisect", "--", str(repro), env=env)
    assert data["first_bad"] == 7 and data["action"]["name"] == "EarlyCSEPass"
    at5 = [s for s in data["steps"] if s["limit"] == 5]
    assert at5 and at5[0]["verdict"] == "skip" and at5[0]["compiler_crashed"] is True
    assert "the compiler crashed under limit 5: skip, not bad" in data["notes"]
    assert "note: the compiler crashed under limit 5: skip, not bad" in printed


# -- outputs, interruption --------------------------------------------------------------------

def test_report_is_ready_to_paste_into_an_upstream_bug(tmp_path: Path) -> None:
    need(*MLIR)
    report = tmp_path / "bug.md"
    data, _ = found(tmp_path, "--kind", "mlir-counter", "--tag", "pass-execution",
                    "--report", str(report), "--", str(DATA / "ub_mlir.sh"))
    md = report.read_text(encoding="utf-8")
    assert md.startswith(f"# action #6 of 11 is the first bad action: ArithIntRangeOpts on "
                         f"builtin.module at {DATA / 'ub.mlir'}:0:0\n")
    assert "- kind: `mlir-counter:pass-execution`, 11 actions" in md
    assert "- limit 5 is good, limit 6 is bad" in md
    assert f"(bound {data['runs']['bound']})" in md
    good, bad = md.split("```sh\n", 1)[1].split("```", 1)[0].split("# bad\n")
    assert good == f"# good\n{data['replay']['good']}\n"
    assert bad == f"{data['replay']['bad']}\n"
    assert "pass-execution-count=5" in good and "pass-execution-count=6" in bad


SLOW_REPRO = """\
#!/bin/bash
# checked_add.sh; at a limit it then waits, with a child, to be interrupted.
"{data}/checked_add.sh" || exit $?
if [ "$BISECTKIT_ACTION_LIMIT" != -1 ]; then
  sleep 300 & echo $! > "{tmp}/child.pid"; echo $$ > "{tmp}/repro.pid"
  wait
fi
"""


def test_ctrl_c_during_a_run_exits_130_and_leaves_nothing_running(tmp_path: Path) -> None:
    need(*OPT["19"])
    repro = tmp_path / "slow.sh"
    repro.write_text(SLOW_REPRO.format(data=DATA, tmp=tmp_path), encoding="utf-8")
    repro.chmod(0o755)
    env = env_for(tmp_path)
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    proc = subprocess.Popen([*argv, "actions", "--kind", "opt-bisect", "--json",
                             str(tmp_path / "answer.json"), "--", str(repro)],
                            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    pids: list[int] = []
    try:
        wait_for(lambda: (tmp_path / "repro.pid").exists() or proc.poll() is not None, 60,
                 "the repro at a limit")
        assert proc.poll() is None, proc.communicate()
        wait_for(lambda: (tmp_path / "child.pid").read_text().strip(), 10, "the child")
        pids = [int((tmp_path / n).read_text()) for n in ("repro.pid", "child.pid")]
        os.kill(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches bisectkit itself
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out[-2000:], err)
    wait_for(lambda: not any(alive(p) for p in pids), 10, "the repro and its child to end")
    # The runs' action logs are removed; the JSON says the run stopped.
    assert list((tmp_path / "tmp").iterdir()) == []
    stopped = json.loads((tmp_path / "answer.json").read_text(encoding="utf-8"))
    assert stopped["status"] == "aborted" and stopped["strategy"] == "actions"


#: The real opt-19 enumerates checked_add's 169 passes; the verdict is a function of the
#: limit: good below 5, bad from 5 to 84, good again above, bad at the total. Two runs at
#: once land on both sides of the good-again region.
COMES_AND_GOES = """\
#!/bin/bash
opt-19 -S -passes='default<O2>' $BISECTKIT_ACTIONS "{data}/checked_add.ll" -o /dev/null || exit 125
n=$BISECTKIT_ACTION_LIMIT
if [ "$n" -lt 5 ] || {{ [ "$n" -gt 84 ] && [ "$n" -lt 169 ]; }}; then exit 0; fi
exit 1
"""


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_runs_at_once_that_contradict_each_other_are_reported_not_a_crash(
        tmp_path: Path, jobs: str) -> None:
    """With --jobs, a good limit above a bad one (or a bad below a good) can land while the
    bisection is under way: it is reported as non-monotone with the answer, never an
    internal error."""
    need(*OPT["19"])
    repro = tmp_path / "comes_and_goes.sh"
    repro.write_text(COMES_AND_GOES.format(data=DATA), encoding="utf-8")
    repro.chmod(0o755)
    data, printed = found(tmp_path, "--kind", "opt-bisect", "--jobs", jobs, "--",
                          str(repro))
    first = data["first_bad"]
    tested = {s["limit"]: s["verdict"] for s in data["steps"] if s["limit"] is not None}
    assert first in (5, 169) and tested[first] == "bad" and tested[first - 1] == "good"
    contradicting = [{"limit": n, "verdict": v} for n, v in sorted(tested.items())
                     if (v == "bad" and n < first) or (v == "good" and n >= first)]
    assert contradicting and data["non_monotone"] == contradicting
    for wrong in contradicting:
        assert f"non-monotone: limit {wrong['limit']} is {wrong['verdict']}" in printed


#: checked_add.sh, each run noting ``limit run/runs`` (``-p flaky`` sets the two).
COUNTED_REPRO = """\
#!/bin/bash
echo "$BISECTKIT_ACTION_LIMIT ${{BISECTKIT_RUN:-once}}/${{BISECTKIT_RUNS:-once}}" >> "{runs}"
exec "{data}/checked_add.sh"
"""


def test_a_plugin_that_runs_the_repro_itself_runs_each_limit(tmp_path: Path) -> None:
    """``-p flaky --repeat 2``: every limit is judged on two runs, as a step of ``run`` is;
    the enumerations run once (repeats would count every action twice)."""
    need(*OPT["19"])
    runs = tmp_path / "runs.txt"
    repro = tmp_path / "counted.sh"
    repro.write_text(COUNTED_REPRO.format(data=DATA, runs=runs), encoding="utf-8")
    repro.chmod(0o755)
    data, _ = found(tmp_path, "-p", "flaky", "--repeat", "2", "--kind", "opt-bisect", "--",
                    str(repro))
    assert (data["first_bad"], data["action"]["name"]) == (7, "EarlyCSEPass")
    seen = runs.read_text(encoding="utf-8").splitlines()
    limits = [s["limit"] for s in data["steps"] if s["limit"] is not None]
    assert sorted(seen) == sorted([*(f"{n} {i}/2" for n in limits for i in (1, 2)),
                                   *["-1 once/once"] * data["runs"]["enumeration"]])
    r = actions(tmp_path, "-p", "flaky", "--repeat", "2", "--jobs", "2", "--kind",
                "opt-bisect", "--", str(repro))
    assert_refused(r, 2, "plugin flaky runs the repro itself", "--jobs 1")
