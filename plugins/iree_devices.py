"""Tell IREE compiler crashes from missing GPUs: ``-p iree_devices``.

On a machine without the GPU, a *good* compiler's output still fails at run
time (``CUDA driver library 'libcuda.so'/'nvcuda.dll' not available``, exit 1)
while a *bad* compiler crashes (a stack dump, an assertion, a signal), often
with the same exit status or even exit 0. Exit statuses alone then blame every
commit. This plugin reads the repro's output first (it runs before the
``--good-if/--bad-if/--skip-if`` rules and the exit status) and decides, in
this order:

1. **Crash -> bad**, whatever the exit status says (exit 0, exit 1, exit >= 128,
   killed by a signal). A crash is one of the signatures below, or death by
   SIGSEGV, SIGABRT, SIGBUS, SIGILL or SIGFPE: as a signal, as a shell's exit
   status 128 + N (``exit 139``), or as a Python wrapper's 256 - N
   (``exit 245``, ``exit 250``): IREE's pip console scripts ``iree-compile`` and
   ``iree-run-module`` are ``sys.exit(subprocess.call([real binary, ...]))``
   (iree/compiler/tools/scripts/iree_compile/__main__.py,
   iree/_runtime/scripts/iree_run_module/__main__.py in the installed packages),
   and ``subprocess`` returns -N for a child killed by signal N. So a crash is
   bad even with its stderr discarded. Reason: ``exit 245 (SIGSEGV via a Python
   wrapper), crash: 'Please report issues to ...' -> bad``.
2. **Unknown driver name -> skip**, in a repro that failed: ``no driver 'nosuch'
   registered`` (or a Python ``No device found from list [...]`` / ``Could not
   create any requested driver [...]``) naming only drivers IREE does not have
   (see ``DRIVERS``; names given with ``--have-driver`` count as known) is a typo
   in ``--device``, not a missing device: "good" would be wrong for every
   commit. Reason: ``exit 1, unknown driver name 'nosuch' (IREE has no such
   driver; a typo in --device?): "no driver 'nosuch' registered" -> skip``, plus
   a flag in the final report. A driver IREE has but this runtime was built
   without (``no driver 'metal' registered`` on Linux) is a missing driver (3.).
3. **Device or driver missing**, in a repro that failed (exit status other than
   0 and 125, which the repro chose itself) -> ``--device-errors good|skip``
   (default ``good``). Reason names the driver: ``exit 1, cuda driver missing:
   "CUDA driver library 'libcuda.so'/'nvcuda.dll' not available" -> good``.
   A missing device only means "good" for a driver this machine *lacks*: for a
   driver named with ``--have-driver`` the machine is broken and the step is
   ``skip`` (reason ``... but this machine should have cuda (--have-driver
   cuda) -> skip``, plus a flag in the final report).
4. Anything else: no opinion (``None``); the other rules decide. A normal
   compile error such as MLIR's ``error: failed to legalize operation 'x.y'``
   is *not* a crash: the exit status (or ``--bad-if``) decides it.

A step that timed out is left to the timeout rule (``--timeout-verdict``).
With ``-p flaky --repeat N`` every run is classified here and flaky combines
the runs, whichever of the two plugins is loaded first.

Options (``run`` only, before ``--``):

``--device-errors good|skip``
    Verdict for a device/driver-missing failure (default ``good``).
``--have-driver NAME`` (repeatable, or comma-separated)
    Drivers this machine is supposed to have. IREE HAL driver names
    (``local-task``, ``local-sync``, ``cuda``, ``hip``, ``vulkan``, ``metal``,
    ``level_zero``, ``webgpu``, ``amdgpu``...; a driver from outside IREE, such
    as ``amd-aie-xrt``, too) or IREE target-backend / device names:
    ``llvm-cpu``, ``local`` and ``vmvx`` -> ``local-task`` + ``local-sync``,
    ``vulkan-spirv`` -> ``vulkan``, ``cuda`` -> ``cuda``, ``rocm`` -> ``hip``,
    ``metal-spirv`` -> ``metal``. Device URIs (``cuda://0``, ``hip:0``) are
    accepted too.

Every step the plugin decides gets ``"iree": {"kind": "crash" | "device" |
"unknown-driver", "driver": ..., "match": <first matching line, up to 500
characters>, "code": <IREE status code or null>}`` in its JSON record (crashes
also ``"signal"`` when one was seen).

Messages recognised
-------------------
Checked against IREE 3.13 (iree-base-compiler / iree-base-runtime 3.13.0 from
pip, run on a machine without GPUs: tests/test_iree_real.py) and against
iree-org/iree's sources; older releases' texts are kept. IREE statuses print as
``<file>:<line>: <CODE>; <message>[; <annotation>...]``
(``runtime/src/iree/base/status.c``), e.g. 3.13's ``c/runtime/src/iree/hal/
drivers/cuda/cuda_dynamic_symbols.c:66: UNAVAILABLE; CUDA driver library
'libcuda.so'/'nvcuda.dll' not available; please ensure installed and in dynamic
library search path; creating driver for device 'cuda'; ...``. Codes: CANCELLED
UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS
PERMISSION_DENIED RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE
UNIMPLEMENTED INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED DEFERRED (newer:
INCOMPATIBLE). Messages are matched at the start of a line or after ``": "`` /
``"; "``, case-sensitively. Paths below are in iree-org/iree unless marked
"installed" (files of the pip packages, under site-packages/iree/).

Any driver (the driver is read from the message, the ``#hal.device.target<"..">``
on the same line, an ``hal/drivers/<name>/`` path or a ``creating [driver for]
device '..'`` annotation):

* ``no driver '%.*s' registered`` -- runtime/src/iree/hal/driver_registry.c
  (also what ``--device=metal`` gives off macOS; an unknown name is rule 2);
* ``no driver '%.*s' is provided by this factory`` --
  runtime/src/iree/hal/drivers/.../registration/driver_module.c;
* ``HAL device `__device_0` not found or unavailable: #hal.device.target<"hip",
  ...>`` -- emitted by the compiler's HAL device initialization
  (InitializeDevices) into the module, printed at run time as NOT_FOUND or (3.x,
  e.g. a cuda module run with ``--device=local-task``) INCOMPATIBLE
  (iree-org/iree#18749); the short form ``HAL device 'vulkan' not found`` (any
  quote style) too;
* ``device not supported in the compiled configuration`` -- older runtimes
  (iree-org/iree#10058, #12275);
* ``[default ]device %d not found (of %d enumerated)`` --
  runtime/src/iree/hal/drivers/{cuda,hip}/*_driver.c (by index / default).

Python bindings (``iree.runtime``):

* ``No device found from list ['vulkan']`` -- ValueError from
  ``get_first_device`` in runtime/bindings/python/iree/runtime/system_setup.py
  (installed: iree/runtime/system_setup.py), what ``Config('vulkan')`` and
  ``load_vm_flatbuffer_file(..., driver='vulkan')`` raise when creating the
  driver raised ValueError (a NOT_FOUND status: Vulkan loader missing, unknown
  driver); the drivers are read from the list;
* ``Could not create any requested driver ['vmvx'] (available=[...])`` --
  older bindings/python/iree/runtime/system_api.py (PR #9997);
* fallbacks, only when no message above matched (they wrap the status that
  names what is missing, which is preferred): ``Error creating driver: <status>``
  -- runtime/bindings/python/hal.cc (``get_device``/``get_driver``; the string
  is in installed iree/_runtime_libs/_runtime*.so), driver from the status's
  path; ``Could not create device. Exception for last tried follows.`` --
  system_setup.py, RuntimeError chained to the driver's own error.

cuda (runtime/src/iree/hal/drivers/cuda/):

* cuda_dynamic_symbols.c (3.x): ``CUDA driver library 'libcuda.so'/'nvcuda.dll'
  not available; please ensure installed and in dynamic library search path``;
* dynamic_symbols.c (older): ``CUDA runtime library not available; ensure
  installed and on path`` (iree-org/iree#10090), ``NCCL runtime library
  (%d.%d.%d) not available``;
* cuda_driver.c: ``no compatible CUDA devices were found``, ``CUDA device with
  UUID GPU-... not found``;
* cuda_status_util.c (3.x: ``CUDA error '%s' (%d): %s``) and status_util.c
  (older: ``CUDA driver error '%s' (%d): %s``) with CUDA_ERROR_NO_DEVICE or
  CUDA_ERROR_INVALID_DEVICE (device missing), CUDA_ERROR_NOT_INITIALIZED,
  CUDA_ERROR_INSUFFICIENT_DRIVER, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH or
  CUDA_ERROR_STUB_LIBRARY (driver missing).

hip (target backend ``rocm``; runtime/src/iree/hal/drivers/hip/):

* dynamic_symbols.c: ``HIP runtime library 'amdhip64.dll'/'libamdhip64.so' not
  available: please ensure installed and in dynamic library search path``
  (older, experimental/rocm: ``ROCM/HIP runtime library not available; ensure
  installed and on path``);
* hip_driver.c: ``no compatible HIP devices were found``, ``HIP device with
  UUID GPU-... not found``;
* status_util.c: ``HIP driver error '%s' (%d): %s`` with hipErrorNoDevice,
  hipErrorInsufficientDriver, hipErrorNotInitialized,
  hipErrorInitializationError or hipErrorInvalidDevice.

vulkan (runtime/src/iree/hal/drivers/vulkan/):

* util/libvulkan.c (3.x): ``Vulkan loader library not found; ensure it is
  installed and on a valid search path (or specified with
  IREE_HAL_VULKAN_LIBVULKAN_PATH)``;
* dynamic_symbols.cc (older): ``Vulkan runtime library not available; ensure
  installed and on path``, ``required method vkGetInstanceProcAddr not found in
  provided Vulkan library``, ``mandatory Vulkan function %s not available;
  invalid loader/ICD?`` (capitalised in older releases; oldest: ``Unable to open
  libvulkan.so; driver not installed/on LD_LIBRARY_PATH``);
* vulkan_driver.cc (older): ``physical device %u invalid; %u physical devices
  available; %u visible``;
* physical_device_selection.c (3.x): ``Vulkan driver has no physical
  devices``, ``no Vulkan physical device satisfies the Vulkan 1.3 baseline``,
  ``Vulkan physical device %u does not satisfy the Vulkan 1.3 baseline``,
  ``Vulkan device id %u out of range; driver has %u devices``, ``Vulkan device
  id %u not found``, ``Vulkan device path '%.*s' not found``;
* status_util.c: VK_ERROR_INCOMPATIBLE_DRIVER, VK_ERROR_INITIALIZATION_FAILED.

amdgpu (runtime/src/iree/hal/drivers/amdgpu/util/libhsa.c): ``HSA/ROCR-Runtime
library not found; ensure it is installed and on a valid search path (or
specified with IREE_HAL_AMDGPU_LIBHSA_PATH)``. hsa (experimental,
runtime/src/iree/hal/drivers/hsa/dynamic_symbols.c): ``HSA runtime library
'libhsa-runtime64.dll'/'libhsa-runtime64.so' not available``.

metal (runtime/src/iree/hal/drivers/metal/metal_driver.m): ``%d devices
enumerated; device #%d not found``, ``Metal device with device registry ID
%016llx not found``.

level_zero (experimental/level_zero): ``LevelZero runtime library not
available; ensure installed and on path``.

local-task / local-sync: always present; a module compiled for another device
run on them reports the ``HAL device `__device_0` not found or unavailable``
message above, naming the device the module needs.

Crash signatures (at the start of a line):

* llvm/lib/Support/PrettyStackTrace.cpp: ``PLEASE submit a bug report to <url>
  and include the crash backtrace.`` (IREE's tools, 3.13 included: ``Please
  report issues to https://github.com/iree-org/iree/issues and include the crash
  backtrace.``),
  ``Stack dump:`` followed by ``0.<TAB>Program arguments: ...``;
* llvm/lib/Support/ErrorHandling.cpp: ``LLVM ERROR: <reason>``,
  ``UNREACHABLE executed at FILE:LINE!``;
* glibc ``assert``: ``prog: file:line: func: Assertion `expr' failed.``
  (MSVC: ``Assertion failed: expr, file F, line N``);
* shells: ``Segmentation fault (core dumped)``, ``Aborted (core dumped)`` (and
  bash's ``./x.sh: line 25: 1203771 Segmentation fault (core dumped) cmd``);
* sanitizers: ``==PID==ERROR: AddressSanitizer: ...``, ``SUMMARY:
  AddressSanitizer: ...``, ``WARNING: ThreadSanitizer: ...``, UBSan's
  ``file:line:col: runtime error: ...``.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bisectkit import Outcome, Step, hookimpl

if TYPE_CHECKING:
    from bisectkit import Config, Verdict

DEVICE_ERROR_VERDICTS = ("good", "skip")

#: IREE runtime HAL driver names (``--device=NAME``): those in runtime/src/iree/hal/drivers/
#: (and experimental/) of current and past releases. ``no driver 'X' registered`` for a name
#: not here (nor given with --have-driver) is a typo, not a missing device.
DRIVERS = ("local-task", "local-sync", "cuda", "hip", "vulkan", "metal", "level_zero",
           "webgpu", "amdgpu", "null", "hsa", "nonlocal-sync", "nonlocal-task")
_LOCAL = ("local-task", "local-sync")
#: Target-backend, compiler device and legacy names -> the runtime drivers they run on.
ALIASES: dict[str, tuple[str, ...]] = {
    "llvm-cpu": _LOCAL,
    "local": _LOCAL,
    "vmvx": _LOCAL,
    "dylib": ("local-task",),
    "dylib-sync": ("local-sync",),
    "vmvx-sync": ("local-sync",),
    "cuda2": ("cuda",),
    "local_task": ("local-task",),
    "local_sync": ("local-sync",),
    "vulkan-spirv": ("vulkan",),
    "rocm": ("hip",),
    "metal-spirv": ("metal",),
    "level-zero": ("level_zero",),
    "levelzero": ("level_zero",),
}

#: Signals that mean the process crashed (not a harness problem such as SIGKILL).
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL,
                           signal.SIGFPE})

STATUS_CODES = ("CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
                "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED", "DEFERRED", "INCOMPATIBLE")
_CODE_RE = re.compile(r"(?<![A-Z_])(" + "|".join(STATUS_CODES) + r"); ")

#: Where a message may start: at the start of a line, or after ": " / "; "
#: (IREE status prefixes, annotations and Python exception text).
_AT = r"(?:^[ \t]*|(?<=[:;] ))"


@dataclass(frozen=True)
class Signature:
    """One recognised message."""

    #: ``"crash"`` or ``"device"``.
    kind: str
    regex: re.Pattern[str]
    #: Where the message comes from (for people reading the table).
    source: str
    #: The driver it belongs to; ``None`` when read from the message or its line.
    driver: str | None = None
    #: For device errors: ``"device"`` (none found) or ``"driver"`` (library/loader missing).
    missing: str = "device"


def _dev(body: str, source: str, driver: str | None = None,
         missing: str = "device") -> Signature:
    return Signature("device", re.compile(_AT + "(?P<msg>" + body + ")", re.MULTILINE), source,
                     driver, missing)


def _crash(regex: str, source: str) -> Signature:
    return Signature("crash", re.compile(regex, re.MULTILINE), source)


_CUDA_DRIVER_ERRORS = ("CUDA_ERROR_NOT_INITIALIZED|CUDA_ERROR_INSUFFICIENT_DRIVER|"
                       "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|CUDA_ERROR_STUB_LIBRARY")
#: A library named as ``'libcuda.so'/'nvcuda.dll'`` in "... library <names> not available".
_LIBS = r"(?:'[^'\s]*'(?:/'[^'\s]*')* )?"
_HIP_DRIVER_ERRORS = "hipErrorInsufficientDriver|hipErrorNotInitialized|hipErrorInitializationError"

DEVICE_SIGNATURES: tuple[Signature, ...] = (
    # -- any driver ------------------------------------------------------------------
    _dev(r"HAL device [`'\"](?P<device>[^`'\"\s]+)[`'\"] not found(?: or unavailable)?",
         "compiler HAL InitializeDevices (iree-org/iree#18749)"),
    _dev(r"no driver '(?P<driver>[^'\s]+)' registered", "runtime/src/iree/hal/driver_registry.c",
         missing="driver"),
    _dev(r"no driver '(?P<driver>[^'\s]+)' is provided by this factory",
         "runtime/src/iree/hal/drivers/*/registration/driver_module.c", missing="driver"),
    _dev(r"Could not create any requested driver \[(?P<drivers>[^\]]*)\]",
         "bindings/python/iree/runtime/system_api.py (PR #9997)", missing="driver"),
    _dev(r"No device found from list \[(?P<drivers>[^\]]*)\]",
         "runtime/bindings/python/iree/runtime/system_setup.py", missing="driver"),
    _dev(r"(?:default )?device \d+ not found \(of \d+ enumerated\)",
         "runtime/src/iree/hal/drivers/{cuda,hip}/*_driver.c"),
    _dev(r"device not supported in the compiled configuration", "iree-org/iree#10058"),
    # -- cuda ------------------------------------------------------------------------
    _dev(rf"CUDA driver library {_LIBS}not available",
         "runtime/src/iree/hal/drivers/cuda/cuda_dynamic_symbols.c", "cuda", "driver"),
    _dev(r"CUDA runtime library not available; ensure installed and on path",
         "runtime/src/iree/hal/drivers/cuda/dynamic_symbols.c", "cuda", "driver"),
    _dev(r"NCCL runtime library(?: \([\d.]+\))? not available",
         "runtime/src/iree/hal/drivers/cuda/dynamic_symbols.c", "cuda", "driver"),
    _dev(r"no compatible CUDA devices were found",
         "runtime/src/iree/hal/drivers/cuda/cuda_driver.c", "cuda"),
    _dev(r"CUDA device with UUID \S+ not found",
         "runtime/src/iree/hal/drivers/cuda/cuda_driver.c", "cuda"),
    _dev(r"CUDA (?:driver )?error '(?:CUDA_ERROR_NO_DEVICE|CUDA_ERROR_INVALID_DEVICE)' \(\d+\)",
         "runtime/src/iree/hal/drivers/cuda/{cuda_status_util,status_util}.c", "cuda"),
    _dev(rf"CUDA (?:driver )?error '(?:{_CUDA_DRIVER_ERRORS})' \(\d+\)",
         "runtime/src/iree/hal/drivers/cuda/{cuda_status_util,status_util}.c", "cuda", "driver"),
    # -- hip (target backend rocm) ----------------------------------------------------
    _dev(rf"(?:ROCM/)?HIP runtime library {_LIBS}not available",
         "runtime/src/iree/hal/drivers/hip/dynamic_symbols.c", "hip", "driver"),
    _dev(r"no compatible HIP devices were found",
         "runtime/src/iree/hal/drivers/hip/hip_driver.c", "hip"),
    _dev(r"HIP device with UUID \S+ not found",
         "runtime/src/iree/hal/drivers/hip/hip_driver.c", "hip"),
    _dev(r"HIP driver error '(?:hipErrorNoDevice|hipErrorInvalidDevice)' \(\d+\)",
         "runtime/src/iree/hal/drivers/hip/status_util.c", "hip"),
    _dev(rf"HIP driver error '(?:{_HIP_DRIVER_ERRORS})' \(\d+\)",
         "runtime/src/iree/hal/drivers/hip/status_util.c", "hip", "driver"),
    # -- vulkan ----------------------------------------------------------------------
    _dev(r"Vulkan loader library not found",
         "runtime/src/iree/hal/drivers/vulkan/util/libvulkan.c", "vulkan", "driver"),
    _dev(r"Vulkan runtime library not available; ensure installed and on path",
         "runtime/src/iree/hal/drivers/vulkan/dynamic_symbols.cc", "vulkan", "driver"),
    _dev(r"[Rr]equired method vkGetInstanceProcAddr not found in provided Vulkan library",
         "runtime/src/iree/hal/drivers/vulkan/dynamic_symbols.cc", "vulkan", "driver"),
    _dev(r"[Mm]andatory Vulkan function \S+ not available; invalid loader/ICD\?",
         "runtime/src/iree/hal/drivers/vulkan/dynamic_symbols.cc", "vulkan", "driver"),
    _dev(r"Unable to open libvulkan\.so; driver not installed/on LD_LIBRARY_PATH",
         "iree/hal/vulkan/dynamic_symbols.cc (early releases)", "vulkan", "driver"),
    _dev(r"physical device \d+ invalid; \d+ physical devices available; \d+ visible",
         "runtime/src/iree/hal/drivers/vulkan/vulkan_driver.cc", "vulkan"),
    _dev(r"Vulkan driver has no physical devices",
         "runtime/src/iree/hal/drivers/vulkan/physical_device_selection.c", "vulkan"),
    _dev(r"no Vulkan physical device satisfies the Vulkan 1\.3 baseline",
         "runtime/src/iree/hal/drivers/vulkan/physical_device_selection.c", "vulkan"),
    _dev(r"Vulkan physical device \d+ does not satisfy the Vulkan 1\.3 baseline",
         "runtime/src/iree/hal/drivers/vulkan/physical_device_selection.c", "vulkan"),
    _dev(r"Vulkan device (?:id \d+ (?:not found|out of range; driver has \d+ devices)|"
         r"path '[^']*' not found)",
         "runtime/src/iree/hal/drivers/vulkan/physical_device_selection.c", "vulkan"),
    # Result names, not sentences: matched as whole words anywhere on a line.
    Signature("device", re.compile(r"\b(?P<msg>VK_ERROR_(?:INCOMPATIBLE_DRIVER|"
                                   r"INITIALIZATION_FAILED))\b"),
              "runtime/src/iree/hal/drivers/vulkan/status_util.c", "vulkan", "driver"),
    # -- metal -----------------------------------------------------------------------
    _dev(r"\d+ devices enumerated; device #\d+ not found",
         "runtime/src/iree/hal/drivers/metal/metal_driver.m", "metal"),
    _dev(r"Metal device with device registry ID [0-9a-fA-F]+ not found",
         "runtime/src/iree/hal/drivers/metal/metal_driver.m", "metal"),
    # -- amdgpu, hsa -----------------------------------------------------------------
    _dev(r"HSA/ROCR-Runtime library not found",
         "runtime/src/iree/hal/drivers/amdgpu/util/libhsa.c", "amdgpu", "driver"),
    _dev(rf"HSA runtime library {_LIBS}not available",
         "runtime/src/iree/hal/drivers/hsa/dynamic_symbols.c", "hsa", "driver"),
    # -- level_zero (experimental) ---------------------------------------------------
    _dev(r"LevelZero runtime library not available; ensure installed and on path",
         "experimental/level_zero/dynamic_symbols.c", "level_zero", "driver"),
)

#: Tried only when nothing above matched: they wrap a status that says what is missing, and
#: the specific message, when it is there, names the driver better.
FALLBACK_SIGNATURES: tuple[Signature, ...] = (
    _dev(r"Error creating driver(?=: )", "runtime/bindings/python/hal.cc (HalDriver.create)",
         missing="driver"),
    _dev(r"Could not create device\. Exception for last tried follows\.",
         "runtime/bindings/python/iree/runtime/system_setup.py (get_first_device)",
         missing="driver"),
)

_SHELL_SIGNALS = "Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception"

CRASH_SIGNATURES: tuple[Signature, ...] = (
    _crash(r"^(?P<msg>(?:PLEASE submit a bug report to|Please report issues to) \S+ "
           r"and include the crash backtrace)", "llvm/lib/Support/PrettyStackTrace.cpp"),
    _crash(r"^(?P<msg>Stack dump:)[ \t]*$", "llvm/lib/Support/PrettyStackTrace.cpp"),
    _crash(r"^[ \t]*(?P<msg>0\.\s+Program arguments: .*)",
           "llvm/lib/Support/PrettyStackTrace.cpp"),
    _crash(r"^(?P<msg>LLVM ERROR: .*)", "llvm/lib/Support/ErrorHandling.cpp"),
    _crash(r"^(?P<msg>UNREACHABLE executed(?: at \S+:\d+)?!)",
           "llvm/lib/Support/ErrorHandling.cpp"),
    _crash(r"^(?P<msg>\S.*:\d+: .*Assertion `.*' failed\.)[ \t]*$", "glibc assert"),
    _crash(r"^(?P<msg>Assertion failed: .+, file .+, line \d+)", "MSVC assert"),
    _crash(rf"^(?P<msg>(?:{_SHELL_SIGNALS})(?: +\(core dumped\))?)[ \t]*$", "shell"),
    _crash(rf"^\S.*: line \d+: +\d+ (?P<msg>(?:{_SHELL_SIGNALS})(?: +\(core dumped\))?)",
           "bash, for a command of a script"),
    _crash(r"^(?P<msg>==\d+==ERROR: \w*Sanitizer: .*)", "compiler-rt sanitizers"),
    _crash(r"^(?P<msg>SUMMARY: \w*Sanitizer: .*)", "compiler-rt sanitizers"),
    _crash(r"^(?P<msg>WARNING: ThreadSanitizer: .*)", "compiler-rt ThreadSanitizer"),
    _crash(r"^(?P<msg>\S+:\d+:\d+: runtime error: .*)", "compiler-rt UBSan"),
)

#: Longest "match" line kept in a step's JSON (device target attributes can be huge).
MATCH_LIMIT = 500

_TARGET_RE = re.compile(r"#hal\.device\.target<\"(?P<name>[^\"]+)\"")
_PATH_RE = re.compile(r"(?:hal/drivers|experimental)/(?P<name>[a-z_]+)/")
# iree-run-module annotates with "creating driver for device 'cuda'" (3.x) or
# "creating device 'cuda'" (older).
_CREATING_RE = re.compile(r"creating (?:driver for )?device '(?P<name>[^']+)'")
_QUOTED_RE = re.compile(r"'([^']+)'")


@dataclass(frozen=True)
class Finding:
    """What :func:`find` recognised in a repro's output."""

    #: ``"crash"``, ``"device"`` (a device or driver is missing) or ``"unknown-driver"`` (the
    #: message names only drivers IREE does not have: a typo such as ``--device=nosuch``).
    kind: str
    #: Driver name(s) as ``"cuda"`` or ``"local-task/local-sync"``; ``None`` if unknown.
    #: For ``"unknown-driver"``: the names as the message gave them.
    driver: str | None
    #: The first matching line (stripped), or ``None`` for a crash seen only as a signal.
    match: str | None
    #: The recognised message itself (for the step's reason).
    message: str | None
    #: The IREE status code before the message on its line, if any.
    code: str | None = None
    missing: str = "device"
    signal: str | None = None

    @property
    def drivers(self) -> frozenset[str]:
        return frozenset(self.driver.split("/")) if self.driver else frozenset()


