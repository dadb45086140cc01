"""The commands behind ``bisectkit`` and ``git bisect-patched``.

Each ``cmd_*`` takes the :class:`Context` built by :mod:`bisectkit.cli`
(parsed options, console, plugin manager) and returns an exit code; domain
errors are raised and mapped to exit codes by the CLI.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

from bisectkit import (
    engine,
    plugins,
    report,
    requests,
    signals,
    strategies,
)
from bisectkit import status as stack_status
from bisectkit.classify import validate_rules
from bisectkit.console import Console
from bisectkit.driver import Bisector
from bisectkit.engine import Decision, Found, Inconclusive, Next
from bisectkit.errors import Aborted, BadInput, BisectkitError
from bisectkit.git import Repo
from bisectkit.model import (
    SUPERPROJECT,
    VERDICTS,
    Config,
    IntegrateRequest,
    Rules,
    RunOptions,
    StackRequest,
    StartRequest,
    SubmoduleRequest,
    Terms,
)
from bisectkit.observers import StepLogWriter
from bisectkit.pipeline import GIT_PROG, Run
from bisectkit.runopts import VerdictCache, run_identity
from bisectkit.session import Session, SessionStore, write_json_atomic
from bisectkit.trace import Tracer


@dataclass
class Context:
    """Everything a command needs, prepared by the CLI."""

    args: argparse.Namespace
    console: Console
    pm: pluggy.PluginManager
    config: Config
    superproject: Repo | None
    #: The command line as typed (for "reproduce with" in reports).
    command: str = ""

    def open(self) -> tuple[Repo, SessionStore]:
        if self.superproject is None:
            raise BadInput(f"not inside a git repository: {Path.cwd()}")
        return self.superproject, SessionStore(self.superproject.git_dir)

    def run(self, sp: Repo) -> Run:
        """The owner of this command's changes (enter it to take the lock)."""
        return Run(sp, self.console, self.pm, self.command,
                   force_ignored=bool(getattr(self.args, "force_ignored", False)))

    def reader(self, sp: Repo, store: SessionStore) -> Bisector:
        """The session, for commands that only read it (no lock, moves nothing)."""
        if not store.exists() and store.journal_path.exists():
            raise BadInput(f"an interrupted bisection left changes to undo ({store.dir}); "
                           f"run '{GIT_PROG} reset'")
        return Bisector(sp, store, store.load(), self.console, self.pm, None)


# -- helpers ----------------------------------------------------------------------
def run_options(args: argparse.Namespace, sp: Repo | None, pm: pluggy.PluginManager,
                plugin_actions: list[argparse.Action]) -> RunOptions:
    """The run options, validated before anything is touched."""
    repro = list(args.repro)
    if repro[:1] == ["--"]:
        repro = repro[1:]
    if repro:
        repro[0] = _resolve_command(repro[0])
    elif not any(impl.plugin_name != "repro"
                 for impl in pm.hook.bisectkit_repro.get_hookimpls()):
        raise BadInput("no repro command given (and no plugin implements bisectkit_repro)")
    rules = Rules(tuple(args.good_if), tuple(args.bad_if), tuple(args.skip_if))
    problem = validate_rules(rules)
    if problem:
        raise BadInput(problem)
    build = args.build
    if build is None and sp is not None:
        build = sp.config_get("bisectkit.build")
    root = sp.workdir if sp is not None else Path.cwd()
    if build:
        _check_shell_command("--build", build, root)
    if repro:
        _check_interpreter(repro[0])
        if Path(repro[0]).name in _SHELLS and len(repro) > 2 and repro[1] == "-c":
            _check_shell_command("the repro", repro[2], root)
    # Verdicts depend on which plugins ran and with which options.
    loaded = [(name, _source_digest(plugin)) for name, plugin in pm.list_name_plugin()
              if name not in BUILTIN_NAMES and plugin is not None]
    options = [(a.dest, repr(getattr(args, a.dest, None))) for a in plugin_actions]
    plugin_argv = [w for spec in args.plugin for w in ("-p", spec)]
    plugin_argv += [w for a in plugin_actions for w in _option_words(a, getattr(args, a.dest))]
    for flag in ("json", "report", "trace"):
        value = getattr(args, flag, None)
        if value and not (flag == "json" and value == "-"):  # --json -: stdout
            check_output_path(f"--{flag}", value)
    inputs = tuple(_cache_input(p) for p in args.cache_input)
    return RunOptions(repro=tuple(repro), build=build or None, rules=rules,
                      timeout=args.timeout, timeout_verdict=args.timeout_verdict,
                      use_cache=not args.no_cache, plugin_options=tuple(loaded + options),
                      plugin_argv=tuple(plugin_argv), keep_output=args.keep_output,
                      verify_ends=not args.no_verify, max_env_skips=args.max_env_skips,
                      cache_inputs=tuple(dict.fromkeys(inputs)))


