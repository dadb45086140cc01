"""``bisectkit actions`` on IREE's real ``iree-compile`` (the ``iree`` extra): OptBisect
over its LLVM codegen, one process-wide counter across the dispatch and the ~65 linked
runtime functions, and its live LLVM debug counters.

The scenario: ``a*b + c`` with ``fastmath<contract>`` compiled for haswell. Fused into one
``vfmadd`` the result keeps 2^-24 (bad); a separate multiply rounds it away (good). Found
by hand and by sweeps (the issue's research): action #3465 of 5553, ``x86-isel`` on the
dispatch function, and inside it the DAG combine query ``dagcombine=7``. Each compile takes
~0.5 s, so the brute force here is the neighbourhood of the answer and the replays.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from worldgen import hermetic_env

DATA = Path(__file__).parent / "data" / "actions"
REPRO = DATA / "iree_fma.sh"
DISPATCH = "function (fmadd_dispatch_0_elementwise_4_f32)"


@pytest.fixture
def iree(tmp_path: Path) -> dict[str, str]:
    """The environment of a run (its own TMPDIR), once the tools and the CPU allow it."""
    missing = [t for t in ("iree-compile", "iree-run-module") if shutil.which(t) is None]
    if missing:
        why = f"{', '.join(missing)} not installed (pip install 'bisectkit[iree]')"
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the iree extra: {why}")
        pytest.skip(why)
    if " fma " not in Path("/proc/cpuinfo").read_text(errors="replace").replace("\n", " "):
        pytest.skip("the CPU has no FMA: the compiled module cannot run here")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {**hermetic_env(tmp_path / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(tmp)}


def actions(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    """``bisectkit actions --json FILE ARGS -- the repro``: exit code, JSON, output."""
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    out = tmp_path / "answer.json"
    r = subprocess.run([*argv, "actions", "--json", str(out), *args, "--", str(REPRO)],
                       cwd=tmp_path, env=env, text=True, capture_output=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    return r.returncode, json.loads(out.read_text()) if out.exists() else {}, \
        r.stdout + r.stderr


def verdict(env: dict[str, str], flags: str) -> int:
    """The repro's own exit status under ``$BISECTKIT_ACTIONS`` = ``flags``."""
    return subprocess.run([str(REPRO)], env={**env, "BISECTKIT_ACTIONS": flags,
                                             "BISECTKIT_ACTION_LOG": os.devnull},
                          capture_output=True, timeout=120).returncode


def test_the_pass_then_the_dag_combine_inside_it(iree: dict[str, str], tmp_path: Path
                                                ) -> None:
    """First level: x86-isel on the dispatch, #3465 of 5553 pass executions. The answer
    names the counter that pass queries most and prints the command that bisects its
    queries there; that command names ``dagcombine=7``, the 8th of the 58 queries
    instruction selection makes for the dispatch (the queries of every other pass, and
    those after, keep executing)."""
    code, first, said = actions(tmp_path, iree, "--kind", "opt-bisect")
    assert code == 0, said
    assert first["total"] == 5553
    assert first["first_bad"] == 3465
    assert (first["action"]["name"], first["action"]["unit"]) == ("x86-isel", DISPATCH)
    assert first["runs"]["limits"] <= first["runs"]["bound"] == 15
    # bisectkit owns the threading flag: one counter across all executables stays put.
    assert all(s["actions"].startswith("--mlir-disable-threading ")
               for s in first["steps"] if s["limit"] is not None)
    # The brute force around the answer, and the two replays as printed.
    assert [verdict(iree, f"--mlir-disable-threading -opt-bisect-limit={n}")
            for n in (3463, 3464, 3465, 3466)] == [0, 0, 1, 1]
    for replay, expected in ((first["replay"]["good"], 0), (first["replay"]["bad"], 1)):
        assert subprocess.run(["sh", "-c", replay], env={**iree, "BISECTKIT_ACTION_LOG":
                                                         os.devnull},
                              capture_output=True, timeout=120).returncode == expected

    assert first["counter_inside"] == {"name": "dagcombine", "queries": 58}
    command = first["second_level"]
    assert command == shlex.join(["bisectkit", "actions", "--kind", "llvm-counter:dagcombine",
                                  "--within", "3465", "--", str(REPRO)])
    assert f"  bisect inside it: {command}" in said.splitlines()
    words = shlex.split(command)
    code, second, said = actions(tmp_path, iree, *words[2:-2])
    assert code == 0, said
    assert (second["total"], second["first_bad"]) == (58, 8)
    assert second["within"]["number"] == 3465 and second["within"]["before"] == 0
    assert second["action"]["name"] == "dagcombine=7"
    assert second["action"]["pass"] == "x86-isel (#3465)"
    assert second["runs"]["limits"] <= second["runs"]["bound"]
    # The brute force around the answer: K queries of the pass executed, all others too.
    assert [verdict(iree, f"-opt-bisect-limit=3465 -debug-counter=dagcombine={chunks}")
            for chunks in ("0-5:58-999999999", "0-6:58-999999999", "0-7:58-999999999",
                           "0-8:58-999999999")] == [0, 0, 1, 1]


def test_a_counter_whose_every_skip_crashes_the_compiler_is_refused_at_its_ends(
        iree: dict[str, str], tmp_path: Path) -> None:
    """Skipping every DAG combine leaves nodes instruction selection cannot select: LLVM
    gives up (``LLVM ERROR: Cannot select``) and the repro says skip. Limit 0 is then no
    good end; the refusal says why, in one line."""
    code, answer, said = actions(tmp_path, iree, "--kind", "llvm-counter:dagcombine")
    assert code == 5, said
    assert answer["status"] == "aborted"
    line = said.strip().splitlines()[-1]
    assert "with no action run (limit 0) the repro says skip" in line
    assert "the compiler crashed: LLVM ERROR: Cannot select" in line
