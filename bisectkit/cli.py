"""Command line: ``bisectkit`` and ``git bisect-patched``.

``build_parser()`` + ``main(argv=None) -> int``; domain errors become exit
codes in :func:`_dispatch` only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

from bisectkit import __version__, engine, integrate, submodule
from bisectkit import status as stack_status
from bisectkit.classify import Rules, make_plugin_manager, validate_rules
from bisectkit.console import Console
from bisectkit.driver import Bisector, RunOptions, VerdictCache, run_identity
from bisectkit.engine import Decision, Found, Inconclusive, Next
from bisectkit.errors import EXIT_INTERRUPTED, Aborted, BadInput, BisectkitError
from bisectkit.git import Repo, find_superproject
from bisectkit.session import Session, SessionStore

GIT_PROG = "git bisect-patched"


# -- parsers --------------------------------------------------------------------
def _add_target_options(p: argparse.ArgumentParser) -> None:
    """What is bisected: shared by ``bisectkit run`` and ``git bisect-patched start``."""
    p.add_argument("--submodule", action="append", default=[], metavar="PATH",
                   help="the patched submodule to bisect, relative to the superproject root "
                        "(default: git config bisectkit.submodule); with --integrate: a "
                        "submodule to update at each step (repeatable; default: all)")
    p.add_argument("--integrate", action="store_true",
                   help="bisect superproject commits (the integrate branch) instead, "
                        "updating submodules at every step")
    p.add_argument("--upstream", metavar="REF",
                   help="upstream ref in the submodule (default: git config bisectkit.upstream, "
                        "then upstream/main, origin/main, origin/master)")
    p.add_argument("--first-parent", action="store_true",
                   help="follow first parents only (the default)")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run options")
    g.add_argument("--build", metavar="CMD",
                   help="shell command run in the superproject root before the repro at every "
                        "step; a failing build marks the step skip (default: git config "
                        "bisectkit.build)")
    g.add_argument("--good-if", action="append", default=[], metavar="REGEX",
                   help="mark good when REGEX matches the repro's output "
                        "(overrides the exit status)")
    g.add_argument("--bad-if", action="append", default=[], metavar="REGEX",
                   help="mark bad when REGEX matches (beats --skip-if and --good-if)")
    g.add_argument("--skip-if", action="append", default=[], metavar="REGEX",
                   help="mark skip when REGEX matches (beats --good-if)")
    g.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                   help="kill a build or repro running longer than this; the step is skipped")
    g.add_argument("--json", metavar="FILE", help="write the result as JSON (atomically)")
    g.add_argument("--no-cache", action="store_true",
                   help="do not reuse verdicts of trees already tested with the same commands")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _add_repro(p: argparse.ArgumentParser) -> None:
    p.add_argument("repro", nargs=argparse.REMAINDER, metavar="[--] REPRO [ARGS...]",
                   help="command that exits 0 when good, 1-127 (not 125) when bad, 125 to skip")


def build_parser(git_mode: bool = False) -> argparse.ArgumentParser:
    """Parser for ``git bisect-patched`` (``git_mode``) or for ``bisectkit``."""
    parser = argparse.ArgumentParser(
        prog=GIT_PROG if git_mode else "bisectkit",
        description="Bisect the upstream commits of a patched submodule, re-applying the "
                    "local patch stack at every step.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    if not git_mode:
        p = sub.add_parser("run", help="start, run, report and reset in one go")
        _add_target_options(p)
        p.add_argument("--good", action="append", required=True, metavar="REV",
                       help="a known good upstream revision (repeatable)")
        p.add_argument("--bad", required=True, metavar="REV", help="a known bad upstream revision")
        _add_run_options(p)
        _add_repro(p)
        p.set_defaults(func=cmd_oneshot)
        p = sub.add_parser(
            "status", help="show a patched submodule against its upstream",
            usage="bisectkit status [--submodule PATH] [--upstream REF] [--json] [--limit N] "
                  "[-- PATHSPEC...]")
        p.add_argument("--submodule", metavar="PATH",
                       help="default: git config bisectkit.submodule, or the only submodule")
        p.add_argument("--upstream", metavar="REF",
                       help="default: git config bisectkit.upstream, then upstream/main, "
                            "origin/main, origin/master")
        p.add_argument("--json", action="store_true", help="print JSON instead")
        p.add_argument("--limit", type=int, default=20, metavar="N",
                       help="show the newest N affecting upstream commits (0: all; default 20)")
        p.add_argument("pathspec", nargs="*", metavar="PATHSPEC",
                       help="count only upstream commits touching these path prefixes")
        p.set_defaults(func=cmd_stack_status)
        return parser

    p = sub.add_parser(
        "start", help="start a session and check out the first candidate",
        usage=f"{GIT_PROG} start (--submodule PATH [--upstream REF] | --integrate "
              "[--submodule PATH]...) [--first-parent] BAD GOOD... [-- PATHSPEC...]",
        epilog="PATHSPEC (after --) keeps only candidates that change those path prefixes.")
    _add_target_options(p)
    p.add_argument("bad", metavar="BAD", help="a known bad upstream revision")
    p.add_argument("good", nargs="+", metavar="GOOD", help="known good upstream revisions")
    p.set_defaults(func=cmd_start, pathspec=[])
    for verdict in engine.VERDICTS:
        p = sub.add_parser(verdict, help=f"mark revisions (default: the one under test) {verdict}")
        p.add_argument("revs", nargs="*", metavar="REV")
        p.set_defaults(func=cmd_mark, verdict=verdict)
    p = sub.add_parser("run", help="build and test candidates automatically until done")
    _add_run_options(p)
    _add_repro(p)
    p.set_defaults(func=cmd_run)
    sub.add_parser("status", help="show the session").set_defaults(func=cmd_status)
    sub.add_parser("log", help="print a log that 'replay' accepts").set_defaults(func=cmd_log)
    p = sub.add_parser("replay", help="start over from a log")
    p.add_argument("file")
    p.set_defaults(func=cmd_replay)
    sub.add_parser("reset", help="restore every HEAD and end the session").set_defaults(
        func=cmd_reset)
    return parser


# -- entry points ---------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """``bisectkit`` console script."""
    return _dispatch(argv, git_mode=False)


def git_main(argv: Sequence[str] | None = None) -> int:
    """``git-bisect-patched`` console script (``git bisect-patched ...``)."""
    return _dispatch(argv, git_mode=True)


def _dispatch(argv: Sequence[str] | None, git_mode: bool) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(git_mode)
    pathspec: list[str] = []
    if argv[:1] == ["start"] and "--" in argv:
        # `start <bad> <good>... -- <pathspec>...`: argparse cannot tell the
        # two positional lists apart, so split them here.
        cut = argv.index("--")
        argv, pathspec = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    if pathspec:
        args.pathspec = pathspec
    console = Console()
    try:
        with _sigterm_as_interrupt():
            return int(args.func(args, console))
    except BisectkitError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the same clean-up path as Ctrl-C."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_shielded(action: Callable[[], None]) -> None:
    """Run clean-up ``action`` to completion even if Ctrl-C arrives just before the shield."""
    while True:
        try:
            with _shielded():
                action()
            return
        except KeyboardInterrupt:
            # Raised before the shield went up (signals are ignored inside it),
            # so nothing of ``action`` ran yet: start it again.
            continue


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while restoring, so a second Ctrl-C cannot leave a half reset."""
    saved = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


