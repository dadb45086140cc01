"""The bundled ``iree_devices`` plugin: crashes are bad, missing GPUs are good (or skip).

End-to-end through the real CLI on real git worlds (first bad = upstream 200),
then the pattern tables in-process on the messages the plugin's docstring cites.
"""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from bisectkit_plugins import iree_devices
from helpers.worlds import SUBMODULE, World, cli, snapshot

from bisectkit import Outcome, Sha, Step

BANNER = ("PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ "
          "and include the crash backtrace")
CRASH = (f"echo '{BANNER}.'\n"
         "echo 'Stack dump:'\n"
         "printf '0.\\tProgram arguments: iree-compile model.mlir "
         "--iree-hal-target-device=cuda -o model.vmfb\\n'\n")
CUDA_MSG = "CUDA runtime library not available; ensure installed and on path"
CUDA_LINE = f"iree/runtime/src/iree/hal/drivers/cuda/dynamic_symbols.c:54: UNAVAILABLE; {CUDA_MSG}"
LEGALIZE = ("model.mlir:3:8: error: failed to legalize operation 'arith.addf' "
            "that was explicitly marked illegal")
WORLD_LINE = "iree-run-module: RESOURCE_EXHAUSTED; HAL device 'vulkan' not found"

# First lines as IREE 3.13's iree-run-module / iree.runtime print them on a machine without
# an NVIDIA driver, a Vulkan loader or ROCm (recorded; tests/test_iree_real.py reproduces them
# with the real packages).
REAL_CUDA = ("c/runtime/src/iree/hal/drivers/cuda/cuda_dynamic_symbols.c:66: UNAVAILABLE; CUDA "
             "driver library 'libcuda.so'/'nvcuda.dll' not available; please ensure installed and "
             "in dynamic library search path; creating driver for device 'cuda'; resolving "
             "dependencies for 'module'; creating VM context; creating run context")
REAL_VULKAN = ("c/runtime/src/iree/hal/drivers/vulkan/util/libvulkan.c:641: NOT_FOUND; Vulkan "
               "loader library not found; ensure it is installed and on a valid search path (or "
               "specified with IREE_HAL_VULKAN_LIBVULKAN_PATH):")
REAL_HIP = ("c/runtime/src/iree/hal/drivers/hip/dynamic_symbols.c:155: UNAVAILABLE; HIP runtime "
            "library 'amdhip64.dll'/'libamdhip64.so' not available: please ensure installed and "
            "in dynamic library search path:")
REAL_NOSUCH = ("c/runtime/src/iree/hal/driver_registry.c:319: NOT_FOUND; no driver 'nosuch' "
               "registered; creating driver for device 'nosuch'; resolving dependencies for "
               "'module'; creating VM context; creating run context")


def write_repro(tmp_path: Path, on_bad: str) -> Path:
    """Exits 1 with a missing-CUDA error on good commits; runs ``on_bad`` on bad ones."""
    script = tmp_path / "iree_repro.sh"
    script.write_text("#!/bin/sh\n"
                      "if grep -q miscompile third_party/llvm-project/lib/bug.txt; then\n"
                      f"{on_bad}"
                      "fi\n"
                      f"echo '{CUDA_LINE}'\n"
                      "exit 1\n")
    script.chmod(0o755)
    return script


def bisect(world: World, tmp_path: Path, repro: Path | str, *extra: str, good: int = 190,
           bad: int = 210):
    """``bisectkit run`` over upstream good..bad (a narrow range: every step costs a build)."""
    out = tmp_path / "result.json"
    out.unlink(missing_ok=True)
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(good), "--bad", world.sha(bad), "--build", "./build.sh",
            "--json", str(out), *extra, "--", str(repro))
    return r, json.loads(out.read_text()) if out.exists() else None


def n_of(world: World, step: dict) -> int:
    return world.shas.index(step["commit"])


def split(world: World, steps: list[dict]) -> tuple[list[dict], list[dict]]:
    """Steps below the culprit (runtime only) and from it on (the compiler is broken)."""
    below = [s for s in steps if n_of(world, s) < 200]
    above = [s for s in steps if n_of(world, s) >= 200]
    assert below and above, steps
    return below, above


CRASH_RECORD = {"kind": "crash", "driver": None, "match": f"{BANNER}.", "code": None}
CUDA_RECORD = {"kind": "device", "driver": "cuda", "match": CUDA_LINE, "code": "UNAVAILABLE"}


