"""scripts/demo.py end to end: the real script, the real console script, real git worlds.

The demo checks its own expectations (and exits non-zero when one fails); these
tests also read its output and the world it kept (``--keep``), so that a demo
that stopped showing a patch action, or named the wrong commit, fails here even
if its own checks were loosened. Step lines are matched by words, not layout.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from worldgen import SUBMODULE, hermetic_env

DEMO = Path(__file__).resolve().parents[1] / "scripts" / "demo.py"


def run_demo(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the demo with ``--keep`` in a hermetic environment; its output and kept world."""
    env = hermetic_env(tmp_path / "home")
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, str(DEMO), "--keep", *args], env=env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    kept = sorted(tmp_path.glob("bisectkit-demo-*"))
    assert len(kept) == 1, (kept, proc.stdout, proc.stderr)
    return proc, kept[0]


def upstream_sha(root: Path, n: int) -> str:
    """Full sha of upstream commit number ``n`` in the kept world."""
    return git(root, root / "upstream", "rev-list", "--reverse", "main").split()[n]


def git(root: Path, repo: Path, *args: str) -> str:
    """Run git in ``repo`` of the kept world under ``root`` (with that world's HOME)."""
    return subprocess.run(["git", *args], cwd=repo, env=hermetic_env(root / "home"),
                          text=True, capture_output=True, check=True).stdout.strip()


def has_line(out: str, *patterns: str) -> bool:
    """Whether one line of ``out`` matches every regex in ``patterns``."""
    return any(all(re.search(p, line) for p in patterns) for line in out.splitlines())


def test_demo_shows_every_patch_action_and_skip(tmp_path: Path):
    proc, root = run_demo(tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    # Patch lines under the step headers: kind and action on one line (the reason may be
    # shortened to fit the terminal; the demo checked it in the JSON result).
    assert has_line(out, r"\brevert\b", r"\bdropped\b"), out
    assert has_line(out, r"\bcherry-pick\b", r"\bdropped\b"), out
    assert has_line(out, r"\brevert\b", r"\bempty\b"), out
    assert has_line(out, r"\[ok\].*revert dropped.*not in the candidate.*: steps? \d"), out
    assert has_line(out, r"\[ok\].*cherry-pick dropped.*already upstream.*: steps? \d"), out
    # Step verdict lines: a skip for a conflict naming the local patch, one for the build.
    local = git(root, root / "fork-work", "rev-parse", "HEAD")
    assert has_line(out, r"\bskip\b", r"conflict", local[:7]), out
    assert has_line(out, r"\bskip\b", r"build failed"), out
    assert f"{upstream_sha(root, 358)} is the first bad commit" in out
    assert "[FAILED]" not in out and "[ok]" in out
    # Back on its branch, clean (the demo checked too; this is the kept world itself).
    sup = root / "superproject"
    assert git(root, sup, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(root, sup / SUBMODULE, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(root, sup, "status", "--porcelain") == ""


def test_demo_integrate_finds_the_advance_then_the_upstream_culprit(tmp_path: Path):
    proc, root = run_demo(tmp_path, "--integrate")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    sup = root / "superproject"
    subjects = dict(line.split(" ", 1) for line in
                    git(root, sup, "log", "--format=%H %s").splitlines())
    advance = next(sha for sha, subject in subjects.items()
                   if subject.endswith("(upstream commit 200)"))
    broken = next(sha for sha, subject in subjects.items() if "breaks the build" in subject)
    assert has_line(out, r"\bskip\b", r"build failed", broken[:7]), out
    assert f"{advance} is the first bad commit" in out
    # The follow-up bisectkit printed was run and named the upstream culprit.
    assert has_line(out, r"^\$ .*bisectkit run .*--submodule " + re.escape(SUBMODULE)), out
    culprit = f"{upstream_sha(root, 190)} is the first bad commit"
    assert out.index(culprit) > out.index(f"{advance} is the first bad commit")
    assert "[FAILED]" not in out and "[ok]" in out
    assert git(root, sup, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(root, sup, "status", "--porcelain") == ""
