"""Build each step with CMake + Ninja, the IREE way, without ``--build``: ``-p cmake_ninja``.

The build directory is configured once (``cmake -G Ninja -S SRC -B BUILD
ARGS...``) and then rebuilt incrementally at every step with ``ninja -C
BUILD``: bisectkit rewrites only the files that differ between two steps, so
ninja recompiles only what they touch. The configure step runs again only when
``BUILD/build.ninja`` is missing or the configure arguments differ from the
last successful configure, remembered in ``BUILD/.bisectkit-cmake-args`` (so a
second ``run`` with other ``--cmake-arg`` values re-configures once; changes to
CMake files between steps are picked up by ninja's own re-run of CMake).

Options (``run`` only, before ``--``):

``--cmake-source-dir DIR``
    The top-level ``CMakeLists.txt`` (default: the superproject root).
``--cmake-build-dir DIR``
    The build directory (default ``build``). Relative paths, here and in
    ``--cmake-source-dir``, are relative to the superproject root.
``--cmake-arg ARG``
    Passed to the configure step (repeatable). Values starting with ``-`` must
    be attached with ``=``: ``--cmake-arg=-DIREE_BUILD_TESTS=OFF`` (argparse
    takes a separate ``-D...`` word for an option). CMake keeps cache entries
    across re-configures: to unset one, pass it explicitly or use a fresh
    build directory.
``--ninja-target T``
    Target to build (repeatable; default: ninja's default target).
``--ninja-jobs N``
    Passed to ninja as ``-j N``.
``--ccache``
    Adds ``-DCMAKE_C_COMPILER_LAUNCHER=ccache`` and
    ``-DCMAKE_CXX_COMPILER_LAUNCHER=ccache`` (before the ``--cmake-arg`` values,
    which may override them).

A failed configure or build makes the step ``skip`` (``build failed (exit
1)``); ``--timeout`` covers configure and build together. The environment
variables CMake reads on a first configure (:data:`CMAKE_ENV`: ``CC``,
``CXX``, ``CFLAGS``...) join the verdict cache's key; their values at the
last configure are remembered in ``BUILD/.bisectkit-cmake-env``, and a run
with other values stops (exit 2) before anything is touched, since CMake
would keep the old ones. ``cmake`` and
``ninja`` (and ``ccache`` with ``--ccache``) must be on ``PATH``, the source
directory must hold a ``CMakeLists.txt`` and an existing build directory must
be a Ninja one for the same source; otherwise ``run`` stops with exit 2 before
anything is touched. This plugin replaces ``--build`` (and git config
``bisectkit.build``): when both are given, the plugin builds and ``--build`` is
ignored, with a warning. A step that configured records ``cmake_configure_s``
in its JSON.

Example (IREE, bisecting LLVM; the repro prints "device ... not found" when a
good compiler runs on a machine without the GPU)::

    bisectkit run --submodule third_party/llvm-project -p cmake_ninja \\
        --cmake-build-dir ../iree-build --cmake-arg=-DIREE_BUILD_TESTS=OFF \\
        --cmake-arg=-DIREE_TARGET_BACKEND_CUDA=ON --ninja-target iree-compile --ccache \\
        --good-if 'device .* not found' --good X --bad Y -- ./repro.sh
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bisectkit import BadInput, Outcome, hookimpl, run_command, whole_number

if TYPE_CHECKING:
    from bisectkit import Config, Step

#: Inside the build directory: the configure arguments of the last successful configure.
STAMP = ".bisectkit-cmake-args"
#: ...and the values then of the environment variables CMake reads (:data:`CMAKE_ENV`).
ENV_STAMP = ".bisectkit-cmake-env"
#: What CMake reads from the environment when it configures a new build directory (the
#: compilers, their flags, the build type...), then keeps in CMakeCache.txt: part of the
#: verdict cache's key, and a change with the directory already configured is refused.
CMAKE_ENV = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "ASM", "ASMFLAGS", "CUDACXX",
             "CUDAFLAGS", "CUDAHOSTCXX", "HIPCXX", "HIPFLAGS", "OBJC", "OBJCXX",
             "CMAKE_BUILD_TYPE", "CMAKE_TOOLCHAIN_FILE", "CMAKE_PREFIX_PATH",
             "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER",
             "CMAKE_OSX_ARCHITECTURES", "MACOSX_DEPLOYMENT_TARGET")
CCACHE_ARGS = ("-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")

# Plugins are loaded once per process, so module state is the plugin's state.
_config: Config | None = None
_settings: Settings | None = None


@dataclass(frozen=True)
class Settings:
    """Validated options: the tools and directories to build with."""

    cmake: str
    ninja: str
    source_dir: Path
    build_dir: Path
    cmake_args: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    jobs: int | None = None

    def configure_args(self) -> list[str]:
        """The configure step's arguments (without the ``cmake`` executable)."""
        return ["-G", "Ninja", "-S", str(self.source_dir), "-B", str(self.build_dir),
                *self.cmake_args]

    def build_args(self) -> list[str]:
        """The build step's arguments (without the ``ninja`` executable)."""
        jobs = ["-j", str(self.jobs)] if self.jobs is not None else []
        return ["-C", str(self.build_dir), *jobs, *self.targets]

    def needs_configure(self) -> bool:
        """True when there is no ``build.ninja`` or it was made with other arguments."""
        if not (self.build_dir / "build.ninja").is_file():
            return True
        try:
            last: object = json.loads((self.build_dir / STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return True  # configured by hand or by an older run: adopt it once
        return last != self.configure_args()

    def remember_configure(self, env: dict[str, str]) -> None:
        (self.build_dir / STAMP).write_text(json.dumps(self.configure_args()) + "\n",
                                            encoding="utf-8")
        (self.build_dir / ENV_STAMP).write_text(json.dumps(cmake_env(env)) + "\n",
                                                encoding="utf-8")

    def check_env(self, env: dict[str, str]) -> None:
        """Refuse a build directory configured under other values of :data:`CMAKE_ENV`:
        CMake would go on with the old compiler while the cache key says the new one."""
        if not (self.build_dir / "build.ninja").is_file():
            return
        try:
            then = json.loads((self.build_dir / ENV_STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # configured by hand or by an older bisectkit: nothing to compare
        now = cmake_env(env)
        changed = [k for k in CMAKE_ENV if isinstance(then, dict) and then.get(k) != now.get(k)]
        if changed:
            raise BadInput(f"-p cmake_ninja: {', '.join(changed)} changed since {self.build_dir} "
                           "was configured, and CMake keeps what it first read: remove that "
                           "directory or use another --cmake-build-dir")

    def forget_configure(self) -> None:
        (self.build_dir / STAMP).unlink(missing_ok=True)


@hookimpl
def bisectkit_addoption(parser: argparse._ArgumentGroup) -> None:
    parser.add_argument("--cmake-source-dir", metavar="DIR",
                        help="cmake_ninja: top-level CMakeLists.txt (default: the superproject "
                             "root)")
    parser.add_argument("--cmake-build-dir", default="build", metavar="DIR",
                        help="cmake_ninja: build directory, relative to the superproject root "
                             "(default build)")
    parser.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                        help="cmake_ninja: configure argument (repeatable); attach values that "
                             "start with '-': --cmake-arg=-DFOO=ON")
    parser.add_argument("--ninja-target", action="append", default=[], metavar="T",
                        help="cmake_ninja: ninja target (repeatable; default: ninja's default)")
    parser.add_argument("--ninja-jobs", type=whole_number(0, " (0: no limit)"), metavar="N",
                        help="cmake_ninja: ninja -j N")
    parser.add_argument("--ccache", action="store_true",
                        help="cmake_ninja: compile through ccache (compiler launcher)")


def settings_from(option: Any, root: Path,
                  which: Callable[[str], str | None] = shutil.which) -> Settings:
    """Validate the options against the tools on ``PATH`` and the directories; raise BadInput."""
    ccache = bool(getattr(option, "ccache", False))
    tools: dict[str, str] = {}
    for tool in ("cmake", "ninja", *(["ccache"] if ccache else [])):
        found = which(tool)
        if found is None:
            raise BadInput(f"-p cmake_ninja: '{tool}' not found on PATH"
                           + (" (needed by --ccache)" if tool == "ccache" else
                              " (install it, or drop -p cmake_ninja and use --build CMD)"))
        tools[tool] = found
    source = _under(root, getattr(option, "cmake_source_dir", None) or ".")
    build = _under(root, getattr(option, "cmake_build_dir", None) or "build")
    if not (source / "CMakeLists.txt").is_file():
        raise BadInput(f"-p cmake_ninja: no CMakeLists.txt in {source} (set --cmake-source-dir)")
    if build.exists() and not build.is_dir():
        raise BadInput(f"-p cmake_ninja: build directory {build} is not a directory")
    _check_cache(build, source)
    args = (*(CCACHE_ARGS if ccache else ()), *(getattr(option, "cmake_arg", None) or ()))
    return Settings(cmake=tools["cmake"], ninja=tools["ninja"], source_dir=source,
                    build_dir=build, cmake_args=tuple(args),
                    targets=tuple(getattr(option, "ninja_target", None) or ()),
                    jobs=getattr(option, "ninja_jobs", None))


def _under(root: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else root / p))


def _check_cache(build: Path, source: Path) -> None:
    """An existing build directory must be a Ninja one for ``source`` (else every step fails)."""
    try:
        text = (build / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    entries = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith(("#", "//")):
            entries[key.split(":", 1)[0]] = value
    generator = entries.get("CMAKE_GENERATOR")
    if generator is not None and generator != "Ninja":
        raise BadInput(f"-p cmake_ninja: {build} was configured with the '{generator}' "
                       "generator; use another --cmake-build-dir")
    home = entries.get("CMAKE_HOME_DIRECTORY")
    if home is not None and Path(home).resolve() != source.resolve():
        raise BadInput(f"-p cmake_ninja: {build} was configured for the sources in {home}, "
                       f"not {source}; use another --cmake-build-dir")


@hookimpl
def bisectkit_configure(config: Config) -> None:
    global _config, _settings
    _config = config
    _settings = None
    if config.run is None:
        return  # not a `run` command: nothing to build, nothing to check
    root = config.root if config.root is not None else Path.cwd()
    _settings = settings_from(config.option, Path(root))
    _settings.check_env(dict(os.environ))
    config.cache_env.extend(CMAKE_ENV)
    if config.run.build:
        config.console.line(f"cmake_ninja: ignoring the build command {config.run.build!r}: "
                            "this plugin builds each step", style="yellow")


@hookimpl(tryfirst=True)
def bisectkit_build(step: Step) -> Outcome | None:
    config, settings = _config, _settings
    if config is None or settings is None or config.run is None:
        return None
    total = config.run.timeout
    console = config.console
    done: list[Outcome] = []
    if settings.needs_configure():
        # Forget the old arguments first: an interrupted configure must run again.
        settings.forget_configure()
        cmd = [settings.cmake, *settings.configure_args()]
        console.phase("configure", _shown(cmd))
        configured = run_command(cmd, cwd=step.workdir, env=step.env, timeout=total,
                                 echo=console.file, keep=config.run.keep_output)
        step.extra["cmake_configure_s"] = round(configured.duration, 3)
        if not configured.ok:
            return configured
        settings.remember_configure(step.env)
        done.append(configured)
    left = None if total is None else total - sum(o.duration for o in done)
    if left is not None and left <= 0:
        return _combine(done, total, timed_out=True)
    cmd = [settings.ninja, *settings.build_args()]
    console.phase("build", _shown(cmd))
    done.append(run_command(cmd, cwd=step.workdir, env=step.env, timeout=left,
                            echo=console.file, keep=config.run.keep_output))
    return _combine(done, total)


def cmake_env(env: dict[str, str]) -> dict[str, str | None]:
    """The values of :data:`CMAKE_ENV` in ``env`` (None: not set)."""
    return {name: env.get(name) for name in CMAKE_ENV}


def _shown(cmd: Sequence[str]) -> str:
    """The command as printed: the tool by name, not by its full path."""
    return shlex.join([Path(cmd[0]).name, *cmd[1:]])


def _combine(outcomes: Sequence[Outcome], total: float | None,
             timed_out: bool = False) -> Outcome:
    """One outcome for configure + build: the last one's status, every output, the sum of times."""
    last = outcomes[-1]
    timed_out = timed_out or last.timed_out
    return Outcome(
        exit_status=None if timed_out else last.exit_status,
        signal=None if timed_out else last.signal,
        output="".join(o.output for o in outcomes),
        timed_out=timed_out,
        duration=sum(o.duration for o in outcomes),
        timeout=total if timed_out else last.timeout,
    )