# -- end to end ----------------------------------------------------------------------
def test_without_the_plugin_everything_is_bad_with_it_the_culprit(world: World,
                                                                   tmp_path: Path):
    repro = write_repro(tmp_path, CRASH + "exit 1\n")
    before = snapshot(world)
    r, result = bisect(world, tmp_path, repro)
    # Everything exits 1, so everything is "bad": the answer would be the first
    # candidate, so the good end it rests on is tested, fails too: nothing is named.
    assert r.returncode == 5, r.stderr
    assert f"the good end {world.sha(190)[:12]} does not test good" in r.stderr
    assert "is the first bad commit" not in r.stdout
    assert all(s["verdict"] == "bad" and "iree" not in s for s in result["steps"])

    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    below, above = split(world, result["steps"])
    for s in below:
        assert s["verdict"] == "good"
        assert s["reason"] == f"exit 1, cuda driver missing: '{CUDA_MSG}' -> good"
        assert s["iree"] == CUDA_RECORD
    for s in above:
        assert s["verdict"] == "bad"
        assert s["reason"] == f"exit 1, crash: '{BANNER}' -> bad"
        assert s["iree"] == CRASH_RECORD
    assert snapshot(world) == before


def test_world_repro_vulkan_device_missing_is_good(world: World, tmp_path: Path):
    r, result = bisect(world, tmp_path, "./repro.sh", "-p", "iree_devices")
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    below, above = split(world, result["steps"])
    for s in below:
        assert s["reason"] == ("exit 1, vulkan device missing: \"HAL device 'vulkan' not found\""
                               " -> good")
        assert s["iree"] == {"kind": "device", "driver": "vulkan", "match": WORLD_LINE,
                             "code": "RESOURCE_EXHAUSTED"}
    # "miscompiled" is neither a crash nor a device error: the exit status decides.
    assert all(s["verdict"] == "bad" and s["reason"] == "exit 1" and "iree" not in s
               for s in above)


INCONCLUSIVE = "There are only 'skip'ped commits left to test."


def assert_skipped_below(world: World, r, result: dict, reason_end: str) -> list[dict]:
    """Range 195..205 with every commit below 200 skipped: only 196..200 are left."""
    assert r.returncode == 1, r.stderr + r.stdout
    assert INCONCLUSIVE in r.stdout
    assert result["status"] == "inconclusive"
    assert result["first_bad"] is None
    assert result["candidates"] == [world.sha(n) for n in range(196, 201)]
    below, above = split(world, result["steps"])
    assert sorted(n_of(world, s) for s in below) == list(range(196, 200))
    for s in below:
        assert s["verdict"] == "skip"
        assert s["reason"].endswith(reason_end), s["reason"]
    assert all(s["verdict"] == "bad" for s in above)
    return below


def test_device_errors_skip(world: World, tmp_path: Path):
    repro = write_repro(tmp_path, CRASH + "exit 1\n")
    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices", "--device-errors", "skip",
                       good=195, bad=205)
    below = assert_skipped_below(world, r, result, "-> skip (--device-errors skip)")
    for s in below:
        assert s["reason"] == (f"exit 1, cuda driver missing: '{CUDA_MSG}' -> skip "
                               "(--device-errors skip)")
        assert s["iree"] == CUDA_RECORD
        assert "flags" not in s


def test_have_driver_means_the_machine_is_broken(world: World, tmp_path: Path):
    repro = write_repro(tmp_path, CRASH + "exit 1\n")
    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices", "--have-driver", "cuda",
                       "--max-env-skips", "0", good=195, bad=205)
    below = assert_skipped_below(world, r, result,
                                 "but this machine should have cuda (--have-driver cuda) -> skip")
    for s in below:
        assert s["reason"] == (f"exit 1, cuda driver missing: '{CUDA_MSG}', but this machine "
                               "should have cuda (--have-driver cuda) -> skip")
        assert s["iree"] == CUDA_RECORD
        assert s["flags"] == ["cuda missing on a machine that should have it"]
    assert "cuda missing on a machine that should have it" in r.stdout  # the final report


def test_a_machine_without_the_driver_it_should_have_stops_the_run(world: World,
                                                                   tmp_path: Path):
    """The circuit breaker: 3 steps in a row skipped for a broken machine stop the run."""
    repro = write_repro(tmp_path, f"echo '{CUDA_LINE}'\nexit 1\n")
    before = snapshot(world)
    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices", "--have-driver", "cuda",
                       good=100, bad=170)
    assert r.returncode == 3, r.stderr + r.stdout
    assert "stopped after 3 consecutive steps skipped for the machine" in r.stderr
    assert "this machine should have cuda" in r.stderr
    assert [s["environment"] for s in result["steps"]] == ["cuda missing"] * 3
    assert snapshot(world) == before


