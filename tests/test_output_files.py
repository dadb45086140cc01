"""The files a run writes (``--json``, ``--trace``, ``--report``): ``--json -`` puts the
result alone on stdout, the files honour the umask and keep an existing file's mode, the
trace's spans nest and cover every step (real CLI, real git worlds)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.repros import run_args, target
from helpers.worlds import World, cli, snapshot

GOOD_IF = "device .* not found"


def test_json_dash_writes_only_the_result_to_stdout(world: World) -> None:
    before = snapshot(world)
    r = cli(world, "run", *target(world), "--good", world.sha(0), "--bad", world.sha(300),
            "--build", "./build.sh", "--good-if", GOOD_IF, "--json", "-", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "found" and result["first_bad"] == world.sha(200)
    # The human output went to stderr, the build and repro output included.
    assert f"{world.sha(200)} is the first bad commit" in r.stderr
    assert "built against" in r.stderr
    assert not Path(world.superproject, "-").exists()
    assert snapshot(world) == before


def test_json_dash_carries_an_aborted_result_too(world: World) -> None:
    r = cli(world, "run", *target(world), "--good", world.sha(0), "--bad", world.sha(300),
            "--json", "-", "--", "sh", "-c", "exit 130")
    assert r.returncode == 3, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "aborted" and "exit 130" in result["error"]


def test_json_dash_is_accepted_where_output_paths_are_checked(world: World) -> None:
    # '-' is not a file name to check: no "directory does not exist" refusal.
    r = cli(world, "run", *target(world), "--good", world.sha(199), "--bad", world.sha(200),
            "--good-if", GOOD_IF, "--json", "-", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["first_bad"] == world.sha(200)
    assert os.path.exists(world.superproject / "-") is False


@pytest.mark.parametrize(("umask", "mode"), [("022", 0o644), ("077", 0o600)])
def test_output_files_honour_the_umask(world: World, tmp_path: Path, umask: str,
                                       mode: int) -> None:
    out = {flag: tmp_path / f"out.{flag}" for flag in ("json", "trace", "report")}
    argv = ["run", *target(world), "--good", world.sha(190), "--bad", world.sha(210),
            "--good-if", GOOD_IF, *(w for f, p in out.items() for w in (f"--{f}", str(p))),
            "--", "./repro.sh"]
    exe = shutil.which("bisectkit")
    assert exe is not None
    r = subprocess.run(["sh", "-c", f'umask {umask}; exec "$@"', "sh", exe, *argv],
                       cwd=world.superproject, env=world.env, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr + r.stdout
    for flag, path in out.items():
        assert stat.S_IMODE(path.stat().st_mode) == mode, (flag, oct(path.stat().st_mode))


def test_an_existing_output_file_keeps_its_mode(world: World, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("{}\n", encoding="utf-8")
    out.chmod(0o640)
    r = cli(world, "run", *target(world), "--good", world.sha(190), "--bad", world.sha(210),
            "--good-if", GOOD_IF, "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["status"] == "found"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_trace_spans_nest_and_cover_every_step(world: World, tmp_path: Path):
    trace = tmp_path / "trace.json"
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--good", world.sha(0), "--bad", world.sha(300), "--build",
                         "./build.sh", "--good-if", GOOD_IF, "--trace", str(trace),
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    steps = json.loads(out.read_text())["steps"]
    for step in steps:
        mine = [e for e in events if e.get("tid") == step["index"]]
        (outer,) = [e for e in mine if e["ph"] == "X" and e["name"] == "step"]
        lo, hi = outer["ts"], outer["ts"] + outer["dur"]
        names = {e["name"] for e in mine if e["ph"] == "X"}
        assert {"materialise", "checkout", "build", "repro", "classify"} <= names
        for e in mine:
            if e["ph"] == "X":
                assert lo - 1 <= e["ts"] and e["ts"] + e["dur"] <= hi + 1, e
            elif e["ph"] == "i":
                assert lo - 1 <= e["ts"] <= hi + 1
        (mat,) = [e for e in mine if e["name"] == "materialise"]
        patches = [e for e in mine if e["name"].startswith("patch ")]
        assert len(patches) == len(step["patches"]) == 4
        for e in patches:
            assert mat["ts"] - 1 <= e["ts"] and e["ts"] + e["dur"] <= mat["ts"] + mat["dur"] + 1
        verdicts = [e for e in mine if e["ph"] == "i"]
        assert [e["name"] for e in verdicts] == [f"verdict: {step['verdict']}"]
        assert any(e["ph"] == "M" for e in mine)  # the track is named


def test_an_output_that_cannot_be_written_costs_none_of_the_others(world: World,
                                                                   tmp_path: Path) -> None:
    """``--json``'s folder becomes a file during the run (as a full disk would, the write
    fails): the run says so (exit 4, the file named) and still writes ``--trace`` and
    ``--report``; the user's tree is restored."""
    before = snapshot(world)
    lost = tmp_path / "lost"
    lost.mkdir()
    breaker = tmp_path / "breaker.sh"
    breaker.write_text(f"#!/bin/sh\nif [ -d {lost} ]; then rm -rf {lost}; touch {lost}; fi\n"
                       "exec ./repro.sh\n")
    breaker.chmod(0o755)
    trace, report = tmp_path / "t.json", tmp_path / "r.md"
    r = cli(world, *run_args(world, "--good", world.sha(199), "--bad", world.sha(200),
                             "--good-if", GOOD_IF, "--json", str(lost / "r.json"),
                             "--trace", str(trace), "--report", str(report), "--",
                             str(breaker)))
    assert r.returncode == 4, r.stderr
    assert f"cannot write {lost / 'r.json'}" in r.stderr
    assert json.loads(trace.read_text())["traceEvents"]
    assert world.sha(200)[:12] in report.read_text()
    assert f"report written to {report}" in flat(r.stdout)
    assert snapshot(world) == before