# -- helpers ----------------------------------------------------------------------
def _open() -> tuple[Repo, SessionStore]:
    sp = find_superproject(Path.cwd())
    return sp, SessionStore(sp.git_dir)


def _require_no_session(store: SessionStore) -> None:
    if store.exists():
        raise BadInput(f"a bisect-patched session is already in progress ({store.session_path}); "
                       f"finish it or run '{GIT_PROG} reset'")


def _run_options(args: argparse.Namespace, sp: Repo) -> RunOptions:
    repro = list(args.repro)
    if repro[:1] == ["--"]:
        repro = repro[1:]
    if not repro:
        raise BadInput("no repro command given")
    repro[0] = _resolve_command(repro[0])
    rules = Rules(tuple(args.good_if), tuple(args.bad_if), tuple(args.skip_if))
    problem = validate_rules(rules)
    if problem:
        raise BadInput(problem)
    build = args.build if args.build is not None else sp.config_get("bisectkit.build")
    return RunOptions(repro=tuple(repro), build=build or None, rules=rules,
                      timeout=args.timeout, use_cache=not args.no_cache)


def _resolve_command(word: str) -> str:
    """Absolute path of the repro, checked before anything is touched."""
    if os.sep in word:
        path = Path(word).resolve()
        if not path.is_file():
            raise BadInput(f"repro not found: {word}")
        if not os.access(path, os.X_OK):
            raise BadInput(f"repro is not executable: {word} (chmod +x it)")
        return str(path)
    found = shutil.which(word)
    if found is None:
        raise BadInput(f"repro not found: {word} (not a file and not on PATH)")
    return found