def resolve(name: str) -> tuple[str, ...]:
    """Runtime driver names for a driver, target-backend or device name (``rocm`` -> ``hip``)."""
    name = name.strip().lower().split("://", 1)[0]
    name = re.sub(r"(?:\[\d+\]|:\d*)$", "", name)
    return ALIASES.get(name, (name,))


def is_known(name: str, extra: Collection[str] = ()) -> bool:
    """Whether ``name`` is an IREE driver or one of its aliases (or resolves into ``extra``)."""
    return all(d in DRIVERS or d in extra for d in resolve(name))


def _line_at(text: str, pos: int) -> tuple[str, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:end if end >= 0 else len(text)], start


def _driver_of(sig: Signature, m: re.Match[str], line: str,
               extra: Collection[str]) -> tuple[str | None, bool]:
    """The driver(s) a device message is about, and whether it names only unknown drivers."""
    if sig.driver is not None:
        return sig.driver, False
    groups = m.groupdict()
    named: list[str] = []
    if groups.get("driver"):
        named = [groups["driver"]]
    elif groups.get("drivers"):
        named = _QUOTED_RE.findall(groups["drivers"])
    names = [n for n in named if is_known(n, extra)]
    if named and not names:
        # "no driver 'nosuch' registered": the user named a driver IREE never had.
        return "/".join(dict.fromkeys(named)), True
    if not names and groups.get("device") and is_known(groups["device"]):
        names = [groups["device"]]
    if not names:
        for regex in (_TARGET_RE, _PATH_RE, _CREATING_RE):
            found = regex.search(line)
            if found and is_known(found.group("name")):
                names = [found.group("name")]
                break
    drivers = [d for n in names for d in resolve(n)]
    return "/".join(dict.fromkeys(drivers)) or None, False


