"""Option value types for argparse, shared by the command line and plugins' options.

Each turns the text of an option into its value or raises
``argparse.ArgumentTypeError``, which argparse reports as one line
(``argument --repeat: must be 1 or more``) with exit 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(minimum: int, note: str = "") -> Callable[[str], int]:
    """A ``type=`` for a whole number >= ``minimum``; ``note`` ends the too-small message
    (``whole_number(0, " (0: no limit)")``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more{note}")
        return value

    return parse


def positive_float(text: str) -> float:
    """A number of seconds (or any quantity) > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def byte_size(text: str) -> int:
    """``8M``, ``512k``, ``1048576``: a positive number of bytes (binary units)."""
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    body = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = body[-1:] if body[-1:] in units else ""
    try:
        value = int(float(body[:len(body) - len(unit)]) * units[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 8M)") from None
    if value < 1024:
        raise argparse.ArgumentTypeError("must be at least 1K")
    return value


def resource(text: str) -> tuple[str, float]:
    """``GPU=1``: a Dask worker resource a step needs, and how much of it."""
    name, sep, amount = text.partition("=")
    try:
        value = float(amount) if sep else 1.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"not NAME=AMOUNT: {text!r} (e.g. GPU=1)") from None
    if not name.strip() or value <= 0:
        raise argparse.ArgumentTypeError(f"not NAME=AMOUNT: {text!r} (e.g. GPU=1)")
    return name.strip(), value