def _start_session(args: argparse.Namespace, sp: Repo) -> Session:
    """Validate the target options against the repositories; a new session (nothing touched)."""
    pathspec = list(getattr(args, "pathspec", []))
    if args.integrate:
        return integrate.start(sp, integrate.IntegrateRequest(
            bad=args.bad, good=list(args.good), submodules=list(args.submodule),
            upstream=args.upstream, pathspec=pathspec))
    if len(args.submodule) > 1:
        raise BadInput("--submodule is given more than once: bisect one submodule at a time, "
                       "or several with --integrate")
    path = args.submodule[0] if args.submodule else sp.config_get("bisectkit.submodule")
    if not path:
        raise BadInput("say what to bisect: --submodule PATH, --integrate, or "
                       "git config bisectkit.submodule PATH")
    return submodule.start(sp, submodule.StartRequest(
        submodule=path, upstream=args.upstream, bad=args.bad, good=list(args.good),
        pathspec=pathspec))


def _new_session(args: argparse.Namespace, sp: Repo, store: SessionStore,
                 console: Console) -> Bisector:
    """Validate, save and announce a new session (no checkout yet)."""
    _require_no_session(store)
    session = _start_session(args, sp)
    store.save(session)
    b = Bisector(sp, store, session, console)
    console.header(b.strategy.header_lines(),
                   engine.steps_estimate(len(session.candidates) - 1))
    return b


def _finish(b: Bisector, decision: Decision) -> int:
    if isinstance(decision, Next):
        return 0
    return b.show_result(decision)


def _status_word(decision: Decision | None) -> str:
    if isinstance(decision, Found):
        return "found"
    if isinstance(decision, Inconclusive):
        return "inconclusive"
    return "aborted"


def _run_with(b: Bisector, opts: RunOptions, json_path: str | None,
              on_exit: Callable[[], None] | None) -> int:
    """Run the loop; write the JSON result and call ``on_exit`` however it ends."""
    pm = make_plugin_manager(opts.rules)
    cache = (VerdictCache(b.store, run_identity(opts, Path(b.session.root)))
             if opts.use_cache else None)
    decision: Decision | None = None
    error: str | None = None
    try:
        decision = b.run(opts, pm, cache)
        b.console.summary(b.session.steps)
        return b.show_result(decision, opts.argv())
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    except Exception as exc:
        error = str(exc)
        raise
    finally:

        def wrap_up() -> None:
            if json_path:
                b.write_json(json_path, _status_word(decision), decision, error)
            if on_exit is not None:
                on_exit()

        _run_shielded(wrap_up)


# -- commands -----------------------------------------------------------------------
def cmd_oneshot(args: argparse.Namespace, console: Console) -> int:
    """``bisectkit run``: start + run + report + reset; always restores."""
    sp, store = _open()
    _require_no_session(store)
    opts = _run_options(args, sp)
    b = _new_session(args, sp, store, console)

    def restore() -> None:
        for moved in b.reset():
            console.line(f"restored {moved}", style="dim")

    try:
        return _run_with(b, opts, args.json, restore)
    except Aborted:
        console.error("aborted; the superproject and the submodule were restored")
        raise


def cmd_start(args: argparse.Namespace, console: Console) -> int:
    sp, store = _open()
    b = _new_session(args, sp, store, console)
    decision = b.advance()
    if isinstance(decision, Next):
        console.line(f"Build and run the repro, then: {GIT_PROG} good|bad|skip  "
                     f"(or: {GIT_PROG} run [--build CMD] REPRO)", style="dim")
    return _finish(b, decision)