def _first(signatures: tuple[Signature, ...], text: str,
           extra: Collection[str] = ()) -> Finding | None:
    best: tuple[int, int, Signature, re.Match[str]] | None = None
    for i, sig in enumerate(signatures):
        m = sig.regex.search(text)
        if m and (best is None or (m.start(), i) < best[:2]):
            best = (m.start(), i, sig, m)
    if best is None:
        return None
    _, _, sig, m = best
    line, line_start = _line_at(text, m.start("msg"))
    codes = _CODE_RE.findall(line[:m.start("msg") - line_start])
    driver, unknown = (_driver_of(sig, m, line, extra) if sig.kind == "device"
                       else (None, False))
    return Finding(kind="unknown-driver" if unknown else sig.kind, driver=driver,
                   match=_short(line.strip(), MATCH_LIMIT), message=m.group("msg").strip(),
                   code=codes[-1] if codes else None, missing=sig.missing)


def find(text: str, known: Collection[str] = ()) -> Finding | None:
    """The first crash signature in ``text``, else its first device/driver error, else ``None``.

    ``known``: driver names to accept besides IREE's own (those given with ``--have-driver``).
    """
    return (_first(CRASH_SIGNATURES, text) or _first(DEVICE_SIGNATURES, text, known)
            or _first(FALLBACK_SIGNATURES, text, known))


