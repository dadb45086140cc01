"""The option groups the subcommands share: run options, parallel steps, plugins, repro.

The commands that take them declare them (:mod:`bisectkit.commands`, one module per
command); plugins add theirs to the run commands through ``bisectkit_addoption``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable

import pluggy

from bisectkit.cli.argtypes import (
    MAX_JOBS,
    byte_size,
    command,
    jobs,
    nonempty,
    resource,
    scheduler_address,
    seconds,
    whole_number,
)
from bisectkit.model import (
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    DEFAULT_MAX_SKIPS,
    DEFAULT_NO_WORKERS_TIMEOUT,
    VERDICTS,
)
from bisectkit.patches.upstream import CONFIG_KEY
from bisectkit.plugin import manager as plugins
from bisectkit.plugin.facade import Hooks

#: The run options that name a file the run writes, each written by its format in
#: :mod:`bisectkit.ui.report.outputs` (a new format: its option here and below, its class
#: there); checked before anything moves (:func:`bisectkit.cli.precheck.output_path`).
OUTPUT_OPTIONS = ("--json", "--report", "--trace")

UPSTREAM_HELP = (f"upstream ref in the submodule (default: git config {CONFIG_KEY}, else guessed "
                 "from the remote-tracking branches: the nearest merge-base with HEAD, "
                 "printed with the reason)")


# -- parsers --------------------------------------------------------------------

def add_force_ignored(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--force-ignored", action="store_true",
                   help="when an untracked or ignored file sits where a candidate tracks one, "
                        "set it aside (in the git dir) and put it back at the end, instead of "
                        "refusing")


def add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run options")
    g.add_argument("--build", metavar="CMD", type=command,
                   help="shell command run in the superproject root before the repro at every "
                        "step; a failing build marks the step skip (default: git config "
                        "bisectkit.build; where that is set, --build true runs none)")
    add_verdict_options(g)
    g.add_argument("--json", metavar="FILE",
                   help="write the result as JSON (atomically); '-' writes it to stdout and "
                        "everything else to stderr")
    _add_cache_options(g)
    g.add_argument("--verify-range", action="store_true",
                   help="test the good and bad ends first; stop (exit 5) if they are not")
    g.add_argument("--no-verify", action="store_true",
                   help="do not test an untested end that the answer rests on (by default "
                        "it is tested, and one that does not test as claimed exits 5)")
    g.add_argument("--max-env-skips", type=whole_number(0), default=DEFAULT_MAX_ENV_SKIPS,
                   metavar="N",
                   help="stop (exit 3) after N consecutive steps skipped for the machine's "
                        "sake: a timeout, a command that cannot run, a driver the machine "
                        f"should have (default {DEFAULT_MAX_ENV_SKIPS}; 0: never stop)")
    g.add_argument("--max-skips", type=whole_number(0), default=DEFAULT_MAX_SKIPS,
                   metavar="N",
                   help="stop (exit 3) after N consecutive tested steps skipped for the same "
                        "reason (exit 125, a timeout...); a failed build, a patch conflict or "
                        "a cached verdict does not count "
                        f"(default {DEFAULT_MAX_SKIPS}; 0: never stop)")
    g.add_argument("--check-stack", action="store_true",
                   help="once found, test the first bad commit without the patch stack (one "
                        "more build) and print the --stack command if the stack is implicated")
    g.add_argument("--trace", metavar="FILE",
                   help="write a Chrome trace-event JSON of every step (Perfetto)")
    add_parallel_options(p)
    g.add_argument("--report", metavar="FILE",
                   help="write a Markdown report ready to paste into an issue")
    add_plugin_option(g)



def add_verdict_options(g: argparse._ArgumentGroup) -> None:
    """How a repro run becomes a verdict: the rules, the timeout, the output kept (``run``
    and ``actions`` alike)."""
    g.add_argument("--good-if", action="append", default=[], metavar="REGEX",
                   help="mark good when REGEX matches the repro's output "
                        "(overrides the exit status)")
    g.add_argument("--bad-if", action="append", default=[], metavar="REGEX",
                   help="mark bad when REGEX matches (beats --skip-if and --good-if)")
    g.add_argument("--skip-if", action="append", default=[], metavar="REGEX",
                   help="mark skip when REGEX matches (beats --good-if)")
    g.add_argument("--timeout", type=seconds, metavar="SECONDS",
                   help="kill a build or repro running longer than this (its process group)")
    g.add_argument("--timeout-verdict", choices=VERDICTS, default="skip",
                   help="verdict of a repro that timed out (default: skip); a timed-out "
                        "build is always skip")
    g.add_argument("--keep-output", type=byte_size, default=DEFAULT_KEEP, metavar="BYTES",
                   help="keep at most this much of each build's and repro's output (its head "
                        "and tail; lines matching the rules are kept from the middle); "
                        "suffixes K, M, G (default: 8M)")


def _add_cache_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--no-cache", action="store_true",
                   help="do not reuse verdicts of trees already tested with the same commands")
    g.add_argument("--cache-input", action="append", default=[], metavar="PATH",
                   type=nonempty,
                   help="a file or directory (hashed recursively) the verdict depends on that "
                        "no command names: changing it invalidates cached verdicts "
                        "(repeatable)")
    g.add_argument("--cache-env", action="append", default=[], metavar="NAME",
                   help="an environment variable the verdict depends on that no command or "
                        "script they name shows ($NAME, os.environ, getenv): its value joins "
                        "the cache key (repeatable; also git config bisectkit.cacheEnv)")


def add_parallel_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("parallel steps")
    g.add_argument("--jobs", "-j", type=jobs, metavar="K",
                   help="test K candidates at once, each in its own workspace (a clone "
                        "sharing objects with yours; kept between runs so builds stay warm); "
                        "1 tests in your own tree (default: git config bisectkit.jobs, else 1; "
                        f"at most {MAX_JOBS})")
    g.add_argument("--scheduler", type=scheduler_address, metavar="ADDRESS",
                   help="run the steps on a Dask cluster (tcp://HOST:PORT of a 'dask "
                        "scheduler', or tls://, ws://, wss://, ucx://; pip install "
                        "'bisectkit[dask]'); each worker builds in its own workspace "
                        "(default: git config bisectkit.scheduler)")
    add_workspace_root(g)
    g.add_argument("--resources", action="append", default=[], type=resource,
                   metavar="NAME=N",
                   help="with --scheduler: what a step needs of a worker, e.g. GPU=1 routes "
                        "steps to workers started with --resources GPU=1 (repeatable)")
    g.add_argument("--no-workers-timeout", type=seconds, metavar="SECONDS",
                   help="with --scheduler: stop (exit 3) when steps have waited SECONDS with "
                        "no worker able to run them (default: git config "
                        "bisectkit.no-workers-timeout, else "
                        f"{DEFAULT_NO_WORKERS_TIMEOUT:g})")


def add_workspace_root(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--workspace-root", metavar="DIR", type=nonempty,
                   help="where the workspaces live (default: git config "
                        "bisectkit.workspace-root, else .git/bisectkit/workspaces locally and "
                        "~/.cache/bisectkit/workspaces/WORKER on a Dask worker)")


def add_plugin_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    # Read before parsing by plugins.scan_argv; declared here for --help and validation.
    p.add_argument("-p", "--plugin", action="append", default=[], metavar="NAME|PATH",
                   help="load a plugin: a bundled one (iree_devices, flaky, cmake_ninja), a "
                        "module, or a .py file; no:NAME blocks one (repeatable; before the "
                        "repro)")


def add_repro(p: argparse.ArgumentParser) -> None:
    """The repro and its arguments: every word after the first positional one. Call it
    last: the command's long options so far are what :func:`repro_warning` looks for."""
    p.add_argument("repro", nargs=argparse.REMAINDER, metavar="[--] REPRO [ARGS...]",
                   help="command that exits 0 when good, 1-127 (not 125) when bad, 125 to skip")
    own: set[str] = {flag for action in p._actions for flag in action.option_strings
           if flag.startswith("--") and flag != "--help"}
    p.set_defaults(own_options=frozenset(own))