def test_an_output_turned_into_a_link_during_the_run_is_not_followed(world: World,
                                                                     tmp_path: Path) -> None:
    """The output paths are checked when the run starts (never inside the submodule);
    a repro that then makes ``--json`` a link into the submodule must not get the result
    written over a file the submodule tracks, before the restore (which it then refused,
    the submodule left on a candidate): exit 4 naming the file, nothing written there,
    everything restored; the other outputs still written."""
    before = snapshot(world)
    tracked = world.submodule / "lib" / "bug.txt"
    out = tmp_path / "out"
    out.mkdir()
    linker = tmp_path / "linker.sh"
    linker.write_text(f"#!/bin/sh\nln -sfn {tracked} {out / 'r.json'}\nexec ./repro.sh\n")
    linker.chmod(0o755)
    trace = tmp_path / "t.json"
    r = cli(world, *run_args(world, "--good", world.sha(199), "--bad", world.sha(200),
                             "--good-if", GOOD_IF, "--json", str(out / "r.json"),
                             "--trace", str(trace), "--", str(linker)))
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert f"cannot write {out / 'r.json'}" in r.stderr and "link" in r.stderr
    assert json.loads(trace.read_text())["traceEvents"]
    assert snapshot(world) == before
    assert world.git(world.submodule, "status", "--porcelain", "--untracked-files=no") == ""


def test_every_output_option_has_its_format_and_every_format_its_option() -> None:
    """A new output format is its option (``cli/options.py``) and its class
    (``ui/report/outputs.py``): neither can be added without the other."""
    from bisectkit.cli import about
    from bisectkit.cli.options import OUTPUT_OPTIONS
    from bisectkit.cli.targets import dest_of
    from bisectkit.commands.registry import build_parser
    from bisectkit.ui.report.outputs import FORMATS

    assert sorted(cls.flag for _, cls in FORMATS) == sorted(OUTPUT_OPTIONS)
    run = about.subcommand(build_parser(False), "run")
    given = run.parse_known_args([f"{flag}=out{flag}" for flag in OUTPUT_OPTIONS])[0]
    assert [getattr(given, dest_of(cls.flag)) for _, cls in FORMATS] == \
        [f"out{cls.flag}" for _, cls in FORMATS]
