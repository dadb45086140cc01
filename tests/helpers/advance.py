"""Worlds for ``bisectkit advance``: the pin on upstream BASE, a smoketest committed."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from helpers.worlds import SUBMODULE, World, WorldSpec, cli

BASE = 100
#: The smoketest: the compiler is fine until lib/bug.txt says "miscompile".
SMOKE = "#!/bin/sh\n! grep -q miscompile third_party/llvm-project/lib/bug.txt\n"


def spec(bug_at: int, **changes: Any) -> WorldSpec:
    """A world whose pin sits on upstream BASE; the build breaks at 80 and the fork picks
    the fix (upstream 150), so that pick becomes upstream on the way."""
    settings: dict[str, Any] = dict(merge_base=BASE, bug_at=bug_at, build_breaks=[(80, 150)],
                                    reverted=60, picks=[150], pick_by_patch_id=160,
                                    local_conflict=None)
    settings.update(changes)
    return WorldSpec(**settings)


def with_smoke(w: World) -> World:
    """``w`` with ``smoke.sh`` committed in the superproject."""
    smoke = w.superproject / "smoke.sh"
    smoke.write_text(SMOKE, encoding="utf-8")
    smoke.chmod(0o755)
    w.git(w.superproject, "add", "smoke.sh")
    w.git(w.superproject, "commit", "-qm", "smoketest")
    return w


def advance(w: World, tmp_path: Path, *extra: str, smoke: str = "./smoke.sh",
            build: str = "sh build.sh") -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``bisectkit advance`` (its JSON result read back, ``{}`` when it wrote none)."""
    out = tmp_path / f"advance-{time.monotonic_ns()}.json"
    r = cli(w, "advance", "--build", build, "--json", str(out), *extra, "--", smoke)
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return r, data


def pin_state(w: World) -> dict[str, str]:
    """The superproject's HEAD, branch and staged pin, the submodule's HEAD and branches."""
    sp, sub = w.superproject, w.submodule
    return {"head": w.git(sp, "rev-parse", "HEAD"),
            "branch": w.git(sp, "rev-parse", "--symbolic-full-name", "HEAD"),
            "staged": w.git(sp, "ls-files", "-s", SUBMODULE).split()[1],
            "sub_head": w.git(sub, "rev-parse", "HEAD"),
            "sub_ref": w.git(sub, "rev-parse", "--symbolic-full-name", "HEAD"),
            "sub_branches": w.git(sub, "for-each-ref", "--format=%(refname) %(objectname)",
                                  "refs/heads")}
