"""Option value types for argparse, shared by the command line and plugins' options.

Each turns the text of an option into its value or raises
``argparse.ArgumentTypeError``, which argparse reports as one line
(``argument --repeat: must be 1 or more``) with exit 2. They are pure (no file
system, no network): what needs the machine is checked in :mod:`bisectkit.cli.precheck`.
"""

from __future__ import annotations

import argparse
import math
import posixpath
import re
from collections.abc import Callable
from typing import TypeVar

from bisectkit.errors import BadInput

_T = TypeVar("_T")


#: Numbers as written in ASCII: Python's int() and float() also take other scripts' digits
#: (``--jobs ١``) and underscores (``--timeout 1_0``), which no shell user means.
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: The shortest time limit taken (``--timeout 1e-320`` would time every step out).
MIN_SECONDS = 0.001


def whole_number(minimum: int, note: str = "") -> Callable[[str], int]:
    """A ``type=`` for a whole number >= ``minimum``, in ASCII digits; ``note`` ends the
    too-small message (``whole_number(0, " (0: no limit)")``)."""

    def parse(text: str) -> int:
        if not _WHOLE.fullmatch(text):
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more{note}")
        return value

    return parse


def _decimal(text: str) -> float:
    """``text`` as a finite number in ASCII (``2.5``, ``1e-3``): ``nan`` and ``inf`` would
    turn a limit off without saying so (no comparison with ``nan`` is ever true)."""
    if text.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):  # 1e400
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def seconds(text: str) -> float:
    """A time limit in seconds: a finite number, at least :data:`MIN_SECONDS`."""
    value = _decimal(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    if value < MIN_SECONDS:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_SECONDS:g} seconds")
    return value


def byte_size(text: str) -> int:
    """``8M``, ``512k``, ``1048576``: a positive number of bytes (binary units)."""
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    body = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = body[-1:] if body[-1:] in units else ""
    number = body[:len(body) - len(unit)]
    try:
        if not _DECIMAL.fullmatch(number):
            raise ValueError(number)
        value = int(float(number) * units[unit])
    except (ValueError, OverflowError):  # OverflowError: 1e400K
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 8M)") from None
    if value < 1024:
        raise argparse.ArgumentTypeError("must be at least 1K")
    return value


def resource(text: str) -> tuple[str, float]:
    """``GPU=1``: a Dask worker resource a step needs, and how much of it."""
    name, sep, amount = text.partition("=")
    if not sep:
        amount = "1"
    value = float(amount) if _DECIMAL.fullmatch(amount) else math.nan
    if not name.strip() or not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"not NAME=AMOUNT: {text!r} (e.g. GPU=1)")
    return name.strip(), value


#: The ``--jobs`` ceiling: each job is a workspace (a clone and a build directory of its
#: own), and K parallel tests gain only log2(K+1) halvings a round. A cluster's
#: ``--scheduler`` without ``--jobs`` uses every thread it offers.
MAX_JOBS = 64


def jobs(text: str) -> int:
    """``--jobs K``: 1 to :data:`MAX_JOBS`."""
    value = whole_number(1)(text)
    if value > MAX_JOBS:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_JOBS}: each job is a workspace of its own (a clone and its build); "
            "with --scheduler, leave --jobs out to use every thread the cluster offers")
    return value


#: The address schemes of a Dask scheduler another process can reach (``inproc://`` is
#: only for a scheduler in the same process).
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+")


def scheduler_address(text: str) -> str:
    """``tcp://HOST:PORT`` (``HOST:PORT`` means tcp), or tls://, ws://, wss://, ucx://:
    what Dask's ``Client`` connects to. Empty: no scheduler (overrides git config)."""
    if not text:
        return text
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme not in SCHEDULER_SCHEMES:
        raise argparse.ArgumentTypeError(
            f"not a scheduler address: {text!r}: unknown scheme {scheme!r} (one of "
            f"{', '.join(SCHEDULER_SCHEMES)}; e.g. tcp://build1:8786)")
    host, colon, port = rest.rpartition(":")
    if not colon or not _HOST.fullmatch(host) or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"not a scheduler address: {text!r} (give {scheme}://HOST:PORT, e.g. "
            f"{scheme}://build1:8786)")
    return text


def pathspec(text: str) -> str:
    """A pathspec: a path inside the repository, from its root (as git stores it); empty
    (git refuses it), absolute or climbing out with ``..``, it could match nothing."""
    if not text:
        raise argparse.ArgumentTypeError("empty: give a path, or leave the pathspec out")
    if text.startswith("/") or posixpath.normpath(text).split("/")[0] == "..":
        raise argparse.ArgumentTypeError(f"{text!r} is outside the repository (give a path "
                                         "from its root, e.g. mlir/lib)")
    return text


def command(text: str) -> str:
    """``--build``: a shell command. An empty one (an unset shell variable) is refused, not
    read as "no build": git config bisectkit.build would still apply to the follow-up
    commands the run prints, and a reader could not tell."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give a shell command (to run no build "
                                         "where git config bisectkit.build sets one: "
                                         "--build true)")
    return text


def nonempty(text: str) -> str:
    """A path or a revision: an empty one (an unset shell variable) would silently mean
    "the default" instead."""
    if not text:
        raise argparse.ArgumentTypeError("empty: give a value, or leave the option out")
    return text


#: Words a term cannot be: git bisect's own commands (git refuses them as terms) and
#: bisectkit's, whichever mode (a term is a word the user may type after the command).
COMMAND_WORDS = frozenset({
    "help", "start", "skip", "next", "reset", "visualize", "view", "replay", "log", "run",
    "terms", "status", "show-step", "advance", "plugins", "workspaces", "actions"})


def term(text: str) -> str:
    """A term: one word, shown in every message and written in the replay log's comments
    (a space or a newline would break both), never an option or a command's name."""
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError(f"not a single word: {text!r}")
    if text.startswith("-"):
        raise argparse.ArgumentTypeError(f"{text!r} starts with '-': a term cannot look "
                                         "like an option")
    if text in COMMAND_WORDS:
        raise argparse.ArgumentTypeError(f"can't use the command '{text}' as a term")
    return text


def from_config(config_get: Callable[[str], str | None], key: str,
                parse: Callable[[str], _T]) -> _T | None:
    """``git config KEY`` (``config_get``) through an option's type; a value it refuses is
    one line, exit 2, naming the key."""
    value = config_get(key)
    if value is None:
        return None
    try:
        return parse(value)
    except argparse.ArgumentTypeError as exc:
        raise BadInput(f"git config {key} is {value!r}: {exc}") from None
