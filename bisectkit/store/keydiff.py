"""What changed between two verdict-cache keys, part by part, in the user's words.

The cache stores, with its verdicts, a small digest of each part of every key
they were tested under (:func:`summary`); when a run finds verdicts for the
same trees under another key, :func:`differences` says which part changed
(``untracked notes.txt is new``, ``the build command changed``, ``CC changed``).
Digests are short: they only tell parts apart for this message, the key
itself is a full sha256.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from bisectkit.git.shapes import SHAPES

#: Parts made of several items, each with its own digest: (new, changed, gone) phrasings.
ITEMIZED: dict[str, tuple[str, str, str]] = {
    "files": ("{} is new", "{} changed", "{} is gone"),
    "cache_inputs": ("--cache-input {} is new", "--cache-input {} changed",
                     "--cache-input {} is no longer given"),
    "submodules": ("submodule {} is new", "submodule {} changed (HEAD or local edits)",
                   "submodule {} is gone"),
    "env": ("{} is now read", "{} changed", "{} is no longer read"),
    "untracked": ("untracked {} is new", "untracked {} changed", "untracked {} is gone"),
    "modified": ("local edit of {} is new", "local edit of {} changed",
                 "local edit of {} is gone"),
}
#: Parts of one piece, in the order they are told.
WHOLE: dict[str, str] = {
    "build": "the build command changed",
    "repro": "the repro command changed",
    "rules": "the --good-if/--bad-if/--skip-if rules changed",
    "timeout": "--timeout changed",
    "timeout_verdict": "--timeout-verdict changed",
    "plugins": "the plugins or their options changed",
    # The clone shapes that add to the key (the sparse-checkout patterns).
    **{s.name: s.key_changed for s in SHAPES if s.key_changed},
    "keep_output": "--keep-output changed",
    "where": ("the steps ran elsewhere (in workspaces, which hold only committed files, "
              "or in your tree)"),
}
#: An environment variable that is not set (told apart from an empty one).
UNSET = "unset"

Summary = dict[str, Any]


@dataclass(frozen=True)
class Change:
    """One changed part (``item``: the file, variable or submodule; "" for a whole part)."""

    part: str
    item: str
    text: str


def digest(value: Any) -> str:
    """A short digest of a JSON value (to tell parts apart, not to key verdicts)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def summary(parts: dict[str, Any]) -> Summary:
    """Per-part digests of a key's material (see :func:`bisectkit.store.cachekey.run_identity`)."""
    flat = dict(parts)
    local = flat.pop("superproject", None)
    if isinstance(local, dict):
        flat.update({kind: local.get(kind, {}) for kind in ("modified", "untracked")})
    out: Summary = {}
    for name, value in flat.items():
        if name == "env" and isinstance(value, dict):
            out[name] = {k: UNSET if v is None else digest(v) for k, v in value.items()}
        elif name in ITEMIZED and isinstance(value, dict):
            out[name] = {str(k): digest(v) for k, v in value.items()}
        else:
            out[name] = digest(value)
    return out


def differences(old: Summary, new: Summary, root: str = "") -> list[Change]:
    """The parts that differ from ``old`` to ``new``: whole parts first, then items by
    part; paths under ``root`` are shown relative to it."""
    changes: list[Change] = []
    names = [*WHOLE, *(n for n in sorted(old.keys() | new.keys()) if n not in WHOLE)]
    for name in names:
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name in ITEMIZED and isinstance(before or {}, dict) and isinstance(after or {}, dict):
            changes += _items(name, before or {}, after or {}, root)
        else:
            changes.append(Change(name, "", WHOLE.get(name, f"the key's {name} changed")))
    # A file the commands name that is also untracked is told once, as a named file
    # (named files inside the superproject are keyed relative to it).
    named = {c.item for c in changes if c.part == "files"}
    return [c for c in changes if c.part not in ("untracked", "modified")
            or not {c.item.rstrip("/"), f"{root.rstrip('/')}/{c.item.rstrip('/')}"} & named]


def _items(name: str, before: dict[str, str], after: dict[str, str],
           root: str) -> list[Change]:
    new, changed, gone = ITEMIZED[name]
    out = []
    for item in sorted(before.keys() | after.keys()):
        was, now = before.get(item), after.get(item)
        if was == now:
            continue
        shown = _relative(item, root)
        if name == "env" and UNSET in (was, now) and None not in (was, now):
            text = f"{shown} is now {'unset' if now == UNSET else 'set'}"
        else:
            text = (new if was is None else gone if now is None else changed).format(shown)
        out.append(Change(name, item, text))
    return out


def _relative(item: str, root: str) -> str:
    prefix = root.rstrip("/") + "/"
    return item[len(prefix):] if root and item.startswith(prefix) else item


def describe(changes: list[Change], limit: int = 3) -> str:
    """The first ``limit`` changes in one phrase (``a; b; c and 2 more``)."""
    if not changes:
        return "the key changed"
    text = "; ".join(c.text for c in changes[:limit])
    return text + (f" and {len(changes) - limit} more" if len(changes) > limit else "")