def test_a_crash_that_exits_0_is_still_bad(world: World, tmp_path: Path):
    repro = write_repro(tmp_path, CRASH + "exit 0\n")
    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices")
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    below, above = split(world, result["steps"])
    assert all(s["verdict"] == "good" for s in below)
    for s in above:
        assert (s["verdict"], s["reason"]) == ("bad", f"exit 0, crash: '{BANNER}' -> bad")
        assert s["iree"] == CRASH_RECORD


def test_a_segfault_is_bad_instead_of_aborting(world: World, tmp_path: Path):
    repro = write_repro(tmp_path, "echo 'Stack dump:'\nulimit -c 0\nkill -SEGV $$\n")
    before = snapshot(world)
    # The first candidate tested (200) is bad: it segfaults.
    r, result = bisect(world, tmp_path, repro)
    assert r.returncode == 3, r.stderr + r.stdout
    assert "killed by SIGSEGV" in r.stderr
    assert result["status"] == "aborted"
    assert [n_of(world, s) for s in result["steps"]] == []
    assert snapshot(world) == before

    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    below, above = split(world, result["steps"])
    assert all(s["verdict"] == "good" for s in below)
    for s in above:
        assert s["verdict"] == "bad"
        assert s["reason"] == "killed by SIGSEGV, crash: 'Stack dump:' -> bad"
        assert s["iree"] == {"kind": "crash", "driver": None, "match": "Stack dump:", "code": None,
                             "signal": "SIGSEGV"}
    assert snapshot(world) == before


def test_failed_to_legalize_is_left_to_the_exit_status(world: World, tmp_path: Path):
    repro = write_repro(tmp_path, f"echo \"{LEGALIZE}\"\nexit 1\n")
    r, result = bisect(world, tmp_path, repro, "-p", "iree_devices")
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    below, above = split(world, result["steps"])
    assert all(s["iree"] == CUDA_RECORD for s in below)
    for s in above:
        assert (s["verdict"], s["reason"]) == ("bad", "exit 1")
        assert "iree" not in s


def test_flaky_loaded_first_still_combines_the_runs(world: World, tmp_path: Path):
    """``-p flaky -p iree_devices``: we classify each run, flaky combines them."""
    pytest.importorskip("bisectkit_plugins.flaky")
    repro = write_repro(tmp_path, CRASH + "exit 1\n")
    r, result = bisect(world, tmp_path, repro, "-p", "flaky", "-p", "iree_devices",
                       "--repeat", "2")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    below, above = split(world, result["steps"])
    for s in below:
        assert s["runs"]["good"] == 2 and s["iree"] == CUDA_RECORD
    for s in above:
        assert s["runs"]["bad"] == 2 and s["iree"] == CRASH_RECORD


