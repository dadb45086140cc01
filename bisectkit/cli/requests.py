"""Typed requests from the command line, and back.

The only translators between argparse's ``Namespace`` and bisectkit's typed
values (:mod:`bisectkit.model`): :func:`from_args` reads a parsed command
line; :func:`to_argv` writes a request or run options as command-line words
again (follow-up commands, the replay log). Nothing else sees argparse.
"""

from __future__ import annotations

import shlex
from argparse import Action, ArgumentTypeError, Namespace
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bisectkit.cli import argtypes, parallelopts, precheck
from bisectkit.cli.advancing import advance_request
from bisectkit.cli.options import OUTPUT_OPTIONS
from bisectkit.errors import BadInput
from bisectkit.model import (
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    AdvanceRequest,
    FollowUp,
    IntegrateRequest,
    Rules,
    RunOptions,
    StackRequest,
    StartRequest,
    SubmoduleRequest,
    Terms,
)


def run_options_argv(opts: RunOptions) -> list[str]:
    """The run options and repro as command-line words (for follow-up commands)."""
    words: list[str] = []
    if opts.build:
        words += ["--build", opts.build]
    for flag, patterns in (("--good-if", opts.rules.good_if), ("--bad-if", opts.rules.bad_if),
                           ("--skip-if", opts.rules.skip_if)):
        for p in patterns:
            words.append(f"{flag}={p}")  # '=' keeps a pattern starting with '-' whole
    if opts.timeout is not None:
        words += ["--timeout", f"{opts.timeout:g}"]
    if opts.timeout_verdict != "skip":
        words += ["--timeout-verdict", opts.timeout_verdict]
    if opts.keep_output != DEFAULT_KEEP:
        words.append(f"--keep-output={opts.keep_output}")
    if not opts.verify_ends:
        words.append("--no-verify")
    if opts.max_env_skips != DEFAULT_MAX_ENV_SKIPS:
        words += ["--max-env-skips", str(opts.max_env_skips)]
    words += [f"--cache-input={p}" for p in opts.cache_inputs]
    words += [f"--cache-env={name}" for name in opts.cache_env]
    words += parallelopts.to_argv(opts.parallel)
    words += opts.plugin_argv
    return [*words, "--", *opts.repro] if opts.repro else words


def terms_argv(terms: Terms) -> list[str]:
    """``--find-fix`` and ``--term-old/--term-new`` where they differ from the defaults."""
    words = ["--find-fix"] if terms.find_fix else []
    default = Terms.of(terms.find_fix)
    if terms.old != default.old:
        words += ["--term-old", terms.old]
    if terms.new != default.new:
        words += ["--term-new", terms.new]
    return words


def _target_argv(request: StartRequest) -> list[str]:
    """What to bisect, the revisions aside: the words shared by ``start`` and ``run``."""
    if isinstance(request, AdvanceRequest):
        return _advance_argv(request)
    if isinstance(request, IntegrateRequest):
        words = ["--integrate", *(["--all-parents"] if request.all_parents else [])]
        for path in request.submodules:
            words += ["--submodule", path]
        return words + (["--upstream", request.upstream] if request.upstream else [])
    words = ["--submodule", request.submodule]
    if request.upstream:
        words += ["--upstream", request.upstream]
    if isinstance(request, StackRequest):
        return words + ["--stack", "--at", request.at]
    if request.on_conflict != "skip":
        words += ["--on-conflict", request.on_conflict]
    return words + (["--all-parents"] if request.all_parents else [])


def _advance_argv(request: AdvanceRequest) -> list[str]:
    words = ["--advance", "--submodule", request.submodule]
    for flag, value in (("--upstream", request.upstream), ("--to", request.to)):
        if value:
            words += [flag, value]
    if request.on_conflict != "skip":
        words += ["--on-conflict", request.on_conflict]
    return words + (["--linear"] if request.linear else [])


def start_argv(request: StartRequest) -> list[str]:
    """``request`` as the words of ``git bisect-patched start`` (the replay log's first line).

    Give it the request as the session settled it (full shas), so that a
    replay means the same range.
    """
    words = ["start", *terms_argv(request.terms), *_target_argv(request)]
    if isinstance(request, StackRequest):
        return words
    if not isinstance(request, AdvanceRequest):
        words += [request.bad, *request.good]
    return words + (["--", *request.pathspec] if request.pathspec else [])


