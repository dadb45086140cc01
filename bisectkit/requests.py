"""Typed requests from the command line, and back.

The only translators between argparse's ``Namespace`` and bisectkit's typed
values (:mod:`bisectkit.model`): :func:`from_args` reads a parsed command
line; :func:`to_argv` writes a request or run options as command-line words
again (follow-up commands, the replay log). Nothing else sees argparse.
"""

from __future__ import annotations

from bisectkit.model import DEFAULT_KEEP, DEFAULT_MAX_ENV_SKIPS, RunOptions


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