# -- the pattern tables, in-process ----------------------------------------------------
DEVICE_SAMPLES = [
    # (line as printed, driver, status code)
    (REAL_CUDA, "cuda", "UNAVAILABLE"),
    (REAL_VULKAN, "vulkan", "NOT_FOUND"),
    (REAL_HIP, "hip", "UNAVAILABLE"),
    (f"RuntimeError: Error creating driver: {REAL_CUDA.split('; creating')[0]}", "cuda",
     "UNAVAILABLE"),
    (f"ValueError: Error creating driver: {REAL_VULKAN}", "vulkan", "NOT_FOUND"),
    ("ValueError: No device found from list ['vulkan']", "vulkan", None),
    ("ValueError: No device found from list ['nothere1', 'cuda']", "cuda", None),
    # Fallbacks: the wrapped status is not one of ours; the driver is read from its path.
    ("RuntimeError: Error creating driver: c/runtime/src/iree/hal/drivers/amdgpu/driver.c:99: "
     "INTERNAL; topology query failed", "amdgpu", None),
    ("RuntimeError: Could not create device. Exception for last tried follows.", None, None),
    ("c/runtime/src/iree/hal/drivers/cuda/cuda_driver.c:87: FAILED_PRECONDITION; CUDA error "
     "'CUDA_ERROR_NO_DEVICE' (100): no CUDA-capable device is detected; cuInit", "cuda",
     "FAILED_PRECONDITION"),
    ("FAILED_PRECONDITION; CUDA error 'CUDA_ERROR_STUB_LIBRARY' (34): CUDA driver is a stub "
     "library", "cuda", "FAILED_PRECONDITION"),
    ("FAILED_PRECONDITION; CUDA error 'CUDA_ERROR_INVALID_DEVICE' (101): invalid device ordinal",
     "cuda", "FAILED_PRECONDITION"),
    ("c/runtime/src/iree/hal/drivers/hip/hip_driver.c:611: NOT_FOUND; device 3 not found (of 1 "
     "enumerated)", "hip", "NOT_FOUND"),
    ("NOT_FOUND; HIP device with UUID GPU-0f9a3c1e-7d22-4b1e-9a55-1c2d3e4f5a6b not found", "hip",
     "NOT_FOUND"),
    ("OUT_OF_RANGE; Vulkan device id 3 out of range; driver has 1 devices", "vulkan",
     "OUT_OF_RANGE"),
    ("NOT_FOUND; Vulkan device id 2 not found", "vulkan", "NOT_FOUND"),
    ("NOT_FOUND; Vulkan device path 'GPU-1234' not found", "vulkan", "NOT_FOUND"),
    ("UNAVAILABLE; Vulkan physical device 0 does not satisfy the Vulkan 1.3 baseline", "vulkan",
     "UNAVAILABLE"),
    ("c/runtime/src/iree/hal/drivers/amdgpu/util/libhsa.c:412: NOT_FOUND; HSA/ROCR-Runtime "
     "library not found; ensure it is installed and on a valid search path (or specified with "
     "IREE_HAL_AMDGPU_LIBHSA_PATH):", "amdgpu", "NOT_FOUND"),
    ("UNAVAILABLE; HSA runtime library 'libhsa-runtime64.dll'/'libhsa-runtime64.so' not "
     "available;please ensure installed and in dynamic library search path", "hsa",
     "UNAVAILABLE"),
    (CUDA_LINE, "cuda", "UNAVAILABLE"),
    (WORLD_LINE, "vulkan", "RESOURCE_EXHAUSTED"),
    ("iree-run-module: iree/runtime/src/iree/hal/driver_registry.c:223: NOT_FOUND; "
     "no driver 'metal' registered", "metal", "NOT_FOUND"),
    ("iree/runtime/src/iree/hal/drivers/cuda/registration/driver_module.c:60: UNAVAILABLE; "
     "no driver 'cuda' is provided by this factory", "cuda", "UNAVAILABLE"),
    ("ValueError: <vm>:0: NOT_FOUND; HAL device `__device_0` not found or unavailable: "
     "#hal.device.target<\"hip\", {legacy_sync}, [#hal.executable.target<\"rocm\", "
     "\"rocm-hsaco-fb\", {}>]>; ", "hip", "NOT_FOUND"),
    ("<vm>:0: INCOMPATIBLE; HAL device `__device_0` not found or unavailable: "
     "#hal.device.target<\"local\", [#hal.executable.target<\"llvm-cpu\", "
     "\"embedded-elf-x86_64\">]>",
     "local-task/local-sync", "INCOMPATIBLE"),
    ("error: HAL device \"cuda\" not found or unavailable", "cuda", None),
    ("<vm>:0: UNKNOWN; device not supported in the compiled configuration;", None, "UNKNOWN"),
    ("RuntimeError: Could not create any requested driver ['vmvx'] (available=['local-sync', "
     "'local-task']) : {}", "local-task/local-sync", None),
    ("iree/runtime/src/iree/hal/drivers/hip/hip_driver.c:512: NOT_FOUND; "
     "default device 1 not found (of 1 enumerated)", "hip", "NOT_FOUND"),
    ("iree/runtime/src/iree/hal/drivers/cuda/dynamic_symbols.c:80: UNAVAILABLE; "
     "NCCL runtime library (2.18.1) not available", "cuda", "UNAVAILABLE"),
    ("cuda_driver.c:301: UNAVAILABLE; no compatible CUDA devices were found", "cuda",
     "UNAVAILABLE"),
    ("cuda_driver.c:410: NOT_FOUND; CUDA device with UUID GPU-0f9a3c1e-7d22-4b1e-9a55-"
     "1c2d3e4f5a6b not found", "cuda", "NOT_FOUND"),
    ("status_util.c:31: UNAVAILABLE; CUDA driver error 'CUDA_ERROR_NO_DEVICE' (100): "
     "no CUDA-capable device is detected; cuInit", "cuda", "UNAVAILABLE"),
    ("status_util.c:31: INTERNAL; CUDA driver error 'CUDA_ERROR_NOT_INITIALIZED' (3): "
     "initialization error", "cuda", "INTERNAL"),
    ("CUDA driver error 'CUDA_ERROR_INSUFFICIENT_DRIVER' (35): CUDA driver version is "
     "insufficient for CUDA runtime version", "cuda", None),
    ("CUDA driver error 'CUDA_ERROR_SYSTEM_DRIVER_MISMATCH' (803): system has unsupported "
     "display driver / cuda driver combination", "cuda", None),
    ("dynamic_symbols.c:155: UNAVAILABLE; HIP runtime library 'amdhip64.dll'/'libamdhip64.so' "
     "not available: please ensure installed and in dynamic library search path", "hip",
     "UNAVAILABLE"),
    ("dynamic_symbols.c:70: UNAVAILABLE; ROCM/HIP runtime library not available; "
     "ensure installed and on path", "hip", "UNAVAILABLE"),
    ("hip_driver.c:380: UNAVAILABLE; no compatible HIP devices were found", "hip", "UNAVAILABLE"),
    ("HIP driver error 'hipErrorNoDevice' (100): no ROCm-capable device is detected", "hip", None),
    ("HIP driver error 'hipErrorInsufficientDriver' (35): driver version is insufficient",
     "hip", None),
    ("HIP driver error 'hipErrorNotInitialized' (3): initialization error", "hip", None),
    ("HIP driver error 'hipErrorInitializationError' (3): initialization error", "hip", None),
    ("HIP driver error 'hipErrorInvalidDevice' (101): invalid device ordinal", "hip", None),
    ("dynamic_symbols.cc:102: UNAVAILABLE; Vulkan runtime library not available; "
     "ensure installed and on path", "vulkan", "UNAVAILABLE"),
    ("UNAVAILABLE; required method vkGetInstanceProcAddr not found in provided Vulkan library "
     "(did you pick the wrong file?)", "vulkan", "UNAVAILABLE"),
    ("UNAVAILABLE; Required method vkGetInstanceProcAddr not found in provided Vulkan library",
     "vulkan", "UNAVAILABLE"),
    ("UNAVAILABLE; mandatory Vulkan function vkCreateInstance not available; "
     "invalid loader/ICD?", "vulkan", "UNAVAILABLE"),
    ("Unable to open libvulkan.so; driver not installed/on LD_LIBRARY_PATH", "vulkan", None),
    ("iree/runtime/src/iree/hal/drivers/vulkan/vulkan_driver.cc:546: NOT_FOUND; physical "
     "device 0 invalid; 1 physical devices available; 0 visible; creating device 'vulkan'",
     "vulkan", "NOT_FOUND"),
    ("physical_device_selection.c:88: NOT_FOUND; Vulkan driver has no physical devices",
     "vulkan", "NOT_FOUND"),
    ("UNAVAILABLE; no Vulkan physical device satisfies the Vulkan 1.3 baseline", "vulkan",
     "UNAVAILABLE"),
    ("vulkan_driver.cc:212: UNAVAILABLE; VK_ERROR_INCOMPATIBLE_DRIVER; vkCreateInstance",
     "vulkan", "UNAVAILABLE"),
    ("vulkan_driver.cc:212: INTERNAL; VK_ERROR_INITIALIZATION_FAILED; vkCreateInstance",
     "vulkan", "INTERNAL"),
    ("metal_driver.m:120: NOT_FOUND; 1 devices enumerated; device #2 not found", "metal",
     "NOT_FOUND"),
    ("NOT_FOUND; Metal device with device registry ID 00000001000004a2 not found", "metal",
     "NOT_FOUND"),
    ("UNAVAILABLE; LevelZero runtime library not available; ensure installed and on path",
     "level_zero", "UNAVAILABLE"),
]

