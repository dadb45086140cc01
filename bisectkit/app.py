"""The ``bisectkit`` and ``git-bisect-patched`` entry points.

``main(argv) -> int``: load plugins, parse the command line (with their options)
with the program's parser (:mod:`bisectkit.commands.registry`), prepare what every
command gets (a :class:`~bisectkit.commands.context.Context`), run the handler of
the command chosen, and map every error to its exit code in one place.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import os
import shlex
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO, cast

import pluggy

from bisectkit import safetext
from bisectkit.cli import about, parallelopts, requests
from bisectkit.cli.options import plugin_option, repro_warning
from bisectkit.commands import registry
from bisectkit.commands.command import chosen
from bisectkit.commands.context import Context
from bisectkit.commands.registry import build_parser
from bisectkit.commands.state import session_terms
from bisectkit.errors import BadInput, BisectkitError, ExitCode
from bisectkit.execute.builtin import BuildPlugin, ReproPlugin
from bisectkit.execute.classify import ExitStatusPlugin, RulesPlugin
from bisectkit.git.repo import Repo, find_superproject
from bisectkit.model import GIT_PROG, Config, RunOptions
from bisectkit.pipeline import outputs
from bisectkit.plugin import manager as plugins
from bisectkit.plugin.facade import Hooks
from bisectkit.safety import signals
from bisectkit.store.session import SessionStore
from bisectkit.store.steplog import StepLogWriter
from bisectkit.text import fold
from bisectkit.ui.console import Console
from bisectkit.ui.observers import ConsoleObserver
from bisectkit.ui.outstream import Resilient
from bisectkit.ui.report import outputs as formats


# -- entry points ---------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """``bisectkit`` console script."""
    return _dispatch(argv, git_mode=False)


def git_main(argv: Sequence[str] | None = None) -> int:
    """``git-bisect-patched`` console script (``git bisect-patched ...``)."""
    return _dispatch(argv, git_mode=True)


def _dispatch(argv: Sequence[str] | None, git_mode: bool) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = GIT_PROG if git_mode else "bisectkit"
    real = sys.stdout
    # argparse's -h and --version write here and swallow a write error: kept, and said.
    out = Resilient(real)
    sys.stdout = cast(TextIO, out)
    try:
        console = Console()
        try:
            code = _run(argv, git_mode, prog, console)
        except SystemExit as exc:  # argparse: -h, --version, a usage error
            code = exc.code if isinstance(exc.code, int) else ExitCode.USAGE if exc.code else 0
        out.flush()
        return _output_kept(prog, console.lost() or out.lost, code)
    finally:
        sys.stdout = real


def _run(argv: list[str], git_mode: bool, prog: str, console: Console) -> int:
    try:
        with signals.as_interrupt():
            if argv[:1] == ["--help"]:  # the manual; -h stays argparse's help
                from bisectkit.commands.manpage import show_manual
                return show_manual(build_parser(git_mode, lazy=True), sys.stdout)
            if not argv:  # what to type, as 'git bisect' alone says (errors are one line)
                from bisectkit.commands.help import cmd_help
                cmd_help(build_parser(git_mode, lazy=True), None, sys.stderr)
                return ExitCode.USAGE
            ctx, args = _prepare(argv, git_mode, console)
            return chosen(args).handler(ctx, args)
    except BisectkitError as exc:
        # One line, always: messages from git or pluggy may span several.
        message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        _say(f"{prog}: error: {message}")
        return exc.exit_code
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            return _internal(prog, exc)
        # The machine, not bisectkit: a full disk, a read-only file system. The
        # journal is intact, so 'reset' finishes once it is fixed.
        _say(f"{prog}: error: {exc.strerror} ({exc.filename or 'writing'}); free the space or "
             f"fix the file system, then run the command again or '{GIT_PROG} reset'")
        return ExitCode.GIT_FAILURE
    except KeyboardInterrupt as exc:
        if isinstance(exc, signals.Interrupted) and exc.signum != signal.SIGINT:
            _say(f"{prog}: interrupted by {signal.Signals(exc.signum).name}")
            return exc.exit_code
        _say(f"{prog}: interrupted")
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a bug (ours or a plugin's): show it, but not as exit 1
        return _internal(prog, exc)


def _output_kept(prog: str, lost: OSError | None, code: int) -> int:
    """``code``, unless output was ``lost`` (``> file`` on a full disk): one line, exit 4."""
    if lost is None:
        return code
    _say(f"{prog}: error: output lost: {lost.strerror or lost}; free the space "
         "(or write elsewhere) and run the command again")
    with contextlib.suppress(OSError):  # what stdout buffers must not fail at exit (120)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code or ExitCode.GIT_FAILURE


#: OS errors that are the machine's state, reported as one line (not as a bug): EFBIG is
#: a file size limit (ulimit -f), EPERM an immutable file (chattr +i) even for root.
_ENVIRONMENT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG,
                       errno.EACCES, errno.EPERM)


def _internal(prog: str, exc: BaseException) -> int:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(safetext.lines(traceback.format_exc()))
    _say(f"{prog}: internal error: {type(exc).__name__}: {exc}")
    return ExitCode.INTERNAL


def _say(line: str) -> None:
    """One line on stderr, its control characters shown (a path or a subject may carry
    some); a terminal that is gone (SIGHUP) must not turn into a traceback. On a terminal
    a line wider than it ($COLUMNS when set) is broken between words, the continuations
    indented; piped, it stays one line, which scripts and logs search for whole."""
    text = safetext.one_line(line)
    width = _stderr_width()
    with contextlib.suppress(OSError, ValueError):
        print("\n".join(fold(text, width) if width else [text]), file=sys.stderr, flush=True)


def _stderr_width() -> int | None:
    """The columns of the terminal errors go to ($COLUMNS when set, as for the console);
    ``None`` when stderr is no terminal."""
    with contextlib.suppress(OSError, ValueError):
        if sys.stderr.isatty():
            columns = os.environ.get("COLUMNS", "")
            return int(columns) if columns.isdigit() and int(columns) > 0 else \
                os.get_terminal_size(sys.stderr.fileno()).columns
    return None


def _builtins(console: Console, sp: Repo | None) -> list[tuple[str, object]]:
    """The built-in plugins, by the names ``-p no:NAME`` blocks."""
    builtins: list[tuple[str, object]] = [
        ("exit-status", ExitStatusPlugin()),
        ("rules", RulesPlugin()),
        ("build", BuildPlugin()),
        ("repro", ReproPlugin()),
        ("console", ConsoleObserver(console)),
    ]
    if sp is not None:
        builtins.append(("step-log", StepLogWriter(SessionStore(sp.git_dir).logs_dir)))
    return [*builtins, *formats.builtin_outputs(sp, console)]


def _prepare(argv: list[str], git_mode: bool,
             console: Console) -> tuple[Context, argparse.Namespace]:
    """Load plugins, parse the command line with their options, configure them."""
    original = list(argv)
    outside: BadInput | None = None
    try:
        sp: Repo | None = find_superproject(Path.cwd())
    except BadInput as exc:
        sp, outside = None, exc  # said by the commands that need a repository
    from_config = sp.config_get_all("bisectkit.plugins") if sp else []
    # visualize's git log options are git's (-p is git log's patch, not a plugin).
    own = _split_visualize(argv)[0] if _visualizes(argv) else argv
    req = plugins.request(plugins.scan_argv(own), dict(os.environ), from_config)
    pm, origins = plugins.make_plugin_manager(_builtins(console, sp), req, dict(os.environ))
    # Only the parser of the command run is completed: only its module is imported.
    parser = build_parser(git_mode, pm, lazy=True)
    if git_mode and sp is not None:
        argv = _term_as_mark(parser, argv, SessionStore(sp.git_dir))
    args = _parse(parser, argv, lambda name: pm.has_plugin(name) or pm.is_blocked(name))
    warning = repro_warning(original, args)
    if warning:
        _say(warning)
    if getattr(args, "json", None) == "-":
        console.to_stderr()  # stdout holds nothing but the JSON result
    is_run = chosen(args).runs
    if is_run and outside is not None and chosen(args).needs_repository(args):
        # First: a repro not found here is not the problem when here is no repository.
        raise outside
    if is_run:
        formats.check_not_blocked(args, pm.is_blocked)
    run = _run_options(args, sp, pm, origins) if is_run else None
    flags = requests.run_flags(args) if is_run else requests.RunFlags()
    if run is not None:
        outputs.apart_from_inputs(flags.outputs(), run, sp.workdir if sp else Path.cwd(),
                                  plugins.source_files(pm, origins))
    config = Config(option=args, pluginmanager=pm, root=sp.workdir if sp else None,
                    console=console, run=run, origins=origins)
    Hooks(pm).configure(config)
    prog = GIT_PROG if git_mode else "bisectkit"
    ctx = Context(console=console, pm=pm, config=config, superproject=sp, outside=outside,
                  parser=parser,
                  command=shlex.join([*prog.split(), *original]),
                  force_ignored=bool(getattr(args, "force_ignored", False)),
                  deepen=bool(getattr(args, "deepen", False)),
                  plugin_specs=tuple(getattr(args, "plugin", ())),
                  typed_repro=tuple(getattr(args, "repro", ())),
                  flags=flags)
    return ctx, args


def _term_as_mark(parser: argparse.ArgumentParser, argv: list[str],
                  store: SessionStore) -> list[str]:
    """``argv`` with a session's own term (``fast`` after ``start --term-new fast``) as the
    mark of its side (``new``), as ``git bisect fast`` is; any other word is left to the
    parser (an unknown command: its one line)."""
    word = argv[0] if argv else ""
    if not word or word.startswith("-") or about.subcommand(parser, word) is not parser:
        return argv
    terms = session_terms(store)
    if terms is None or word not in (terms.old, terms.new):
        return argv
    return ["old" if word == terms.old else "new", *argv[1:]]


def _parse(parser: argparse.ArgumentParser, argv: list[str],
           known: Callable[[str], bool]) -> argparse.Namespace:
    """``argv`` parsed; ``known(name)``: is plugin ``name`` loaded or blocked (an option
    refused may be a plugin's that is not)."""
    pathspec: list[str] = []
    if argv[:1] == ["start"] and "--" in argv:
        # `start <bad> <good>... -- <pathspec>...`: argparse cannot tell the
        # two positional lists apart, so split them here.
        cut = argv.index("--")
        argv, pathspec = argv[:cut], argv[cut + 1:]
    log_args: list[str] = []
    if _visualizes(argv):
        argv, log_args = _split_visualize(argv)  # git log's options, in their order
    args, extras = parser.parse_known_args(argv)
    if log_args:
        args.log_args = log_args
    if extras:  # said by the subcommand's parser, whose options they were meant to be
        sub = about.subcommand(parser, args.command)
        said = None
        if sub.get_default("plugin_actions") is not None and extras[0].startswith("--"):
            # It takes plugins' options: the option may be one of a plugin not loaded.
            said = plugin_option(extras[0].split("=", 1)[0], known)
        sub.error(said or f"unrecognized arguments: {' '.join(extras)}")
    if pathspec:
        args.pathspec = pathspec
    return args


def _visualizes(argv: list[str]) -> bool:
    """Is the command line ``visualize``'s (whose other words are git log's)?"""
    return argv[:1] != [] and argv[0] in (registry.VISUALIZE.name, *registry.VISUALIZE.aliases)


def _split_visualize(argv: list[str]) -> tuple[list[str], list[str]]:
    """``visualize``'s command line as (bisectkit's words, git log's words)."""
    from bisectkit.commands import visualize  # its module, only for its command line

    return visualize.split_argv(argv)


def _run_options(args: argparse.Namespace, sp: Repo | None, pm: pluggy.PluginManager,
                 origins: dict[str, str]) -> RunOptions:
    # The built-ins are bisectkit itself: never part of the cache key.
    loaded = tuple((name, _source_digest(plugin)) for name, plugin in pm.list_name_plugin()
                   if origins.get(name) != plugins.BUILTIN_ORIGIN and plugin is not None)
    state = requests.PluginState(loaded, tuple(getattr(args, "plugin_actions", ())))
    if sp is not None:
        parallelopts.defaults(args, sp.config_get)
    return requests.run_options(
        args, sp.workdir if sp is not None else Path.cwd(),
        sp.config_get("bisectkit.build") if sp is not None else None,
        Hooks(pm).has_repro_plugin(), state)


def _source_digest(plugin: object) -> str:
    """Hash of a plugin's source file, so editing a plugin invalidates cached verdicts."""
    path = plugins.source_file(plugin)
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else ""
    except OSError:
        return ""


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