def run_argv(request: StartRequest) -> list[str]:
    """``request`` as the words of ``bisectkit run`` before the run options.

    A pathspec needs ``start`` (``run`` takes its ``--`` for the repro), so a
    request with one cannot be worded here.
    """
    words = _target_argv(request)
    if isinstance(request, StackRequest):
        return [*words, *terms_argv(request.terms)]
    if isinstance(request, AdvanceRequest):
        raise ValueError("an advance is run by 'bisectkit advance', not 'run'")
    if request.pathspec:
        raise ValueError("a request with a pathspec needs 'start', not 'run'")
    for good in request.good:
        words += ["--good", good]
    return [*words, "--bad", request.bad, *terms_argv(request.terms)]


def followup_lines(followup: FollowUp, rerun: Sequence[str]) -> list[str]:
    """The note and the command line of a follow-up bisection (``rerun``: the run options
    and the repro, as :func:`run_options_argv` words them)."""
    command = shlex.join(["bisectkit", "run", *run_argv(followup.request), *rerun])
    return [followup.note, command]


@dataclass(frozen=True)
class RunFlags:
    """What a ``run`` writes and checks besides testing candidates."""

    #: The output options given (:data:`~bisectkit.cli.options.OUTPUT_OPTIONS`) -> the
    #: file each names (``--json -``: stdout).
    written: dict[str, str] = field(default_factory=dict)
    verify_range: bool = False
    check_stack: bool = False

    def output_files(self) -> list[str]:
        """The files this run writes (never inputs of the verdict cache)."""
        return list(self.outputs().values())

    def outputs(self) -> dict[str, str]:
        """The files this run writes, by option (``--json -`` is stdout, not a file)."""
        return {flag: path for flag, path in self.written.items() if path != "-"}


def run_flags(args: Namespace) -> RunFlags:
    """The ``run`` flags of a parsed command line, output paths checked (exit 2 if unwritable)."""
    written = {flag: value for flag, value in
               ((flag, getattr(args, flag[2:].replace("-", "_"))) for flag in OUTPUT_OPTIONS)
               if value is not None}
    flags = RunFlags(written, verify_range=args.verify_range, check_stack=args.check_stack)
    for flag, value in flags.outputs().items():
        precheck.output_path(flag, value)
    return flags


def start_request(args: Namespace, default_submodule: Callable[[], str | None]) -> StartRequest:
    """What ``start``/``bisectkit run`` asks to bisect; bad option combinations refused.
    ``default_submodule()``: the submodule when none is named (it may refuse)."""
    terms, all_parents = _terms(args), bool(getattr(args, "all_parents", False))
    pathspec = _pathspec(getattr(args, "pathspec", ()))
    if getattr(args, "advance", False):
        return advance_request(args, default_submodule, pathspec, terms)
    if args.on_conflict is not None and (args.stack or args.integrate):
        raise BadInput("--on-conflict goes with a submodule bisect (not --stack or --integrate): "
                       "only it replays the patch stack onto upstream candidates")
    if args.stack:
        if args.integrate or args.good or args.bad or not args.at or len(args.submodule) > 1 \
                or all_parents:
            raise BadInput("--stack takes one --submodule and --at REV (no good/bad: the "
                           "candidates are the stack's patches), not --integrate/--all-parents")
        path = args.submodule[0] if args.submodule else default_submodule()
        if not path:
            raise BadInput("--stack needs --submodule PATH (or git config bisectkit.submodule)")
        return StackRequest(path, args.at, args.upstream, terms)
    if args.at:
        raise BadInput("--at goes with --stack")
    if not args.bad or not args.good:
        raise BadInput(f"give a {terms.new} revision and at least one {terms.old} one")
    if args.integrate:
        return IntegrateRequest(args.bad, tuple(args.good), tuple(args.submodule),
                                args.upstream, pathspec, terms, all_parents)
    if len(args.submodule) > 1:
        raise BadInput("--submodule is given more than once: bisect one submodule at a time, "
                       "or several with --integrate")
    path = args.submodule[0] if args.submodule else default_submodule()
    if not path:
        raise BadInput("say what to bisect: --submodule PATH, --integrate, or "
                       "git config bisectkit.submodule PATH")
    return SubmoduleRequest(path, args.bad, tuple(args.good), args.upstream, pathspec,
                            args.on_conflict or "skip", terms, all_parents)