CRASH_SAMPLES = [
    f"{BANNER}.",
    "Please report issues to https://github.com/iree-org/iree/issues and include the crash "
    "backtrace.",
    "Stack dump:",
    "0.\tProgram arguments: iree-compile model.mlir -o model.vmfb",
    "0.      Program arguments: iree-compile model.mlir -o model.vmfb",
    "LLVM ERROR: Cannot select: 0x5581 t5: i32 = fshl t2, t3, t4",
    "UNREACHABLE executed at llvm/lib/CodeGen/SelectionDAG/DAGCombiner.cpp:1234!",
    "iree-compile: llvm/include/llvm/Support/Casting.h:566: decltype(auto) llvm::cast(From *) "
    "[To = mlir::ShapedType, From = mlir::Type]: Assertion `isa<To>(Val) && \"cast<Ty>() "
    "argument of incompatible type!\"' failed.",
    "iree-run-module: iree/runtime/src/iree/task/task.c:107: void iree_task_discard(iree_task_t "
    "*, iree_task_list_t *): Assertion `((0)==(pending))' failed.",
    "Assertion failed: !empty() && \"empty range\", file llvm/ADT/ArrayRef.h, line 168",
    "Segmentation fault (core dumped)",
    "Aborted (core dumped)",
    "Aborted",
    "./compile.sh: line 25: 1203771 Segmentation fault      (core dumped) iree-compile x.mlir",
    "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010",
    "SUMMARY: AddressSanitizer: heap-use-after-free Operation.cpp:52 in mlir::Operation::erase()",
    "WARNING: ThreadSanitizer: data race (pid=4242)",
    "llvm/include/llvm/ADT/APInt.h:1500:12: runtime error: shift exponent 64 is too large",
]

