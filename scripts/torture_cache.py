"""The verdict cache in the kill torture: keep it across a kill, seed it, damage it.

``verdicts.json`` (format 2: ``{"version", "entries", ...}``) maps a key (the tested
trees plus everything else that decides a verdict; it holds the repro's absolute path,
so a cache is only good in the world copy that made it) to ``{"verdict", "reason",
...}``. A damaged or partly written
cache may only cost rebuilds, never a wrong answer: :func:`damage_cache` makes the
damage a kill, a full disk or a hand edit could leave.
"""

from __future__ import annotations

import json
from pathlib import Path

from worldgen import World

#: What :func:`damage_cache` does to ``verdicts.json`` after a kill.
DAMAGES = ("truncated", "garbage", "maybe", "list", "string-entry", "no-reason")


def cache_path(world: World) -> Path:
    """Where the world's verdict cache lives."""
    return world.superproject / ".git" / "bisectkit" / "verdicts.json"


def forget_cache(world: World) -> None:
    """Start from an empty verdict cache, so the round runs every git command."""
    cache_path(world).unlink(missing_ok=True)


def read_cache(world: World) -> dict[str, object]:
    """The world's verdict cache ({} when there is none)."""
    path = cache_path(world)
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}


def seed_cache(world: World, cache: dict[str, object]) -> None:
    """Make ``cache`` the world's verdict cache."""
    cache_path(world).parent.mkdir(parents=True, exist_ok=True)
    cache_path(world).write_text(json.dumps(cache), encoding="utf-8")


def damage_cache(world: World, kind: str) -> str:
    """Damage ``verdicts.json`` as :data:`DAMAGES` names; what was done."""
    path = cache_path(world)
    if not path.exists():
        return "no cache to damage"
    text = path.read_text(encoding="utf-8")
    if kind == "truncated":
        path.write_text(text[:len(text) // 2], encoding="utf-8")
        return "cache truncated"
    if kind == "garbage":
        path.write_bytes(b"\0\xff{{ not json at all")
        return "cache garbage"
    whole = json.loads(text)
    # Format 2 keeps the entries under "entries"; the first format was the entries alone.
    data = whole["entries"] if isinstance(whole, dict) and "version" in whole else whole
    if kind == "list":
        path.write_text(json.dumps(list(data.values())), encoding="utf-8")
        return "cache a list"
    if not data:
        return "cache empty, nothing to damage"
    # The "bad" entries (all of them when there is none): read as anything but bad, a bad
    # verdict moves the answer; one alone might lie off the fresh run's path.
    keys = [k for k in sorted(data) if isinstance(data[k], dict)
            and data[k].get("verdict") == "bad"] or sorted(data)
    for key in keys:
        if kind == "maybe":
            data[key]["verdict"] = "maybe"
        elif kind == "string-entry":
            data[key] = "bad"
        elif kind == "no-reason":
            data[key].pop("reason", None)
    path.write_text(json.dumps(whole), encoding="utf-8")
    return f"{len(keys)} of {len(data)} cache entries: {kind}"
