"""What a well-formed ``session.json`` and ``candidates.json`` hold.

A damaged file (a disk error, another program, a hand edit) is valid JSON of the
wrong shape as often as it is invalid JSON: a commit that is a number, a list
that is a text. Used as is, such a value surfaces as a traceback in ``status``
or a mark, far from the file. :func:`check` tells it apart when the session is
read, so that the error is one line naming the file and ``reset``.
"""

from __future__ import annotations

import re
from typing import Any

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # a full commit id, SHA-1 or SHA-256


def check(data: dict[str, Any], candidates: object) -> None:
    """Raise :class:`TypeError` naming the first value of ``session.json``'s ``data`` or
    ``candidates.json``'s ``candidates`` of the wrong type (a damaged file)."""
    def commits(value: object) -> bool:
        return isinstance(value, list) and all(isinstance(c, str) and _SHA.fullmatch(c)
                                               for c in value)

    def strings(value: object) -> bool:
        return isinstance(value, list) and all(isinstance(x, str) for x in value)

    terms = data.get("terms")
    for ok, what in (
            (commits(candidates) and bool(candidates), "candidates.json: commits"),
            (isinstance(data.get("strategy"), str) and isinstance(data.get("root"), str),
             "strategy, root: text"),
            (commits([data.get("bad")]) and commits(data.get("good")), "bad, good: commits"),
            (data.get("current") is None or commits([data.get("current")]), "current: commit"),
            (strings(data.get("pathspec")) and strings(data.get("start_argv")),
             "pathspec, start_argv: lists of text"),
            (isinstance(data.get("orig"), dict) and
             all(isinstance(v, dict) for v in data["orig"].values()), "orig: HEADs"),
            (isinstance(data.get("params"), dict) and isinstance(terms, dict) and
             strings([terms.get("old"), terms.get("new")]), "params, terms"),
            (all(isinstance(data.get(k), list) and all(isinstance(x, dict) for x in data[k])
                 for k in ("verdicts", "steps")), "verdicts, steps: lists of records"),
            (isinstance(data.get("current_step", {}), dict), "current_step: a record"),
            (_announced(data.get("announced")), "announced: a commit and a step number")):
        if not ok:
            raise TypeError(what)


def _announced(value: object) -> bool:
    """``announced`` is absent, or names a commit and a step number."""
    if value is None:
        return True
    return (isinstance(value, dict) and _commit(value.get("commit")) and
            isinstance(value.get("index"), int) and not isinstance(value.get("index"), bool)
            and value["index"] > 0)


def _commit(value: object) -> bool:
    """``value`` is one full commit id."""
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def ancestry(value: object) -> dict[str, Any]:
    """``session.json``'s ancestry answers as read back: kept when well formed, else none
    (they are a cache: a session written before they were kept, or a damaged file, only
    asks them again)."""
    if not isinstance(value, dict):
        return {}
    first, pairs = value.get("first", {}), value.get("pairs", {})
    whole = (isinstance(value.get("line", ""), str) and isinstance(first, dict)
             and all(_commit(k) and type(v) is int and v >= 0 for k, v in first.items())
             and isinstance(pairs, dict)
             and all(isinstance(k, str) and type(v) is bool for k, v in pairs.items()))
    return value if whole else {}