NEAR_MISSES = [
    LEGALIZE,
    "error: 'func.func' op miscompiled: wrong result 41 != 42",
    "<vm>:0: UNAVAILABLE; none of the executable binaries in the module are supported by the "
    "runtime;",
    "status_util.c:31: RESOURCE_EXHAUSTED; CUDA driver error 'CUDA_ERROR_OUT_OF_MEMORY' (2): "
    "out of memory",
    "HIP driver error 'hipErrorOutOfMemory' (2): out of memory",
    "EXEC @abs: no CUDA devices needed for this test",
    "RESOURCE_EXHAUSTED; HAL device ran out of memory",
    "no driver registered for this platform",
    "physical device 0 selected; 1 physical devices available",
    "stack dump: written to crash.txt",
    "The stack dump: see above",
    "grep 'LLVM ERROR: ' build.log",
    "note: Segmentation fault handling is documented in SIGNALS.md",
    "Test run Aborted by the user",
    "Assertion `x' failed in a previous run, see log",
    "==4242==WARNING: AddressSanitizer failed to allocate 0x10 bytes",
    "error: unregistered device alias \"llvm-cpu\"; ensure it is linked into the compiler",
    "CUDA error 'CUDA_ERROR_OUT_OF_MEMORY' (2): out of memory",
    "Error creating driver profile: database unavailable",
    "console.error('Error creating driver:', error)",
]


@pytest.mark.parametrize("line, driver, code", DEVICE_SAMPLES)
def test_device_messages_are_recognised_with_their_driver(line: str, driver: str | None,
                                                          code: str | None):
    finding = iree_devices.find(f"EXEC @main\n{line}\nsome other output\n")
    assert finding is not None, line
    assert (finding.kind, finding.driver, finding.code) == ("device", driver, code)
    assert finding.match == line.strip()
    assert finding.message and finding.message in line


@pytest.mark.parametrize("line", CRASH_SAMPLES)
def test_crash_signatures_are_recognised(line: str):
    finding = iree_devices.find(f"[1/3] compiling\n{line}\n #0 0x00005581 llvm::foo()\n")
    assert finding is not None, line
    assert (finding.kind, finding.driver, finding.match) == ("crash", None, line)


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_misses_are_not_recognised(line: str):
    assert iree_devices.find(f"{line}\n") is None


def test_crash_beats_a_device_error_printed_first():
    text = f"{CUDA_LINE}\nLLVM ERROR: out of memory\n"
    finding = iree_devices.find(text)
    assert finding is not None
    assert (finding.kind, finding.match) == ("crash", "LLVM ERROR: out of memory")


def test_a_specific_message_beats_a_fallback_before_it():
    """``Error creating driver: <status>``: the status names the driver better."""
    finding = iree_devices.find(f"RuntimeError: Error creating driver: {REAL_HIP}\n")
    assert finding is not None
    assert (finding.driver, finding.message) == (
        "hip", "HIP runtime library 'amdhip64.dll'/'libamdhip64.so' not available")


@pytest.mark.parametrize("line, names", [
    (REAL_NOSUCH, "nosuch"),
    ("ValueError: Error creating driver: c/runtime/src/iree/hal/driver_registry.c:319: "
     "NOT_FOUND; no driver 'nosuch' registered", "nosuch"),
    ("ValueError: No device found from list ['nothere1', 'nothere2']", "nothere1/nothere2"),
    ("RuntimeError: Could not create any requested driver ['cdua'] (available=['cuda', "
     "'local-sync', 'local-task']) : {}", "cdua"),
])
def test_driver_names_iree_does_not_have_are_not_missing_devices(line: str, names: str):
    finding = iree_devices.find(f"{line}\n")
    assert finding is not None
    assert (finding.kind, finding.driver, finding.match) == ("unknown-driver", names, line)
    # A driver IREE has but this runtime was built without is a missing driver, as before.
    metal = iree_devices.find(line.replace(names.split("/")[0], "metal"))
    assert metal is not None and (metal.kind, metal.driver) == ("device", "metal")
    # Drivers from outside IREE count as known once named with --have-driver.
    assert iree_devices.find(line, known=names.split("/")).kind == "device"