def crash_signal(outcome: Outcome) -> str | None:
    """Name of the crash signal that ended the repro.

    Also read from exit statuses: a shell's ``128 + N`` (``exit 139``) and a Python
    wrapper's ``256 - N`` (``exit 245``): IREE's pip console scripts (``iree-compile``,
    ``iree-run-module``) end with ``sys.exit(subprocess.call(...))``, and ``subprocess``
    returns ``-N`` for a child killed by signal N.
    """
    if outcome.signal is not None:
        return signal.Signals(outcome.signal).name if outcome.signal in CRASH_SIGNALS else None
    status = outcome.exit_status
    for n in (status - 128, 256 - status) if status is not None else ():
        if n in CRASH_SIGNALS:
            return signal.Signals(n).name
    return None


# -- plugin state (plugins are loaded once per process) ------------------------------
@dataclass
class _Settings:
    device_errors: str = "good"
    #: resolved driver -> the name the user gave with --have-driver.
    have: dict[str, str] | None = None


_settings = _Settings()


def _driver_list(text: str) -> list[str]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a driver name")
    for n in names:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_:/\[\].-]*", n):
            raise argparse.ArgumentTypeError(f"not a driver name: {n!r}")
    return names


@hookimpl
def bisectkit_addoption(parser: argparse._ArgumentGroup) -> None:
    parser.add_argument("--device-errors", choices=DEVICE_ERROR_VERDICTS, default="good",
                        help="iree_devices: verdict when the repro fails because a GPU device "
                             "or driver is missing (default good)")
    parser.add_argument("--have-driver", action="append", type=_driver_list, default=None,
                        metavar="NAME",
                        help="iree_devices: a driver this machine should have, by driver or "
                             "target-backend name (cuda, hip or rocm, vulkan or vulkan-spirv, "
                             "local-task or llvm-cpu...; repeatable, or comma-separated): its "
                             "device errors mean a broken machine -> skip")


