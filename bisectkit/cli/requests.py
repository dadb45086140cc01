"""Typed values from the command line, and back.

The translators between argparse's ``Namespace`` and bisectkit's typed values
(:mod:`bisectkit.model`): :func:`given` reads what is bisected (the strategy it
chooses builds its own request from it, :mod:`bisectkit.strategies`),
:func:`run_options` and :func:`run_flags` read how; :func:`run_options_argv` and
:func:`terms_argv` write them as command-line words again (follow-up commands,
"reproduce with"). Nothing above ``cli/`` sees argparse.
"""

from __future__ import annotations

from argparse import Action, ArgumentTypeError, Namespace
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bisectkit.cli import argtypes, parallelopts, precheck, targets
from bisectkit.cli.options import OUTPUT_OPTIONS
from bisectkit.cli.targets import Given, Option
from bisectkit.errors import BadInput
from bisectkit.model import (
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    DEFAULT_MAX_SKIPS,
    Rules,
    RunOptions,
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
    if opts.max_skips != DEFAULT_MAX_SKIPS:
        words += ["--max-skips", str(opts.max_skips)]
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
        return {flag: path for flag, path in self.written.items()
                if not (flag == "--json" and path == "-")}


def run_flags(args: Namespace) -> RunFlags:
    """The ``run`` flags of a parsed command line, output paths checked (exit 2 if unwritable)."""
    written = {flag: value for flag, value in
               ((flag, getattr(args, targets.dest_of(flag))) for flag in OUTPUT_OPTIONS)
               if value is not None}
    flags = RunFlags(written, verify_range=args.verify_range, check_stack=args.check_stack)
    for flag, value in flags.outputs().items():
        precheck.output_path(flag, value)
    return flags


def given(args: Namespace, owned: Sequence[Option],
          default_submodule: Callable[[str], str | None]) -> Given:
    """What ``start``/``bisectkit run``/``advance`` (or a log's start line) gave to say what
    is bisected, the terms and the pathspec checked; the strategy it chose builds the
    request (:func:`bisectkit.strategies.request_from`). ``owned``: every strategy's own
    options; ``default_submodule(alternative)``: the submodule when none is named."""
    terms = _terms(args)
    pathspec = _pathspec(getattr(args, "pathspec", ()))
    return targets.read(args, owned, terms, pathspec, default_submodule)


def _pathspec(words: Sequence[str]) -> tuple[str, ...]:
    """``start``'s ``-- PATHSPEC...`` (after argparse: the CLI splits it off), checked as
    ``--pathspec`` is."""
    try:
        return tuple(argtypes.pathspec(word) for word in words)
    except ArgumentTypeError as exc:
        raise BadInput(f"pathspec: {exc}") from None


def _terms(args: Namespace) -> Terms:
    # ``bisectkit advance`` has no terms: the defaults.
    old: str | None = getattr(args, "term_old", None)
    new: str | None = getattr(args, "term_new", None)
    terms = Terms.of(bool(getattr(args, "find_fix", False)), old, new)
    # A term may be a mark word of its own side, never one of the other side's (git: "can't
    # change the meaning of the term"): ``good`` marks the old side, or with --find-fix
    # (the repro passes) the new one, as ``fixed`` does.
    default = Terms.of(terms.find_fix)
    sides = {"old": "old", "new": "new", default.old: "old", default.new: "new",
             "good": "new" if terms.find_fix else "old", "bad": "old" if terms.find_fix else "new"}
    for flag, word, side in (("--term-old", old or "", "old"), ("--term-new", new or "", "new")):
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
                      max_skips=args.max_skips,
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