def _pathspec(words: Sequence[str]) -> tuple[str, ...]:
    """``start``'s ``-- PATHSPEC...`` (after argparse: the CLI splits it off), checked as
    ``--pathspec`` is."""
    try:
        return tuple(argtypes.pathspec(word) for word in words)
    except ArgumentTypeError as exc:
        raise BadInput(f"pathspec: {exc}") from None


def _terms(args: Namespace) -> Terms:
    terms = Terms.of(bool(args.find_fix), args.term_old, args.term_new)
    # A term may be a mark word of its own side, never one of the other side's (git: "can't
    # change the meaning of the term"): ``good`` marks the old side, or with --find-fix
    # (the repro passes) the new one, as ``fixed`` does.
    default = Terms.of(terms.find_fix)
    sides = {"old": "old", "new": "new", default.old: "old", default.new: "new",
             "good": "new" if terms.find_fix else "old", "bad": "old" if terms.find_fix else "new"}
    for flag, word, side in (("--term-old", args.term_old, "old"),
                             ("--term-new", args.term_new, "new")):
        if sides.get(word, side) != side:
            raise BadInput(f"{flag} {word}: can't change the meaning of the term '{word}' "
                           f"(it names the {sides[word]} side)")
    if terms.old == terms.new:
        raise BadInput(f"--term-old and --term-new must differ ({terms.old}/{terms.new})")
    return terms


def run_options(args: Namespace, root: Path, build_default: str | None, has_repro_plugin: bool,
                plugins: PluginState) -> RunOptions:
    """The run options of a parsed command line, validated before anything is touched."""
    repro = list(args.repro)
    if repro[:1] == ["--"]:
        repro = repro[1:]
    if repro:
        repro[0] = precheck.resolve_command(repro[0])
    elif not has_repro_plugin:
        raise BadInput("no repro command given (and no plugin implements bisectkit_repro)")
    rules = Rules(tuple(args.good_if), tuple(args.bad_if), tuple(args.skip_if))
    problem = precheck.rules_problem(rules)
    if problem:
        raise BadInput(problem)
    build = args.build if args.build is not None else build_default
    precheck.commands(build, repro, root)
    # Verdicts depend on which plugins ran and with which options.
    options = [(a.dest, repr(getattr(args, a.dest, None))) for a in plugins.actions]
    plugin_argv = [w for spec in args.plugin for w in ("-p", spec)]
    plugin_argv += [w for a in plugins.actions for w in _option_words(a, getattr(args, a.dest))]
    inputs = tuple(precheck.cache_input(p) for p in args.cache_input)
    env_names = tuple(precheck.cache_env(name) for name in args.cache_env)
    parallel = parallelopts.settings(args)
    return RunOptions(repro=tuple(repro), build=build or None, rules=rules,
                      timeout=args.timeout, timeout_verdict=args.timeout_verdict,
                      use_cache=not args.no_cache,
                      plugin_options=tuple([*plugins.loaded, *options]),
                      plugin_argv=tuple(plugin_argv), keep_output=args.keep_output,
                      verify_ends=not args.no_verify, max_env_skips=args.max_env_skips,
                      cache_inputs=tuple(dict.fromkeys(inputs)),
                      cache_env=tuple(dict.fromkeys(env_names)), parallel=parallel)


@dataclass(frozen=True)
class PluginState:
    """The plugins a command line loaded: (name, source digest) pairs, and the options
    they added to the parser (their values are part of the cache key)."""

    loaded: tuple[tuple[str, str], ...] = ()
    actions: tuple[Action, ...] = ()


def _option_words(action: Action, value: object) -> list[str]:
    """A plugin option as it would be typed again (``--opt=value``, safe for ``-D...``)."""
    if value == action.default or not action.option_strings:
        return []
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return [flag]
    values = value if isinstance(value, list) else [value]
    return [f"{flag}={v}" for v in values]