@hookimpl
def bisectkit_configure(config: Config) -> None:
    # getattr: the plugin may be loaded for commands without run options.
    option = config.option
    have: dict[str, str] = {}
    for group in getattr(option, "have_driver", None) or []:
        for name in group:
            for driver in resolve(name):
                have.setdefault(driver, name)
    _settings.device_errors = getattr(option, "device_errors", "good") or "good"
    _settings.have = have


def _repeated_by_flaky(step: Step) -> bool:
    """``-p flaky`` combines per-run verdicts (ours included) at this step: leave it to it."""
    flaky: Any = sys.modules.get("bisectkit_plugins.flaky")
    runs = getattr(flaky, "_runs", None)
    return isinstance(runs, dict) and step.index in runs


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


@hookimpl(tryfirst=True)
def bisectkit_classify(step: Step, outcome: Outcome) -> Verdict | None:
    if outcome.timed_out or _repeated_by_flaky(step):
        return None
    have = _settings.have or {}
    finding = find(outcome.output, known=have)
    sig = crash_signal(outcome)
    status = outcome.describe()
    if sig is not None and outcome.signal is None:
        # 256 - N: IREE's pip console scripts pass on their child's death this way.
        via = " via a Python wrapper" if 256 - (outcome.exit_status or 0) in CRASH_SIGNALS else ""
        status = f"{status} ({sig}{via})"
    if sig is not None and (finding is None or finding.kind != "crash"):
        finding = Finding("crash", None, None, None, signal=sig)
    if finding is None:
        return None
    if finding.kind == "crash":
        return _crash_verdict(step, finding, sig, status)
    if outcome.exit_status in (None, 0, 125):
        return None  # the repro passed, chose skip itself, or died of a non-crash signal
    step.extra["iree"] = {"kind": finding.kind, "driver": finding.driver, "match": finding.match,
                          "code": finding.code}
    if finding.kind == "unknown-driver":
        return _unknown_driver_verdict(step, finding, status)
    return _missing_verdict(step, finding, status, have)


