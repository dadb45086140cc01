"""``-p iree_devices`` against the real IREE: its pip packages, compiler, runtime and wrappers.

Needs the ``iree`` extra (``pip install 'bisectkit[iree]'``: iree-base-compiler and
iree-base-runtime); without it every test here is skipped, saying so. A tiny module is
compiled once per session for llvm-cpu, cuda, vulkan-spirv and rocm, then run with the real
``iree-run-module`` and the real Python API on whatever devices this machine has. A run that
works must be left alone (the exit status says "good"); a run that fails must be recognised
as that driver's device or driver missing. So these tests pass with and without GPUs, and
never assert a device-missing message that the machine did not print.

The compiler is crashed for real: a deeply nested attribute overflows the stack of the MLIR
parser in the real ``iree-compile`` (SIGSEGV), and a SIGABRT is sent to the real binary while
it reads its input. Both times the pip console script, a Python wrapper, exits ``256 - N``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
from bisectkit_plugins import iree_devices
from helpers.worlds import SUBMODULE, World, cli, snapshot

from bisectkit import Outcome, Sha, Step

WHY = "IREE is not installed (pip install 'bisectkit[iree]')"
if os.environ.get("CI"):
    # CI installs the extra: a missing package there is a broken set-up, not a skip.
    importlib.import_module("iree.compiler")
    importlib.import_module("iree.runtime")
pytest.importorskip("iree.compiler", reason=WHY)
pytest.importorskip("iree.runtime", reason=WHY)

ADD_MLIR = """\
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
INPUTS = ("--function=add", "--input=4xf32=1,2,3,4", "--input=4xf32=1,1,1,1")
RESULT = "4xf32=2 3 4 5"

#: backend -> (iree-compile flags, --device for iree-run-module, the driver the plugin names)
TARGETS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "llvm-cpu": (("--iree-hal-target-device=local",
                  "--iree-hal-local-target-device-backends=llvm-cpu",
                  "--iree-llvmcpu-target-cpu=generic"), "local-task", "local-task"),
    "cuda": (("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"), "cuda", "cuda"),
    "vulkan-spirv": (("--iree-hal-target-device=vulkan",), "vulkan", "vulkan"),
    "rocm": (("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"), "hip", "hip"),
}

BANNER = ("Please report issues to https://github.com/iree-org/iree/issues and include the "
          "crash backtrace")
#: Nesting that overflows an 8 MiB stack in MLIR's recursive attribute parser.
DEPTH = 50_000
STACK = 8 << 20


def console_script(dist: str, tool: str) -> list[str]:
    """The pip-installed console script ``tool`` of ``dist`` (the Python wrapper users run)."""
    d = metadata.distribution(dist)
    for f in d.files or ():
        path = Path(str(d.locate_file(f)))
        if f.name in (tool, f"{tool}.exe") and f.parent.name in ("bin", "Scripts") \
                and os.access(path, os.X_OK):
            return [str(path)]
    # Installed without its scripts: run the entry point the script would run.
    ep = next(e for e in d.entry_points if e.group == "console_scripts" and e.name == tool)
    module, func = ep.value.split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {func}; sys.exit({func}())"]


@dataclass(frozen=True)
class Iree:
    compile: list[str]
    run_module: list[str]
    modules: dict[str, Path]
    deep: Path


def _small_stack() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    limit = STACK if hard == resource.RLIM_INFINITY else min(STACK, hard)
    resource.setrlimit(resource.RLIMIT_STACK, (limit, hard))


