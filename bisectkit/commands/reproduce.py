""""Reproduce with": one command line that runs a bisection again, on another machine too."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path

from bisectkit.cli import requests
from bisectkit.commands.context import Context
from bisectkit.model import GIT_PROG
from bisectkit.model.params import AdvanceParams
from bisectkit.pipeline.bisection import Bisection
from bisectkit.plugin import manager as plugins


def reproduce_command(ctx: Context, b: Bisection, ends: tuple[str, str] | None = None) -> str:
    """One command line that runs this bisection again, on another machine too.

    Built from the session and the run options rather than from the words
    typed: full shas for every end, and the settings this run took from git
    config (``bisectkit.submodule``, ``.upstream``, ``.build``, ``.plugins``)
    or from ``BISECTKIT_PLUGINS`` written out as options. Run it in the
    superproject root. A range limited by a pathspec needs ``start``, so it
    is ``git bisect-patched start ... && git bisect-patched run ...``. ``ends`` (good,
    bad) tests that pair as a submodule bisect instead (an advance's last good and first
    bad commits: the answer tests both).
    """
    s = b.session
    target = [*b.strategy.target_argv(), *requests.terms_argv(b.terms)]
    pathspec, good, bad = (s.pathspec, s.good, s.bad) if ends is None else \
        ([], [ends[0]], ends[1])
    run_words = _run_words(ctx)
    if pathspec:
        start = [*GIT_PROG.split(), "start", *target, bad, *good, "--", *pathspec]
        return f"{shlex.join(start)} && {shlex.join([*GIT_PROG.split(), 'run', *run_words])}"
    words = b.strategy.range_argv(good, bad)
    return shlex.join(["bisectkit", "run", *target, *words, *run_words])


def advance_command(ctx: Context, b: Bisection, to: str) -> str:
    """``bisectkit advance`` again, up to ``to``: the same search over the commits up to it.

    For an advance that a conflicting local patch stopped at ``to``: a bisection of the
    last good commit and ``to`` could not test ``to`` (no build happens where the stack
    does not apply); this gives the same answer, the conflict and the last good commit.
    """
    p = b.session.params_as(AdvanceParams)
    words = ["--submodule", p.submodule, "--upstream", p.upstream_ref, "--to", to,
             *(w for prefix in b.session.pathspec for w in ("--pathspec", prefix))]
    words += ["--linear"] if p.search == "linear" else []
    words += ["--on-conflict", p.on_conflict] if p.on_conflict != "skip" else []
    return shlex.join(["bisectkit", "advance", *words, *_run_words(ctx)])


def _run_words(ctx: Context) -> list[str]:
    """The run options, the plugins loaded from elsewhere and the repro, as words."""
    opts = ctx.options
    run_words = [flag for flag, on in (("--verify-range", ctx.flags.verify_range),
                                       ("--check-stack", ctx.flags.check_stack)) if on]
    run_words += [w for spec in _plugins_from_elsewhere(ctx) for w in ("-p", spec)]
    words = requests.run_options_argv(opts)
    if opts.repro:
        words = [*words[:len(words) - len(opts.repro)], *_portable_repro(ctx, opts.repro)]
    return run_words + words


def _plugins_from_elsewhere(ctx: Context) -> list[str]:
    """Plugin specs this run loaded from ``BISECTKIT_PLUGINS`` or git config, not from ``-p``."""
    sp = ctx.superproject
    from_config = sp.config_get_all("bisectkit.plugins") if sp else []
    req = plugins.request([], dict(os.environ), from_config)
    given = set(ctx.plugin_specs)
    specs = [spec for spec, _ in req.names] + [f"no:{name}" for name in req.blocked]
    return [spec for spec in dict.fromkeys(specs) if spec not in given]


def _portable_repro(ctx: Context, repro: tuple[str, ...]) -> list[str]:
    """The repro as it runs from the superproject root on any machine: a script of the
    superproject as ``./path``, a command found on PATH by its name."""
    typed = list(ctx.typed_repro)
    typed = typed[1:2] if typed[:1] == ["--"] else typed[:1]
    first = repro[0]
    if typed and os.sep not in typed[0]:
        first = typed[0]
    elif ctx.superproject is not None:
        root = ctx.superproject.workdir.resolve()
        with contextlib.suppress(ValueError):
            first = "./" + Path(first).relative_to(root).as_posix()
    return [first, *repro[1:]]