def test_the_first_device_error_wins():
    text = f"{WORLD_LINE}\n{CUDA_LINE}\n"
    finding = iree_devices.find(text)
    assert finding is not None and finding.driver == "vulkan"


def test_every_signature_has_a_sample():
    """No pattern in the tables goes untested."""
    samples = [line for line, _, _ in DEVICE_SAMPLES] + CRASH_SAMPLES
    for sig in (iree_devices.DEVICE_SIGNATURES + iree_devices.FALLBACK_SIGNATURES
                + iree_devices.CRASH_SIGNATURES):
        assert any(sig.regex.search(s) for s in samples), sig.regex.pattern


@pytest.mark.parametrize("name, drivers", [
    ("llvm-cpu", ("local-task", "local-sync")),
    ("local", ("local-task", "local-sync")),
    ("vulkan-spirv", ("vulkan",)),
    ("cuda", ("cuda",)),
    ("rocm", ("hip",)),
    ("metal-spirv", ("metal",)),
    ("local-task", ("local-task",)),
    ("cuda://0", ("cuda",)),
    ("hip:0", ("hip",)),
    ("hip[1]", ("hip",)),
    ("my-npu", ("my-npu",)),
])
def test_driver_aliases(name: str, drivers: tuple[str, ...]):
    assert iree_devices.resolve(name) == drivers


# -- the hooks, in-process -------------------------------------------------------------
def configure(*argv: str) -> None:
    parser = argparse.ArgumentParser()
    iree_devices.bisectkit_addoption(parser.add_argument_group("plugin options"))
    iree_devices.bisectkit_configure(SimpleNamespace(option=parser.parse_args(list(argv))))


@pytest.fixture
def hooks():
    configure()
    yield configure
    configure()


def classify(output: str, exit_status: int | None = 1, sig: int | None = None,
             timed_out: bool = False) -> tuple[str | None, Step]:
    step = Step(index=1, commit=Sha("c0ffee"), strategy="submodule")
    outcome = Outcome(exit_status=exit_status, signal=sig, output=output, timed_out=timed_out,
                      duration=0.1, timeout=1.0 if timed_out else None)
    return iree_devices.bisectkit_classify(step=step, outcome=outcome), step


HIP_TARGET = ("<vm>:0: NOT_FOUND; HAL device `__device_0` not found or unavailable: "
              "#hal.device.target<\"hip\", [#hal.executable.target<\"rocm\", \"rocm-hsaco-fb\">]>")


def test_have_driver_accepts_target_backend_names(hooks):
    hooks("--have-driver", "rocm")
    verdict, step = classify(HIP_TARGET + "\n")
    assert verdict == "skip"
    assert step.reason == ("exit 1, hip device missing: 'HAL device `__device_0` not found or "
                           "unavailable', but this machine should have hip (--have-driver rocm) "
                           "-> skip")
    hooks("--have-driver", "cuda,llvm-cpu", "--have-driver", "metal-spirv")
    assert classify(HIP_TARGET + "\n")[0] == "good"
    verdict, step = classify("RuntimeError: Could not create any requested driver "
                             "['local-task'] (available=[]) : {}\n")
    assert verdict == "skip" and "(--have-driver llvm-cpu)" in (step.reason or "")
    assert classify("NOT_FOUND; 1 devices enumerated; device #2 not found\n")[0] == "skip"
    hooks("--have-driver", "vulkan-spirv")
    verdict, step = classify(f"{WORLD_LINE}\n")
    assert verdict == "skip"
    assert step.reason.endswith("should have vulkan (--have-driver vulkan-spirv) -> skip")
    assert step.flags == ["vulkan missing on a machine that should have it"]
    assert classify(f"{CUDA_LINE}\n")[0] == "good"  # a driver this machine lacks


def test_unknown_driver_follows_device_errors(hooks):
    hooks("--have-driver", "cuda")
    verdict, step = classify("<vm>:0: UNKNOWN; device not supported in the compiled "
                             "configuration;\n")
    assert verdict == "good"
    assert step.reason == ("exit 1, device missing (driver unknown): 'device not supported in "
                           "the compiled configuration' -> good")
    assert step.extra["iree"]["driver"] is None