@pytest.fixture(scope="session")
def iree(tmp_path_factory: pytest.TempPathFactory) -> Iree:
    """The real tools, and the module compiled once for every backend (in parallel)."""
    where = tmp_path_factory.mktemp("iree")
    (where / "add.mlir").write_text(ADD_MLIR)
    compile_ = console_script("iree-base-compiler", "iree-compile")
    jobs = {b: subprocess.Popen([*compile_, str(where / "add.mlir"), *flags, "-o",
                                 str(where / f"{b}.vmfb")], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
            for b, (flags, _, _) in TARGETS.items()}
    for backend, job in jobs.items():
        out, _ = job.communicate(timeout=300)
        assert job.returncode == 0, f"iree-compile for {backend}:\n{out}"
    deep = where / "deep.mlir"
    deep.write_text("func.func @f() attributes {x = " + "[" * DEPTH + "]" * DEPTH
                    + "} { return }\n")
    return Iree(compile_, console_script("iree-base-runtime", "iree-run-module"),
                {b: where / f"{b}.vmfb" for b in TARGETS}, deep)


def run(argv: Sequence[str], stderr: int = subprocess.STDOUT,
        preexec_fn: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=stderr, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, preexec_fn=preexec_fn)


def classify(output: str, exit_status: int, *options: str) -> tuple[str | None, Step]:
    """The plugin's verdict on one real run, configured with ``options``."""
    parser = argparse.ArgumentParser()
    iree_devices.bisectkit_addoption(parser.add_argument_group("plugin options"))
    iree_devices.bisectkit_configure(SimpleNamespace(option=parser.parse_args(list(options))))
    step = Step(index=1, commit=Sha("c0ffee"), strategy="submodule")
    outcome = Outcome(exit_status=exit_status, signal=None, output=output, timed_out=False,
                      duration=1.0)
    try:
        return iree_devices.bisectkit_classify(step=step, outcome=outcome), step
    finally:
        iree_devices.bisectkit_configure(SimpleNamespace(option=parser.parse_args([])))


def assert_ran_or_device_missing(r: subprocess.CompletedProcess[str], driver: str,
                                 ran: str) -> None:
    """Good if it ran; if it failed, the failure must be recognised as ``driver`` missing."""
    verdict, step = classify(r.stdout, r.returncode)
    if r.returncode == 0:
        assert ran in r.stdout
        assert verdict is None and "iree" not in step.extra  # the exit status says good
        return
    assert verdict == "good", f"not recognised (exit {r.returncode}):\n{r.stdout}"
    record = step.extra["iree"]
    assert (record["kind"], record["driver"]) == ("device", driver), r.stdout
    assert step.reason and step.reason.startswith(f"exit {r.returncode}, {driver} ")
    # --have-driver: the same failure on a machine that should have it is a broken machine.
    verdict, step = classify(r.stdout, r.returncode, "--have-driver", driver)
    assert verdict == "skip" and step.flags == [f"{driver} missing on a machine that should "
                                                "have it"]


# -- iree-run-module -------------------------------------------------------------------
@pytest.mark.parametrize("backend", TARGETS)
def test_iree_run_module(iree: Iree, backend: str):
    _, device, driver = TARGETS[backend]
    r = run([*iree.run_module, f"--device={device}", f"--module={iree.modules[backend]}",
             *INPUTS])
    assert_ran_or_device_missing(r, driver, RESULT)


def test_iree_run_module_unknown_driver_is_skip(iree: Iree):
    r = run([*iree.run_module, "--device=nosuch", f"--module={iree.modules['llvm-cpu']}",
             *INPUTS])
    assert r.returncode == 1, r.stdout
    verdict, step = classify(r.stdout, r.returncode)
    assert verdict == "skip", r.stdout
    assert step.reason == ("exit 1, unknown driver name 'nosuch' (IREE has no such driver; a "
                           "typo in --device?): \"no driver 'nosuch' registered\" -> skip")
    assert step.extra["iree"]["kind"] == "unknown-driver"


# -- the Python API ----------------------------------------------------------------------
PY_API = """\
import sys
import numpy as np
import iree.runtime as rt

api, device, path = sys.argv[1:]
if api == "get_device":
    config = rt.Config(device=rt.get_device(device))
    vm_module = rt.VmModule.mmap(config.vm_instance, path)
    module = rt.load_vm_module(vm_module, config)
else:
    module = rt.load_vm_flatbuffer_file(path, driver=device)
a = np.array([1, 2, 3, 4], np.float32)
print("result", module.add(a, np.ones(4, np.float32)).to_host())
"""


@pytest.mark.parametrize("api", ["get_device", "load_vm_flatbuffer_file"])
@pytest.mark.parametrize("backend", ["cuda", "vulkan-spirv", "rocm"])
def test_python_api(iree: Iree, backend: str, api: str):
    _, device, driver = TARGETS[backend]
    r = run([sys.executable, "-c", PY_API, api, device, str(iree.modules[backend])])
    assert_ran_or_device_missing(r, driver, "result [2. 3. 4. 5.]")


# -- the compiler crashes, through its pip wrapper ------------------------------------------
def test_compiler_segfault_through_the_wrapper(iree: Iree):
    """Stack overflow in the real parser: the wrapper exits 256 - SIGSEGV."""
    r = run([*iree.compile, str(iree.deep), "-o", os.devnull], preexec_fn=_small_stack)
    assert r.returncode == 256 - signal.SIGSEGV, r.stdout[-2000:]
    assert f"{BANNER}.\nStack dump:\n" in r.stdout
    verdict, step = classify(r.stdout, r.returncode)
    assert (verdict, step.reason) == (
        "bad", f"exit 245 (SIGSEGV via a Python wrapper), crash: '{BANNER}' -> bad")
    assert step.extra["iree"] == {"kind": "crash", "driver": None, "match": f"{BANNER}.",
                                  "code": None, "signal": "SIGSEGV"}

    # stderr discarded: only the exit status is left, and it still says SIGSEGV.
    r = run([*iree.compile, str(iree.deep), "-o", os.devnull], stderr=subprocess.DEVNULL,
            preexec_fn=_small_stack)
    assert (r.returncode, r.stdout) == (245, "")
    verdict, step = classify(r.stdout, r.returncode)
    assert (verdict, step.reason) == ("bad", "exit 245 (SIGSEGV via a Python wrapper), crash "
                                             "-> bad")


def _child_of(pid: int, timeout: float = 60) -> int:
    """The process the wrapper ``pid`` started (the real compiler binary)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ps = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True,
                            text=True, check=True).stdout
        children = [int(p) for p, pp in (line.split() for line in ps.splitlines())
                    if int(pp) == pid]
        if children:
            return children[0]
        time.sleep(0.05)
    raise AssertionError(f"iree-compile wrapper {pid} started no compiler")


@pytest.mark.parametrize("discard_stderr", [False, True])
def test_compiler_abort_through_the_wrapper(iree: Iree, discard_stderr: bool):
    """SIGABRT to the real binary while it reads its input: the wrapper exits 256 - SIGABRT."""
    wrapper = subprocess.Popen(
        [*iree.compile, "-", "-o", os.devnull], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if discard_stderr else subprocess.STDOUT)
    assert wrapper.stdin and wrapper.stdout
    compiler = _child_of(wrapper.pid)
    # More than a pipe holds: once written, the compiler is reading its input, so its crash
    # handlers are installed. It then waits for the end of the input that never comes.
    wrapper.stdin.write(b"// " + b"x" * (1 << 20) + b"\n")
    wrapper.stdin.flush()
    os.kill(compiler, signal.SIGABRT)
    output = wrapper.stdout.read().decode()
    wrapper.stdin.close()
    assert wrapper.wait(timeout=60) == 256 - signal.SIGABRT, output
    verdict, step = classify(output, wrapper.returncode)
    if discard_stderr:
        assert output == ""
        assert step.reason == "exit 250 (SIGABRT via a Python wrapper), crash -> bad"
    else:
        assert f"{BANNER}.\nStack dump:\n" in output
        assert step.reason == f"exit 250 (SIGABRT via a Python wrapper), crash: '{BANNER}' -> bad"
    assert verdict == "bad"


# -- end to end, through the real CLI ------------------------------------------------------
def write_repro(world: World, iree: Iree, discard_stderr: bool = False) -> Path:
    """Runs the cuda module; where lib/bug.txt says "miscompile" the real compiler crashes."""
    quiet = " 2>/dev/null" if discard_stderr else ""
    script = world.root / "iree_repro.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"ulimit -s {STACK >> 10} 2>/dev/null\n"
        "if grep -q miscompile third_party/llvm-project/lib/bug.txt; then\n"
        f"  exec {' '.join(iree.compile)} {iree.deep} -o /dev/null{quiet}\n"
        "fi\n"
        f"exec {' '.join(iree.run_module)} --device=cuda --module={iree.modules['cuda']} "
        f"{' '.join(INPUTS)}\n")
    script.chmod(0o755)
    return script


def bisect(world: World, repro: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                          dict | None]:
    out = world.root / "result.json"
    out.unlink(missing_ok=True)
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(190), "--bad", world.sha(210), "--build", "./build.sh",
            "--json", str(out), *extra, "--", str(repro), timeout=300)
    return r, json.loads(out.read_text()) if out.exists() else None


@pytest.mark.parametrize("discard_stderr", [False, True])
def test_bisect_with_the_real_runtime_and_a_crashing_compiler(world: World, iree: Iree,
                                                              discard_stderr: bool):
    repro = write_repro(world, iree, discard_stderr)
    before = snapshot(world)
    if discard_stderr:
        # Without the plugin, exit 245 is no verdict: the run aborts at its first bad step.
        r, result = bisect(world, repro)
        assert r.returncode == 3, r.stderr + r.stdout
        assert result is not None and result["status"] == "aborted"
        assert snapshot(world) == before

    r, result = bisect(world, repro, "-p", "iree_devices")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    assert result is not None
    steps = [(world.shas.index(s["commit"]), s) for s in result["steps"]]
    assert any(n < 200 for n, _ in steps) and any(n >= 200 for n, _ in steps)
    for n, s in steps:
        if n >= 200:
            assert s["verdict"] == "bad"
            crash = "" if discard_stderr else f": '{BANNER}'"
            assert s["reason"] == f"exit 245 (SIGSEGV via a Python wrapper), crash{crash} -> bad"
        elif s["reason"] == "exit 0":  # this machine has a working CUDA GPU
            assert s["verdict"] == "good" and "iree" not in s
        else:  # no NVIDIA driver or no GPU: recognised, and a good compiler is not blamed
            assert s["verdict"] == "good"
            assert s["reason"].startswith("exit 1, cuda "), s["reason"]
            assert s["iree"]["kind"] == "device" and s["iree"]["driver"] == "cuda"
    assert snapshot(world) == before