def repro_warning(argv: list[str], args: argparse.Namespace) -> str | None:
    """One line when a word after the repro is one of the command's own long options
    (``bisectkit run ... ./repro.sh --timeout 30``): it goes to the repro, which is
    rarely what was meant. Not when the user wrote ``--`` before the repro."""
    repro = list(getattr(args, "repro", None) or ())
    own: frozenset[str] = getattr(args, "own_options", frozenset())
    # Python versions differ in whether argparse keeps a '--' in the remainder: look at
    # the command line itself too.
    if not repro or repro[0] == "--" or argv[-len(repro) - 1:-len(repro)] == ["--"]:
        return None
    # Words after the repro's own '--' are meant for it (``./wrap.sh -- ninja --jobs 4``).
    mine = repro[1:repro.index("--")] if "--" in repro[1:] else repro[1:]
    found = list(dict.fromkeys(w for w in mine if w.split("=", 1)[0] in own))
    if not found:
        return None
    words = ", ".join(f"'{w}'" for w in found)
    return (f"warning: {words} after the repro {'is' if len(found) == 1 else 'are'} passed to "
            "it; put bisectkit options before the repro (or after '--' to silence this)")



def add_plugin_group(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    if pm is None:
        return
    group = p.add_argument_group("plugin options")
    Hooks(pm).addoption(group)
    # Remember the options plugins added: their values are part of the cache key
    # and of follow-up commands.
    p.set_defaults(plugin_actions=list(group._group_actions))


def plugin_option(flag: str, loaded: Callable[[str], bool]) -> str | None:
    """Why ``flag``, refused, did not parse, when it is an option of a bundled plugin the
    command line did not load (``loaded(name)``: loaded or blocked): name the plugin and
    how to load it (``--repeat`` without ``-p flaky``); None when no plugin has it."""
    for name in plugins.bundled():
        module = None if loaded(name) else plugins.load_bundled(name)
        add = getattr(module, "bisectkit_addoption", None)
        if add is None:
            continue
        probe = argparse.ArgumentParser(add_help=False)
        group = probe.add_argument_group()
        with contextlib.suppress(Exception):  # a plugin's bug is said when it is loaded
            add(parser=group)
        for action in group._group_actions:
            if flag in action.option_strings:
                usage = argparse.HelpFormatter("")._format_args(action, action.dest.upper())
                return (f"{flag} is an option of plugin {name}, which is not loaded: give "
                        f"-p {name} {flag} {usage}".rstrip())
    return None
