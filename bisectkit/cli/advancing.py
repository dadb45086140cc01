"""``bisectkit advance`` and ``start --advance`` from the command line: the typed requests.

Beside :mod:`bisectkit.cli.requests` (which calls :func:`advance_request` for
``start``): what to advance, and ``--apply``'s settings.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable

from bisectkit.errors import BadInput
from bisectkit.model import AdvanceRequest, ApplyRequest, Terms


def advance_request(args: Namespace, default_submodule: Callable[[], str | None],
                    pathspec: tuple[str, ...], terms: Terms) -> AdvanceRequest:
    """``start --advance`` / ``bisectkit advance``: one submodule, no ends, no terms.
    ``default_submodule()``: the submodule when none is named (it may refuse)."""
    if args.stack or args.integrate or args.at or getattr(args, "good", None) or \
            getattr(args, "bad", None):
        raise BadInput("an advance takes no good/bad revisions, --stack, --at or --integrate: "
                       "its candidates are the upstream commits after the pin (--to REV "
                       "stops earlier)")
    if not terms.is_default:
        raise BadInput("an advance has no --find-fix or --term-old/--term-new: a candidate "
                       "the pin can move to passes the smoketest")
    if getattr(args, "all_parents", False):
        raise BadInput("an advance has no --all-parents: it moves the pin along upstream's "
                       "first-parent line")
    if len(args.submodule) > 1:
        raise BadInput("--submodule is given more than once: advance one submodule at a time")
    path = args.submodule[0] if args.submodule else default_submodule()
    return AdvanceRequest(path or "", args.upstream, args.to, pathspec, bool(args.linear),
                          args.on_conflict or "skip", terms)


def apply_request(args: Namespace) -> ApplyRequest | None:
    """``--apply [--branch NAME] [--step-commits]`` (None: a dry run), checked."""
    if args.branch == "":
        raise BadInput("--branch needs a name")
    if not args.apply:
        if args.branch is not None or args.step_commits:
            raise BadInput("--branch and --step-commits go with --apply")
        return None
    if args.step_commits and not args.linear:
        raise BadInput("--step-commits goes with --linear (a gallop does not test every "
                       "commit it crosses)")
    return ApplyRequest(args.branch or "", bool(args.step_commits))
