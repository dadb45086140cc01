"""The strategies on the command line: which one the options chose, its request built by
the strategy itself (:attr:`~bisectkit.strategies.base.Argv.build`), and a request as the
words of ``start`` or ``bisectkit run`` again (the replay log, follow-up commands).
What every strategy's request needs of the shared options is here too.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from typing import Any

from bisectkit.cli.requests import terms_argv
from bisectkit.cli.targets import Given, Option
from bisectkit.errors import BadInput
from bisectkit.model import FollowUp, StartRequest
from bisectkit.strategies.base import Kind, kind_of, kinds


def options(for_run: bool = False) -> list[Option]:
    """Every strategy's own options (``for_run``: of those ``bisectkit run`` starts)."""
    return [o for kind in kinds() if kind.argv.in_run or not for_run for o in kind.argv.own()]


def chosen(given: Given) -> Kind[Any]:
    """The strategy the command line chose: the last registered whose selector was given,
    else the one without a selector."""
    selected = [k for k in kinds() if k.argv.selector is None or given.flag(k.argv.selector)]
    return selected[-1]


def request_from(given: Given) -> StartRequest:
    """The request of the strategy ``given`` chose, built and checked by that strategy."""
    kind = chosen(given)
    own = {o.dest for o in kind.argv.own()}
    strays = {o.flag: other.argv.selector.flag for other in kinds() if other is not kind
              and other.argv.selector is not None for o in other.argv.own()
              if o.dest not in own and given.flag(o)}
    request: StartRequest = kind.argv.build(dataclasses.replace(given,
                                                                strays=tuple(strays.items())))
    return request


def lacks_ends(given: Given) -> bool:
    """Does ``given`` choose a bisection of good and bad revisions and leave one for later?"""
    return chosen(given).argv.takes_ends and not (given.bad and given.good)


# -- the refusals several strategies share --------------------------------------------

def refuse_strays(given: Given) -> None:
    """An option of another strategy (not the one that selects it): ``--at goes with
    --stack``."""
    for flag, selector in given.strays:
        if flag != selector:
            raise BadInput(f"{flag} goes with {selector}")


def selects_another(given: Given) -> bool:
    """Was the option that selects another strategy given too?"""
    return any(flag == selector for flag, selector in given.strays)


def refuse_on_conflict(given: Given) -> None:
    """``--on-conflict`` where no patch stack is replayed onto upstream candidates."""
    if given.on_conflict is not None:
        raise BadInput("--on-conflict goes with a submodule bisect (not --stack or "
                       "--integrate): only it replays the patch stack onto upstream candidates")


def require_ends(given: Given) -> None:
    """A bisection of good and bad revisions is given both. Only ``bisectkit run`` lacks
    one here (``start`` and ``replay`` wait for the ends instead), so the refusal names its
    options."""
    old, new = given.terms.old, given.terms.new
    if not given.bad and not given.good:
        raise BadInput(f"give --bad REV and --good REV: the {new} and {old} ends")
    if not given.good:
        raise BadInput(f"no --good REV: give a {old} revision, older than --bad")
    if not given.bad:
        raise BadInput(f"no --bad REV: give the {new} revision (HEAD, say)")


def given_words(flag: str, value: str | None) -> list[str]:
    """``[flag, value]``, or nothing when the value was not given."""
    return [flag, value] if value else []


# -- a request as words again ---------------------------------------------------------

def start_argv(request: StartRequest) -> list[str]:
    """``request`` as the words of ``git bisect-patched start`` (the replay log's first line).

    Give it the request as the session settled it (full shas), so that a
    replay means the same range.
    """
    argv = kind_of(request).argv
    words = ["start", *terms_argv(request.terms), *argv.words(request)]
    if argv.takes_ends:
        words += [_bad(request), *_good(request)]
    pathspec: tuple[str, ...] = getattr(request, "pathspec", ())
    return words + (["--", *pathspec] if pathspec else [])


def run_argv(request: StartRequest) -> list[str]:
    """``request`` as the words of ``bisectkit run`` before the run options.

    A pathspec needs ``start`` (``run`` takes its ``--`` for the repro), so a
    request with one cannot be worded here.
    """
    kind = kind_of(request)
    if not kind.argv.in_run:
        raise ValueError(f"a {kind.name} request is not started by 'bisectkit run'")
    if getattr(request, "pathspec", ()):
        raise ValueError("a request with a pathspec needs 'start', not 'run'")
    words = kind.argv.words(request)
    if kind.argv.takes_ends:
        words += [*(w for good in _good(request) for w in ("--good", good)),
                  "--bad", _bad(request)]
    return [*words, *terms_argv(request.terms)]


def _bad(request: StartRequest) -> str:
    bad: str = getattr(request, "bad", "")
    return bad


def _good(request: StartRequest) -> tuple[str, ...]:
    good: tuple[str, ...] = getattr(request, "good", ())
    return good


def followup_lines(followup: FollowUp, rerun: Sequence[str]) -> list[str]:
    """The note and the command line of a follow-up bisection (``rerun``: the run options
    and the repro, as :func:`~bisectkit.cli.requests.run_options_argv` words them)."""
    command = shlex.join(["bisectkit", "run", *run_argv(followup.request), *rerun])
    return [followup.note, command]