def _cache_input(value: str) -> str:
    """A ``--cache-input`` path made absolute (follow-up commands run from anywhere)."""
    path = Path(value).expanduser()
    if not path.exists():
        raise BadInput(f"--cache-input {value}: no such file or directory")
    if not (path.is_file() or path.is_dir()):
        raise BadInput(f"--cache-input {value}: not a regular file or a directory")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise BadInput(f"--cache-input {value}: permission denied")
    return os.path.abspath(path)


def check_output_path(flag: str, value: str) -> None:
    """Refuse an output file that could not be written, before a bisection of hours."""
    path = Path(value)
    if path.is_dir():
        raise BadInput(f"{flag} {value}: is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"{flag} {value}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"{flag} {value}: directory {parent} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise BadInput(f"{flag} {value}: the file is not writable")


def write_result(target: str, result: dict[str, Any]) -> None:
    """``--json FILE``: the result, atomically; ``--json -``: on stdout (the console
    then writes to stderr, so stdout parses as JSON)."""
    if target != "-":
        write_json_atomic(Path(target), result)
        return
    with contextlib.suppress(OSError, ValueError):  # a reader gone: nothing to tell it
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        sys.stdout.flush()


def _option_words(action: argparse.Action, value: object) -> list[str]:
    """A plugin option as it would be typed again (``--opt=value``, safe for ``-D...``)."""
    if value == action.default or not action.option_strings:
        return []
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return [flag]
    values = value if isinstance(value, list) else [value]
    return [f"{flag}={v}" for v in values]


def _source_digest(plugin: object) -> str:
    """Hash of a plugin's source file, so editing a plugin invalidates cached verdicts."""
    path = getattr(plugin, "__file__", None) or getattr(
        sys.modules.get(type(plugin).__module__), "__file__", None)
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else ""
    except OSError:
        return ""


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


#: Shells whose ``-c STRING`` is checked like ``--build``.
_SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
#: First words a shell runs itself (or that wrap another command): not checked.
_SHELL_WORDS = frozenset((
    "!", ".", ":", "[", "[[", "{", "(", "alias", "break", "builtin", "case", "cd", "command",
    "continue", "declare", "echo", "env", "eval", "exec", "exit", "export", "false", "for",
    "function", "if", "local", "nice", "nohup", "printf", "read", "return", "set", "shift",
    "source", "test", "time", "timeout", "trap", "true", "ulimit", "umask", "unset", "until",
    "while", "xargs"))


#: ``NAME=value``: an assignment before the command (``CC=clang make``), not the command.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def _check_shell_command(what: str, text: str, root: Path) -> None:
    """The first command of a shell string must exist and be executable (exit 2 if not).

    Shells exit 126/127 for a command that cannot run; found at every step,
    that would read as "bad" everywhere. Only what can be known is checked:
    the first simple command, unless it is a builtin, a keyword or a wrapper.
    """
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return  # not valid for shlex; the shell decides
    assigned = [w.partition("=")[0] for w in words if _ASSIGNMENT.fullmatch(w)]
    words = [w for w in words if not _ASSIGNMENT.fullmatch(w)] or [""]
    first = re.split(r"[;&|<>()]", words[0], maxsplit=1)[0]
    if not first or first in _SHELL_WORDS or any(c in first for c in "$`*?~"):
        return
    if "PATH" in assigned and "/" not in first:
        return  # ``PATH=tools:$PATH cmd``: looked up on a PATH we do not know
    if "/" in first:
        path = Path(first) if os.path.isabs(first) else root / first
        if not path.is_file():
            raise BadInput(f"{what}: {first}: no such file (relative to {root})")
        if not os.access(path, os.X_OK):
            raise BadInput(f"{what}: {first} is not executable (chmod +x it)")
        _check_interpreter(str(path), what)
    elif shutil.which(first) is None:
        raise BadInput(f"{what}: command not found: {first} (not on PATH)")


def _check_interpreter(path: str, what: str = "the repro") -> None:
    """A script whose ``#!`` interpreter is missing cannot run (exit 126/127 at every step)."""
    try:
        with open(path, "rb") as f:
            head = f.readline(256)
    except OSError:
        return
    if not head.startswith(b"#!"):
        return
    words = head[2:].decode("utf-8", "replace").split()
    if not words:
        return
    interpreter = words[0]
    if Path(interpreter).name == "env" and len(words) > 1:
        name = next((w for w in words[1:] if not w.startswith("-")), None)
        if name is not None and "=" not in name and shutil.which(name) is None:
            raise BadInput(f"{what}: {path}: its interpreter {name} (#!{' '.join(words)}) "
                           "is not on PATH")
    elif not os.access(interpreter, os.X_OK):
        raise BadInput(f"{what}: {path}: its interpreter {interpreter} does not exist or is "
                       "not executable")


#: Names of the built-in plugins (``-p no:NAME`` blocks them).
BUILTIN_NAMES = ("exit-status", "rules", "build", "repro", "console", "step-log")


def _start_session(args: argparse.Namespace, sp: Repo) -> Session:
    """Validate the target options against the repositories; a new session (nothing touched)."""
    request = _start_request(args, sp)
    session = strategies.start(sp, request)
    old, new = request.terms.old, request.terms.new
    if old == new or "skip" in (old, new):
        raise BadInput(f"--term-old and --term-new must differ and not be 'skip' ({old}/{new})")
    # The log's first line: full shas, so that a replay means the same range.
    session.start_argv = requests.start_argv(strategies.settled(request, session))
    return session


def _start_request(args: argparse.Namespace, sp: Repo) -> StartRequest:
    """What the target options ask to bisect, checked for consistency only."""
    pathspec = tuple(getattr(args, "pathspec", ()))
    terms = Terms.of(bool(args.find_fix), args.term_old, args.term_new)
    if args.on_conflict is not None and (args.stack or args.integrate):
        raise BadInput("--on-conflict goes with a submodule bisect (not --stack or --integrate): "
                       "only it replays the patch stack onto upstream candidates")
    if args.stack:
        if args.integrate or args.good or args.bad or not args.at or len(args.submodule) > 1:
            raise BadInput("--stack takes one --submodule and --at REV (no good/bad: the "
                           "candidates are the stack's patches), and not --integrate")
        path = args.submodule[0] if args.submodule else sp.config_get("bisectkit.submodule")
        if not path:
            raise BadInput("--stack needs --submodule PATH (or git config bisectkit.submodule)")
        return StackRequest(submodule=path, at=args.at, upstream=args.upstream, terms=terms)
    if args.at:
        raise BadInput("--at goes with --stack")
    if not args.bad or not args.good:
        raise BadInput(f"give a {terms.new} revision and at least one {terms.old} one")
    if args.integrate:
        return IntegrateRequest(bad=args.bad, good=tuple(args.good),
                                submodules=tuple(args.submodule), upstream=args.upstream,
                                pathspec=pathspec, terms=terms)
    if len(args.submodule) > 1:
        raise BadInput("--submodule is given more than once: bisect one submodule at a time, "
                       "or several with --integrate")
    path = args.submodule[0] if args.submodule else sp.config_get("bisectkit.submodule")
    if not path:
        raise BadInput("say what to bisect: --submodule PATH, --integrate, or "
                       "git config bisectkit.submodule PATH")
    return SubmoduleRequest(submodule=path, bad=args.bad, good=tuple(args.good),
                            upstream=args.upstream, pathspec=pathspec,
                            on_conflict=args.on_conflict or "skip", terms=terms)


def _term_pair(args: argparse.Namespace) -> tuple[str, str]:
    """The words for the old and the new side that the options ask for."""
    return (args.term_old or ("broken" if args.find_fix else "good"),
            args.term_new or ("fixed" if args.find_fix else "bad"))


def _header(ctx: Context, b: Bisector) -> None:
    ctx.console.header(b.strategy.header_lines(),
                       engine.steps_estimate(len(b.session.candidates) - 1))


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


def _run_with(ctx: Context, b: Bisector) -> int:
    """Run the loop; report, write the JSON result and the trace however it ends."""
    opts, args = ctx.config.run, ctx.args
    assert opts is not None
    cache = None
    if opts.use_cache:
        # Read once, before the first step: what the build writes during the run
        # does not change the key; the run's own output files are not inputs.
        moved = [p for p in b.session.orig if p != SUPERPROJECT]
        outputs = [os.path.realpath(getattr(args, f)) for f in ("json", "report", "trace")
                   if getattr(args, f, None)]
        cache = VerdictCache(b.store, run_identity(opts, b.superproject, moved, outputs))
    if args.trace:
        b.tracer = Tracer()
    result: dict[str, Any] | None = None
    error: str | None = None
    b.commands = {"build": opts.build or "", "repro": shlex.join(opts.repro)}
    try:
        if args.verify_range:
            b.verify_range(cache)
        decision = b.run(cache, max_env_skips=opts.max_env_skips)
        extra: dict[str, Any] = {}
        if isinstance(decision, Found):
            if opts.verify_ends:
                unconfirmed = b.confirm_ends(decision, cache)
                if unconfirmed is not None:
                    extra["unconfirmed"] = unconfirmed
                    ctx.console.line(f"warning: the answer is not confirmed: {unconfirmed}",
                                     style="yellow")
            if args.check_stack:
                extra.update(_check_stack(b, decision.first_bad, cache))
            if any("runs" in step for step in b.session.steps):
                extra["confidence"] = b.confirm_boundary(decision, cache)
        result = b.result_json(_status_word(decision), decision)
        result.update(extra)
        result["command"] = ctx.command
        result["reproduce"] = reproduce_command(ctx, b)
        result["followup"] = b.followup(decision, requests.run_options_argv(opts))
        if args.json:
            write_result(args.json, result)
        plugins.call(ctx.pm, "bisectkit_session_finish", result=result)
        code = b.show_result(decision, requests.run_options_argv(opts))
        if "check_stack" in result:
            ctx.console.line(f"check-stack: {result['check_stack']['conclusion']}", style="bold")
        if "confidence" in result:
            ctx.console.line(f"confidence: {result['confidence']['summary']}", style="bold")
        if cache is not None:
            _note_changed_inputs(ctx, b.superproject, cache)
        if args.report:
            _write_report(ctx, b, result)
        return code
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    except Exception as exc:
        error = str(exc)
        raise
    finally:
        aborted = result is None

        def wrap_up() -> None:
            if aborted and args.json:
                write_result(args.json, b.result_json("aborted", None, error))
            if args.trace:
                b.tracer.write(args.trace)

        signals.run_shielded(wrap_up)
        if aborted:
            with contextlib.suppress(Exception):
                ctx.pm.hook.bisectkit_session_finish(result=b.result_json("aborted", None, error))


def reproduce_command(ctx: Context, b: Bisector) -> str:
    """One command line that runs this bisection again, on another machine too.

    Built from the session and the run options rather than from the words
    typed: full shas for every end, and the settings this run took from git
    config (``bisectkit.submodule``, ``.upstream``, ``.build``, ``.plugins``)
    or from ``BISECTKIT_PLUGINS`` written out as options. Run it in the
    superproject root. A range limited by a pathspec needs ``start``, so it
    is ``git bisect-patched start ... && git bisect-patched run ...``.
    """
    s, p, args = b.session, b.session.params, ctx.args
    opts = ctx.config.run
    assert opts is not None
    target: list[str] = []
    if s.strategy == "integrate":
        target.append("--integrate")
        for path in p.get("submodules", []):
            target += ["--submodule", path]
        if p.get("upstream_ref"):
            target += ["--upstream", p["upstream_ref"]]
    else:
        target += ["--submodule", p["submodule"], "--upstream", p["upstream_ref"]]
    if s.strategy == "stack":
        target += ["--stack", "--at", p["at"]]
    target += b.term_argv()
    run_words = [flag for flag, on in (("--verify-range", args.verify_range),
                                       ("--check-stack", args.check_stack)) if on]
    run_words += [w for spec in _plugins_from_elsewhere(ctx) for w in ("-p", spec)]
    words = requests.run_options_argv(opts)
    if opts.repro:
        words = [*words[:len(words) - len(opts.repro)], *_portable_repro(ctx, opts.repro)]
    run_words += words
    if s.pathspec:
        start = [*GIT_PROG.split(), "start", *target, s.bad, *s.good, "--", *s.pathspec]
        return f"{shlex.join(start)} && {shlex.join([*GIT_PROG.split(), 'run', *run_words])}"
    ends = [] if s.strategy == "stack" else [
        *(w for g in s.good for w in ("--good", g)), "--bad", s.bad]
    return shlex.join(["bisectkit", "run", *target, *ends, *run_words])


def _note_changed_inputs(ctx: Context, sp: Repo, cache: VerdictCache) -> None:
    """Say so when the run changed files of the next run's cache key (a build output left
    in the work tree that git does not ignore): the next run would test everything again."""
    changed = cache.identity.changed_local_files(sp)
    if not changed:
        return
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    ctx.console.line(
        f"note: {len(changed)} untracked or edited file(s) of the superproject changed during "
        f"this run ({', '.join(changed[:3])}{more}); they are part of the verdict cache's key, "
        "so the next run will test again: write build outputs outside the work tree or ignore "
        "them (.gitignore, .git/info/exclude)", style="yellow")


def _plugins_from_elsewhere(ctx: Context) -> list[str]:
    """Plugin specs this run loaded from ``BISECTKIT_PLUGINS`` or git config, not from ``-p``."""
    sp = ctx.superproject
    from_config = sp.config_get_all("bisectkit.plugins") if sp else []
    req = plugins.request([], dict(os.environ), from_config)
    given = set(ctx.args.plugin)
    specs = [spec for spec, _ in req.names] + [f"no:{name}" for name in req.blocked]
    return [spec for spec in dict.fromkeys(specs) if spec not in given]


def _portable_repro(ctx: Context, repro: tuple[str, ...]) -> list[str]:
    """The repro as it runs from the superproject root on any machine: a script of the
    superproject as ``./path``, a command found on PATH by its name."""
    typed = list(ctx.args.repro)
    typed = typed[1:2] if typed[:1] == ["--"] else typed[:1]
    first = repro[0]
    if typed and os.sep not in typed[0]:
        first = typed[0]
    elif ctx.superproject is not None:
        root = ctx.superproject.workdir.resolve()
        with contextlib.suppress(ValueError):
            first = "./" + Path(first).relative_to(root).as_posix()
    return [first, *repro[1:]]


def _check_stack(b: Bisector, first_bad: str, cache: VerdictCache | None) -> dict[str, Any]:
    """``--check-stack``: test ``first_bad`` without the patch stack; what that concluded.

    ``stack_implicated`` is True or False only when the test gave a side; None
    (with the reason in ``conclusion``) when there was nothing to check or the
    test could not tell (a failed build is a skip, not an acquittal).
    """
    old, new = b.session.terms["old"], b.session.terms["new"]
    short = first_bad[:12]
    patches = (b.session.params.get("stack") or {}).get("patches")
    checked = None
    if b.strategy.name == "stack":
        conclusion = "not checked: the candidates already are the patch stack's patches"
    elif b.strategy.name != "submodule":
        conclusion = (f"not checked: an {b.strategy.name} bisect has no patch stack to take "
                      "away (bisect the submodule move it found, with --check-stack)")
    elif not patches:
        conclusion = f"not checked: submodule {b.session.params['submodule']} has no local patches"
    else:
        checked = b.check_stack(first_bad, cache)
        conclusion = ""
    verdict = checked["verdict"] if checked else None
    implicated: bool | None = None
    if verdict == "good":
        # Old side without the stack, new side with it: our patches are implicated.
        implicated = True
        conclusion = (f"the patch stack is implicated: {short} is {old} without it and {new} "
                      "with it")
    elif verdict == "bad":
        implicated = False
        conclusion = (f"the patch stack is not implicated: {short} is {new} without it too "
                      "(the upstream commit itself)")
    elif checked is not None:
        conclusion = (f"could not be checked: {short} without the patch stack tested skip "
                      f"({checked['reason']})")
    b.session.params["stack_implicated"] = bool(implicated)
    return {"check_stack": {"verdict": verdict, "reason": checked["reason"] if checked else None,
                            "stack_implicated": implicated, "conclusion": conclusion}}


def _write_report(ctx: Context, b: Bisector, result: dict[str, Any]) -> None:
    """``--report FILE``: Markdown for an issue, and its short version on the terminal."""
    sp = ctx.superproject
    url = sp.config_get("bisectkit.commit-url") if sp else None
    fork_url = sp.config_get("bisectkit.fork-url") if sp else None
    path = Path(ctx.args.report)
    path.write_text(report.render_markdown(result, url, fork_url=fork_url), encoding="utf-8")
    ctx.console.line("")
    for line in report.render_terminal(result, url, fork_url):
        ctx.console.line(line)
    ctx.console.line(f"report written to {path}", style="dim")


# -- commands -----------------------------------------------------------------------
def cmd_oneshot(ctx: Context) -> int:
    """``bisectkit run``: start + run + report + reset; always restores."""
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        run.require_idle()
        session = _start_session(ctx.args, sp)  # validates; nothing touched yet

        def restore() -> None:
            for line in run.end():
                ctx.console.line(line, style="dim")

        try:
            try:
                b = run.begin(session)
                _header(ctx, b)
                return _run_with(ctx, b)
            finally:
                signals.run_shielded(restore)
        except Aborted:
            ctx.console.error("aborted; the superproject and the submodules were restored")
            raise


def cmd_start(ctx: Context) -> int:
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        run.require_idle()
        session = _start_session(ctx.args, sp)
        b = run.begin(session)
        _header(ctx, b)
        try:
            decision = b.advance()
        except BadInput:
            # The first checkout was refused (a file in the way): nothing moved,
            # so nothing is left behind either.
            signals.run_shielded(run.end)
            raise
        if isinstance(decision, Next):
            ctx.console.line(f"Build and run the repro, then: {GIT_PROG} "
                             f"{_mark_words(b.session)}  "
                             f"(or: {GIT_PROG} run [--build CMD] REPRO)", style="dim")
        return _finish(b, decision)


def _mark_words(session: Session) -> str:
    """How to mark the commit under test, in the session's words."""
    if session.terms == {"old": "good", "new": "bad"} and not session.find_fix:
        return "good|bad|skip"
    pass_side, fail_side = ("new", "old") if session.find_fix else ("old", "new")
    return (f"good|bad|skip (the repro passes|fails: {session.terms[pass_side]}|"
            f"{session.terms[fail_side]}), or old|new ({session.terms['old']}|"
            f"{session.terms['new']})")


def cmd_mark(ctx: Context) -> int:
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        b = run.resume()
        if not ctx.args.revs and b.session.current is None and isinstance(b.decide(), Next):
            # The last checkout did not happen (refused, or interrupted): nothing was
            # under test, so there is nothing to mark; check the candidate out now.
            ctx.console.line("no commit was under test (the last checkout did not happen); "
                             "checking out the next candidate: test it, then mark it",
                             style="yellow")
            return _finish(b, b.advance())
        before = len(b.session.steps)
        b.mark(ctx.args.verdict, ctx.args.revs)
        try:
            return _finish(b, b.advance())
        except BisectkitError as exc:
            # The mark is saved; only the next checkout failed (a local edit or a
            # file in the way). Say so: the same command again checks the candidate
            # out without marking anything twice (nothing is under test).
            marked = b.session.steps[before:]
            what = ", ".join(f"{st['commit'][:12]} {st.get('term', st['verdict'])}"
                             for st in marked)
            nxt = b.decide() if b.session.current is None else None
            cand = f" {nxt.commit[:12]}" if isinstance(nxt, Next) else ""
            raise type(exc)(f"marked {what} (kept); the next candidate{cand} was not checked "
                            f"out ('{GIT_PROG} {ctx.args.verdict}' with no revision checks it "
                            f"out, marking nothing twice): {exc}") from exc


def cmd_run(ctx: Context) -> int:
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        b = run.resume()
        try:
            return _run_with(ctx, b)
        except (Aborted, KeyboardInterrupt):
            ctx.console.error(f"stopped; the session is kept: fix things, then '{GIT_PROG} run' "
                              f"again or '{GIT_PROG} reset'")
            raise


def cmd_status(ctx: Context) -> int:
    sp, store = ctx.open()
    console = ctx.console
    b = ctx.reader(sp, store)
    s = b.session
    console.header(b.strategy.header_lines(), engine.steps_estimate(len(s.candidates) - 1))
    old, new = s.terms["old"], s.terms["new"]
    counts = {v: sum(1 for e in s.verdict_map().values() if e == v) for v in VERDICTS}
    console.line(f"  verdicts: {counts['good']} {old}, {counts['bad']} {new}, "
                 f"{counts['skip']} skip (the {new} end included)")
    decision = b.decide()
    if isinstance(decision, Next):
        lo, hi = engine.bounds(s.candidates, s.verdict_map())
        console.line(f"  {decision.remaining} candidates left between "
                     f"{f'the {old} end' if lo < 0 else s.candidates[lo][:12]} and "
                     f"{s.candidates[hi][:12]}, roughly {decision.steps_left} steps")
        if s.current:
            console.line(f"  under test: {s.current} "
                         f"{b.strategy.describe(s.current).subject}")
        else:
            console.line(f"  under test: nothing (the checkout of {decision.commit[:12]} did "
                         f"not happen); '{GIT_PROG} good', 'bad' or 'skip' checks it out",
                         style="yellow")
        return 0
    return b.show_result(decision)


def cmd_stack_status(ctx: Context) -> int:
    """``bisectkit status``: read-only, works with or without a session."""
    sp, _ = ctx.open()
    args, console = ctx.args, ctx.console
    data = stack_status.collect(sp, args.submodule, args.upstream, args.pathspec)
    if args.json:
        console.file.write(json.dumps(data, indent=2) + "\n")
    else:
        console.stack_status(data, args.limit)
    return 0


def cmd_log(ctx: Context) -> int:
    sp, store = ctx.open()
    b = ctx.reader(sp, store)
    for line in b.log_lines():
        ctx.console.line(line)
    return 0


def cmd_replay(ctx: Context) -> int:
    path = Path(ctx.args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from exc
    commands = _parse_log(text, path)
    sp, _ = ctx.open()
    start_args = commands[0]
    from bisectkit.cli import build_parser  # the parser the log was written for

    parser = build_parser(git_mode=True)
    pathspec: list[str] = []
    if "--" in start_args:
        cut = start_args.index("--")
        start_args, pathspec = start_args[:cut], start_args[cut + 1:]
    # Check the log before ending the session in progress: a bad log costs nothing.
    try:
        args, unknown = parser.parse_known_args(start_args)
    except SystemExit as exc:
        raise BadInput(f"{path}: its 'start' line does not parse: {shlex.join(start_args)}"
                       ) from exc
    if unknown:
        raise BadInput(f"{path}: unknown words in its 'start' line: {' '.join(unknown)}")
    args.pathspec = pathspec
    with ctx.run(sp) as run:
        if run.has_session():
            signals.run_shielded(run.end)
        session = _start_session(args, sp)
        try:
            b = run.begin(session)
            _header(ctx, b)
            for words in commands[1:]:
                b.mark(words[0], words[1:], source="replay")
        except BaseException:
            # Do not leave a half-replayed session behind.
            signals.run_shielded(run.end)
            raise
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
        if not words or words[0] not in ("start", "old", "new", *VERDICTS):
            raise BadInput(f"{path}:{n}: cannot replay: {line}")
        if (words[0] == "start") != (not commands):
            raise BadInput(f"{path}:{n}: the log must begin with exactly one 'start'")
        commands.append(words)
    if not commands:
        raise BadInput(f"{path}: no 'start' command in the log")
    return commands


def cmd_reset(ctx: Context) -> int:
    """Restore every repository and end the session, from whatever record survives."""
    sp, _ = ctx.open()
    console = ctx.console
    with ctx.run(sp) as run:
        had_session = run.has_session()
        lines: list[str] = []
        # Even without a session or journal: a reflog may show bisectkit's
        # checkout still in place (someone deleted .git/bisectkit).
        signals.run_shielded(lambda: lines.extend(run.end()))
    for line in lines:
        console.line(line)
    if not had_session and not lines:
        console.line("not bisecting; nothing to reset")
    elif not any(line.startswith("restored ") for line in lines):
        console.line("nothing had moved; session ended")
    return 0


def cmd_show_step(ctx: Context) -> int:
    """Print the kept build and repro output of step N (of the current or last session)."""
    sp, store = ctx.open()
    path = StepLogWriter.path_for(store.logs_dir, ctx.args.index)
    if not path.is_file():
        have = sorted(int(p.stem.split("-")[1]) for p in store.logs_dir.glob("step-*.log"))
        listed = ", ".join(map(str, have)) or "none"
        raise BadInput(f"no output kept for step {ctx.args.index} (steps with output: {listed})")
    ctx.console.file.write(path.read_text(encoding="utf-8"))
    return 0


def cmd_plugins(ctx: Context) -> int:
    """List every loaded plugin, where it came from and the hooks it implements."""
    for name, origin, hooks in plugins.describe(ctx.pm, ctx.config.origins):
        ctx.console.line(f"{name}")
        ctx.console.line(f"    from:  {origin}")
        ctx.console.line(f"    hooks: {hooks or '(none)'}")
    return 0
