"""The parallel options (``--jobs``, ``--scheduler``, ``--workspace-root``, ``--resources``,
``--no-workers-timeout``): from the command line or git config, checked, and back to words.

A part of :mod:`bisectkit.cli.requests` (the only translators between argparse and typed
values), kept apart because the git-config defaults and the cluster settings are one
concept.
"""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Callable

from bisectkit.cli import argtypes, precheck
from bisectkit.errors import BadInput
from bisectkit.model import DEFAULT_NO_WORKERS_TIMEOUT, Parallel


def defaults(args: Namespace, config_get: Callable[[str], str | None]) -> None:
    """``--jobs``, ``--scheduler``, ``--workspace-root`` not given: from git config
    (``config_get``), checked as the options are."""
    if args.jobs is None:
        args.jobs = argtypes.from_config(config_get, "bisectkit.jobs", argtypes.jobs)
    if args.scheduler is None:
        args.scheduler = argtypes.from_config(config_get, "bisectkit.scheduler",
                                              argtypes.scheduler_address)
    if args.workspace_root is None:
        args.workspace_root = config_get("bisectkit.workspace-root")
    if args.scheduler and getattr(args, "no_workers_timeout", None) is None:
        args.no_workers_timeout = argtypes.from_config(
            config_get, "bisectkit.no-workers-timeout", argtypes.seconds)


def settings(args: Namespace) -> Parallel:
    """``--jobs``, ``--scheduler``, ``--workspace-root``, ``--resources``, checked."""
    resources = tuple(args.resources)
    if resources and not args.scheduler:
        raise BadInput("--resources goes with --scheduler (a local step runs on this machine)")
    root = args.workspace_root
    if root:
        root = os.path.abspath(os.path.expanduser(root)) if not args.scheduler else root
        if not args.scheduler:
            precheck.workspace_root(args.workspace_root, root)
    patience = getattr(args, "no_workers_timeout", None)
    if patience is not None and not args.scheduler:
        raise BadInput("--no-workers-timeout goes with --scheduler (a local step needs no "
                       "worker)")
    return Parallel(jobs=args.jobs or 1, scheduler=args.scheduler or None,
                    workspace_root=root or None, resources=resources,
                    no_workers_timeout=patience or DEFAULT_NO_WORKERS_TIMEOUT)


def to_argv(parallel: Parallel) -> list[str]:
    """The words that give ``parallel`` again (defaults left out)."""
    words = ["--jobs", str(parallel.jobs)] if parallel.jobs != 1 else []
    if parallel.scheduler:
        words += ["--scheduler", parallel.scheduler]
    if parallel.workspace_root:
        words.append(f"--workspace-root={parallel.workspace_root}")
    if parallel.no_workers_timeout != DEFAULT_NO_WORKERS_TIMEOUT:
        words.append(f"--no-workers-timeout={parallel.no_workers_timeout:g}")
    return words + [f"--resources={name}={amount:g}" for name, amount in parallel.resources]
