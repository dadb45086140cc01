"""Another terminal moving the tree under test, made deterministic: a step's build or repro
moves it once; the run must stop and record nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from helpers.worlds import SUBMODULE, World, cli

GOOD_IF = "device .* not found"
UPSTREAM = "upstream/main"


def once(tmp_path: Path, move: str, then: str, name: str = "interfere") -> Path:
    """A command that runs ``move`` on its first invocation only (``mkdir`` is atomic, so
    two parallel steps cannot both take it), then ``exec``s ``then``."""
    script = tmp_path / f"{name}.sh"
    script.write_text(f"#!/bin/sh\nif mkdir {tmp_path / (name + '.done')} 2>/dev/null; then\n"
                      f"  {move} >/dev/null 2>&1\nfi\nexec {then}\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def submodule_run(world: World, tmp_path: Path, *extra: str, build: str = "./build.sh",
                  repro: str = "./repro.sh", name: str = "result"
                  ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The world's submodule bisection (0..300), its JSON result read back."""
    out = tmp_path / f"{name}.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", UPSTREAM,
            "--good", world.sha(0), "--bad", world.sha(300), "--build", build,
            "--good-if", GOOD_IF, "--json", str(out), *extra, "--", repro, timeout=300)
    assert out.exists(), r.stderr + r.stdout
    return r, json.loads(out.read_text())


def assert_stopped(r: subprocess.CompletedProcess[str], result: dict[str, Any], what: str,
                   when: str, others_in_flight: bool = False) -> str:
    """Exit 3 with the one line saying what moved, when, and that nothing was recorded.

    With ``others_in_flight`` (``--jobs``), a step running beside the stopped one may
    finish first and be recorded: its own workspace's tree was the one it tested. Only
    the stopped step must have recorded nothing."""
    assert r.returncode == 3, r.stdout + r.stderr
    line = r.stderr.splitlines()[-1]
    assert line.startswith("bisectkit: error: "), r.stderr
    assert f"{what} changed during step " in line and f"(seen {when}: " in line, line
    assert "nothing was recorded for that step" in line, line
    assert result["status"] == "aborted"
    recorded = [s for s in result["steps"] if s["source"] == "run"]
    if others_in_flight:
        index = int(line.split(" changed during step ")[1].split()[0])
        recorded = [s for s in recorded if s["index"] == index]
    assert not recorded, result["steps"]
    return line
