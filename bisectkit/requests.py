"""Typed requests from the command line, and back.

The only translators between argparse's ``Namespace`` and bisectkit's typed
values (:mod:`bisectkit.model`): :func:`from_args` reads a parsed command
line; :func:`to_argv` writes a request or run options as command-line words
again (follow-up commands, the replay log). Nothing else sees argparse.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from bisectkit.model import (
    DEFAULT_KEEP,
    DEFAULT_MAX_ENV_SKIPS,
    FollowUp,
    IntegrateRequest,
    RunOptions,
    StackRequest,
    StartRequest,
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
    if isinstance(request, IntegrateRequest):
        words = ["--integrate"]
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
    return words


def start_argv(request: StartRequest) -> list[str]:
    """``request`` as the words of ``git bisect-patched start`` (the replay log's first line).

    Give it the request as the session settled it (full shas), so that a
    replay means the same range.
    """
    words = ["start", *terms_argv(request.terms), *_target_argv(request)]
    if isinstance(request, StackRequest):
        return words
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