def cmd_mark(args: argparse.Namespace, console: Console) -> int:
    sp, store = _open()
    b = Bisector(sp, store, store.load(), console)
    b.mark(args.verdict, args.revs)
    return _finish(b, b.advance())


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    sp, store = _open()
    b = Bisector(sp, store, store.load(), console)
    opts = _run_options(args, sp)
    try:
        return _run_with(b, opts, args.json, None)
    except (Aborted, KeyboardInterrupt):
        console.error(f"stopped; the session is kept: fix things, then '{GIT_PROG} run' again "
                      f"or '{GIT_PROG} reset'")
        raise


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    sp, store = _open()
    b = Bisector(sp, store, store.load(), console)
    s = b.session
    console.header(b.strategy.header_lines(), engine.steps_estimate(len(s.candidates) - 1))
    counts = {v: sum(1 for e in s.verdict_map().values() if e == v) for v in engine.VERDICTS}
    console.line(f"  verdicts: {counts['good']} good, {counts['bad']} bad, "
                 f"{counts['skip']} skip (the bad end included)")
    decision = b.decide()
    if isinstance(decision, Next):
        lo, hi = engine.bounds(s.candidates, s.verdict_map())
        console.line(f"  {decision.remaining} candidates left between "
                     f"{'the good end' if lo < 0 else s.candidates[lo][:12]} and "
                     f"{s.candidates[hi][:12]}, roughly {decision.steps_left} steps")
        if s.current:
            console.line(f"  under test: {s.current} "
                         f"{b.strategy.describe(s.current).subject}")
        return 0
    return b.show_result(decision)


def cmd_stack_status(args: argparse.Namespace, console: Console) -> int:
    """``bisectkit status``: read-only, works with or without a session."""
    sp = find_superproject(Path.cwd())
    data = stack_status.collect(sp, args.submodule, args.upstream, args.pathspec)
    if args.json:
        console.file.write(json.dumps(data, indent=2) + "\n")
    else:
        console.stack_status(data, args.limit)
    return 0


def cmd_log(args: argparse.Namespace, console: Console) -> int:
    sp, store = _open()
    b = Bisector(sp, store, store.load(), console)
    for line in b.log_lines():
        console.line(line)
    return 0


def cmd_replay(args: argparse.Namespace, console: Console) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from exc
    commands = _parse_log(text, path)
    sp, store = _open()
    if store.exists():
        Bisector(sp, store, store.load(), console).reset()
    start_args = commands[0]
    parser = build_parser(git_mode=True)
    pathspec: list[str] = []
    if "--" in start_args:
        cut = start_args.index("--")
        start_args, pathspec = start_args[:cut], start_args[cut + 1:]
    args = parser.parse_args(start_args)
    args.pathspec = pathspec
    b = _new_session(args, sp, store, console)
    for words in commands[1:]:
        b.mark(words[0], words[1:], source="replay")  # type: ignore[arg-type]
    return _finish(b, b.advance())


def _parse_log(text: str, path: Path) -> list[list[str]]:
    commands: list[list[str]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        if words[:2] == ["git", "bisect-patched"]:
            words = words[2:]
        elif words[:1] == ["git-bisect-patched"]:
            words = words[1:]
        else:
            raise BadInput(f"{path}:{n}: not a bisect-patched command: {line}")
        if not words or words[0] not in ("start", *engine.VERDICTS):
            raise BadInput(f"{path}:{n}: cannot replay: {line}")
        if (words[0] == "start") != (not commands):
            raise BadInput(f"{path}:{n}: the log must begin with exactly one 'start'")
        commands.append(words)
    if not commands:
        raise BadInput(f"{path}: no 'start' command in the log")
    return commands


def cmd_reset(args: argparse.Namespace, console: Console) -> int:
    sp, store = _open()
    if not store.exists():
        console.line("not bisecting; nothing to reset")
        return 0
    b = Bisector(sp, store, store.load(), console)
    moved: list[str] = []
    _run_shielded(lambda: moved.extend(b.reset()))
    for line in moved:
        console.line(f"restored {line}")
    if not moved:
        console.line("nothing had moved; session ended")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