def test_device_errors_only_turn_failures_around(hooks):
    assert classify(CUDA_LINE, exit_status=0)[0] is None  # the repro passed anyway
    assert classify(CUDA_LINE, exit_status=125)[0] is None  # the repro chose skip itself
    assert classify(CUDA_LINE, exit_status=None, sig=signal.SIGKILL)[0] is None
    assert classify(CUDA_LINE, exit_status=2)[0] == "good"
    assert classify(CUDA_LINE, exit_status=None, timed_out=True)[0] is None
    assert classify("nothing to see\n")[0] is None


def test_crash_signals_and_statuses(hooks):
    verdict, step = classify("", exit_status=None, sig=signal.SIGABRT)
    assert (verdict, step.reason) == ("bad", "killed by SIGABRT, crash -> bad")
    assert step.extra["iree"] == {"kind": "crash", "driver": None, "match": None, "code": None,
                                  "signal": "SIGABRT"}
    # A shell reporting its child's segfault (exit 128 + 11), with a device error before it.
    verdict, step = classify(f"{CUDA_LINE}\n", exit_status=139)
    assert (verdict, step.reason) == ("bad", "exit 139 (SIGSEGV), crash -> bad")
    verdict, step = classify("Stack dump:\n", exit_status=134)
    assert (verdict, step.reason) == ("bad", "exit 134 (SIGABRT), crash: 'Stack dump:' -> bad")
    assert classify("", exit_status=137)[0] is None  # SIGKILL (OOM killer): still aborts
    assert classify("LLVM ERROR: out of memory\n", exit_status=None, timed_out=True)[0] is None


def test_python_wrapper_exit_statuses_are_crashes(hooks):
    """IREE's pip console scripts exit ``256 - N`` when their binary dies of signal N."""
    verdict, step = classify("", exit_status=245)
    assert (verdict, step.reason) == ("bad",
                                      "exit 245 (SIGSEGV via a Python wrapper), crash -> bad")
    assert step.extra["iree"]["signal"] == "SIGSEGV"
    verdict, step = classify("Stack dump:\n", exit_status=250)
    assert (verdict, step.reason) == ("bad", "exit 250 (SIGABRT via a Python wrapper), crash: "
                                             "'Stack dump:' -> bad")
    assert classify("", exit_status=247)[0] is None  # 256 - 9: SIGKILL, still aborts
    assert classify("", exit_status=255)[0] is None  # 256 - 1: SIGHUP, not a crash


def test_unknown_driver_name_is_skip_whatever_the_options(hooks):
    for options in ((), ("--device-errors", "skip"), ("--have-driver", "cuda")):
        hooks(*options)
        verdict, step = classify(f"{REAL_NOSUCH}\n")
        assert verdict == "skip"
        assert step.reason == ("exit 1, unknown driver name 'nosuch' (IREE has no such driver; a "
                               "typo in --device?): \"no driver 'nosuch' registered\" -> skip")
        assert step.extra["iree"] == {"kind": "unknown-driver", "driver": "nosuch",
                                      "match": REAL_NOSUCH, "code": "NOT_FOUND"}
        assert step.flags == ["driver name 'nosuch' unknown to IREE (a typo in --device?)"]
    assert classify(REAL_NOSUCH, exit_status=0)[0] is None  # the repro passed anyway
    hooks("--have-driver", "nosuch")  # a driver from outside IREE this machine should have
    verdict, step = classify(f"{REAL_NOSUCH}\n")
    assert verdict == "skip" and step.reason.endswith(
        "but this machine should have nosuch (--have-driver nosuch) -> skip")
    hooks()
    verdict, step = classify(REAL_NOSUCH.replace("nosuch", "metal"))
    assert verdict == "good"
    assert step.reason == ("exit 1, metal driver missing: \"no driver 'metal' registered\" -> "
                           "good")


def test_crash_beats_have_driver_and_device_errors_skip(hooks):
    hooks("--have-driver", "cuda", "--device-errors", "skip")
    verdict, step = classify(f"{CUDA_LINE}\nStack dump:\n")
    assert (verdict, step.extra["iree"]["kind"]) == ("bad", "crash")
    assert classify(f"{WORLD_LINE}\n")[0] == "skip"


@pytest.mark.parametrize("bad", ["", "CUDA!", ","])
def test_have_driver_rejects_non_names(bad: str):
    with pytest.raises(SystemExit):
        configure("--have-driver", bad)
