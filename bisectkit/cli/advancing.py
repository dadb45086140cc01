"""``bisectkit advance --apply`` from the command line: its typed request (what to advance
is the advance strategy's own, :mod:`bisectkit.strategies.advance`).
"""

from __future__ import annotations

from argparse import Namespace

from bisectkit.errors import BadInput
from bisectkit.model import ApplyRequest


def apply_request(args: Namespace) -> ApplyRequest | None:
    """``--apply [--branch NAME] [--step-commits]`` (None: a dry run), checked."""
    if args.branch == "":
        raise BadInput("--branch needs a name")
    if not args.apply:
        if args.branch is not None or args.step_commits:
            raise BadInput("--branch and --step-commits go with --apply")
        return None
    if args.step_commits and not args.linear:
        raise BadInput("--step-commits goes with --linear (without it the search does not test "
                       "every commit it crosses)")
    return ApplyRequest(args.branch or "", bool(args.step_commits))
