"""The verdict cache's file (``.git/bisectkit/verdicts.json``), read defensively.

Format 2::

    {"version": 2,
     "entries": {"<key: sha256 hex>": {"verdict": "good", "reason": "exit 0",
                                       "flags": [...], "extra": {...},
                                       "trees": "<digest>", "inputs": "<digest>"}},
     "inputs": {"<digest>": {<per-part digests: bisectkit.store.keydiff.summary>}}}

``trees`` and ``inputs`` tell which trees and which key material (commands,
files, environment...) a verdict was tested with, so a run that finds the
same trees under other inputs can say what changed; ``inputs`` keeps the
part digests of the last :data:`KEPT_INPUTS` key materials written.

Format 1 (a bare object of key -> entry, before this one) is read too: its
keys were computed the same way, so they still match exactly when nothing
changed. Every entry is checked on reading; one that is not a valid verdict
(a damaged file, another program; in format 2, one without its ``trees``
and ``inputs``) is ignored, so it is a miss, tested again and overwritten.
At lookup, an entry whose ``trees`` or ``inputs`` are not those of the
lookup (moved to another key) is ignored the same way
(:meth:`bisectkit.store.cache.VerdictCache.get`). A file that is not JSON, not an
object, or of another format version is treated as empty (and said so
once): it only costs rebuilds, never a wrong answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bisectkit.model import VERDICTS

FORMAT_VERSION = 2
#: Key materials whose part digests are kept (the diagnostics of older ones are dropped).
KEPT_INPUTS = 8
_KEY = re.compile(r"[0-9a-f]{64}")


@dataclass
class CacheData:
    """The entries of a cache file, the part digests of their inputs, what was wrong."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Why the whole file was not used (None: it was, or there was none).
    problem: str | None = None
    #: Entries ignored because they are not valid verdicts.
    damaged: int = 0


def parse(data: Any) -> CacheData:
    """The valid content of a decoded cache file (never raises)."""
    if not isinstance(data, dict):
        return CacheData(problem=f"not a JSON object but {_kind(data)}")
    if "version" not in data:
        return _entries(data)  # format 1
    if data.get("version") != FORMAT_VERSION:
        return CacheData(problem=f"format {data.get('version')!r}, written by another "
                                 f"bisectkit version (this one reads format {FORMAT_VERSION})")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return CacheData(problem=f"its entries are {_kind(entries)}, not a JSON object")
    result = _entries(entries, digests=True)
    inputs = data.get("inputs")
    if isinstance(inputs, dict):  # diagnostics only: a damaged one is simply not used
        result.inputs = {k: v for k, v in inputs.items() if isinstance(v, dict)}
    return result


def _entries(raw: dict[Any, Any], digests: bool = False) -> CacheData:
    result = CacheData()
    for key, entry in raw.items():
        if isinstance(key, str) and _KEY.fullmatch(key) and valid_entry(entry) and (
                not digests or ("trees" in entry and "inputs" in entry)):
            result.entries[key] = entry
        else:
            result.damaged += 1
    return result


def valid_entry(entry: Any) -> bool:
    """Is ``entry`` a verdict this version can trust the shape of?"""
    if not isinstance(entry, dict):
        return False
    flags = entry.get("flags", [])
    return (entry.get("verdict") in VERDICTS
            and isinstance(entry.get("reason"), str)
            and isinstance(flags, list) and all(isinstance(f, str) for f in flags)
            and isinstance(entry.get("extra", {}), dict)
            and all(isinstance(entry.get(k, ""), str) for k in ("trees", "inputs")))


def to_json(data: CacheData) -> dict[str, Any]:
    """The file's content: the entries, and the part digests of the inputs they were
    tested with (at most :data:`KEPT_INPUTS`, the most recently used last)."""
    used = {e.get("inputs") for e in data.entries.values()}
    kept = [k for k in data.inputs if k in used][-KEPT_INPUTS:]
    return {"version": FORMAT_VERSION, "entries": data.entries,
            "inputs": {k: data.inputs[k] for k in kept}}


def _kind(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number",
             bool: "a boolean", type(None): "null", dict: "an object"}
    return names.get(type(value), type(value).__name__)
