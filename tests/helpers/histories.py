"""Small worlds and histories with merges, made with the git CLI (``--all-parents``)."""

from __future__ import annotations

from pathlib import Path

from helpers.worlds import World, WorldSpec

#: A small world: no stack conflicts, no build breaks, no bug upstream (the tests add theirs).
SMALL = WorldSpec(commits=40, merge_base=30, bug_at=1000, build_breaks=[], feature_prep=5,
                  reverted=None, picks=[], pick_by_patch_id=None, local_conflict=None)

#: Bad while any tracked bug.txt says BUG, or while main.txt and side.txt both say HALF
#: (two sides good apart, bad together: a semantic conflict only the merge has).
CHECK = """#!/bin/sh
if grep -qs BUG bug.txt "$BUG_FILE"; then echo "bug found"; exit 1; fi
if grep -qs HALF main.txt && grep -qs HALF side.txt; then echo "halves clash"; exit 1; fi
echo fine
"""


def check_script(w: World) -> str:
    """:data:`CHECK` written into the world's root; its path."""
    path = w.root / "check.sh"
    path.write_text(CHECK, encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def commit(w: World, repo: Path, message: str, **files: str) -> str:
    """Commit ``files`` (``name_txt="text"`` writes name.txt) in ``repo``; the commit's sha."""
    for name, text in files.items():
        (repo / name.replace("_", ".")).write_text(text + "\n", encoding="utf-8")
        w.git(repo, "add", name.replace("_", "."))
    w.git(repo, "commit", "-q", "-m", message)
    return w.git(repo, "rev-parse", "HEAD")


def merge(w: World, repo: Path, branch: str, message: str) -> str:
    """Merge ``branch`` (always a merge commit); its sha."""
    w.git(repo, "merge", "-q", "--no-ff", "-m", message, branch)
    return w.git(repo, "rev-parse", "HEAD")


def side_history(w: World, repo: Path, bug_on: str) -> dict[str, str]:
    """main: base c1 c2 M(side: s1 s2 s3) c3; the bug (bug.txt: BUG) at ``bug_on``."""
    c: dict[str, str] = {"base": w.git(repo, "rev-parse", "HEAD")}
    main = w.git(repo, "rev-parse", "--abbrev-ref", "HEAD")

    def bug(name: str) -> dict[str, str]:
        return {"bug_txt": "BUG"} if name == bug_on else {}

    w.git(repo, "checkout", "-q", "-b", "side")
    for name in ("s1", "s2", "s3"):
        c[name] = commit(w, repo, f"side {name}", side_txt=name, **bug(name))
    w.git(repo, "checkout", "-q", main)
    for name in ("c1", "c2"):
        c[name] = commit(w, repo, f"main {name}", main_txt=name, **bug(name))
    c["M"] = merge(w, repo, "side", "Merge branch 'side'")
    c["c3"] = commit(w, repo, "main c3", main_txt="c3")
    return c