def _crash_verdict(step: Step, finding: Finding, sig: str | None, status: str) -> Verdict:
    """A crash signature or a crash signal: bad, whatever the exit status."""
    record: dict[str, Any] = {"kind": "crash", "driver": None, "match": finding.match,
                              "code": finding.code}
    if sig is not None:
        record["signal"] = sig
    step.extra["iree"] = record
    what = f": {_short(finding.message)!r}" if finding.message else ""
    step.reason = f"{status}, crash{what} -> bad"
    return "bad"


def _unknown_driver_verdict(step: Step, finding: Finding, status: str) -> Verdict:
    """A driver name IREE never had: a typo in ``--device``, the same at every commit."""
    # Not a missing device: no commit can pass with this name, so "good" would be wrong
    # for every commit. Skip, and say so in the final report.
    message = repr(_short(finding.message or ""))
    names = ", ".join(repr(n) for n in (finding.driver or "").split("/"))
    step.reason = (f"{status}, unknown driver name {names} (IREE has no such driver; a "
                   f"typo in --device?): {message} -> skip")
    step.flags.append(f"driver name {names} unknown to IREE (a typo in --device?)")
    step.environment = "unknown driver name"  # the same at every commit: feeds the breaker
    return "skip"


def _missing_verdict(step: Step, finding: Finding, status: str, have: dict[str, str]) -> Verdict:
    """A missing device or driver: good (or ``--device-errors skip``), but skip on a machine
    that should have it (``--have-driver``)."""
    message = repr(_short(finding.message or ""))
    who = (f"{finding.driver} {finding.missing} missing" if finding.driver
           else f"{finding.missing} missing (driver unknown)")
    said = f"{status}, {who}: {message}"
    owned = sorted(d for d in finding.drivers if d in have)
    if owned:
        given = ", ".join(dict.fromkeys(f"--have-driver {have[d]}" for d in owned))
        step.reason = f"{said}, but this machine should have {'/'.join(owned)} ({given}) -> skip"
        step.flags.append(f"{'/'.join(owned)} missing on a machine that should have it")
        step.environment = f"{'/'.join(owned)} missing"  # a broken machine: feeds the breaker
        return "skip"
    verdict: Verdict = "skip" if _settings.device_errors == "skip" else "good"
    step.reason = f"{said} -> {verdict}"
    if verdict == "skip":
        step.reason += " (--device-errors skip)"
    return verdict
