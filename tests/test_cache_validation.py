"""A damaged verdict cache costs rebuilds, never a wrong answer or a traceback (real CLI).

``.git/bisectkit/verdicts.json`` is written by bisectkit, but it can be
damaged (a full disk, an editor, another program, another version): every
entry is checked on reading and at lookup, an invalid one is a miss (tested
again and overwritten), and a file that cannot be used at all is treated as
empty, said once, and rebuilt. And the cache keeps only verdicts that are the
commit's: never one a timeout had a say in, never a skip the machine decided.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.worlds import SUBMODULE, World, cli

from bisectkit.store.cachefile import FORMAT_VERSION, CacheData, parse, to_json

GOOD_IF = "device .* not found"
FIRST_BAD = 200  # the world's bug


def bisect(world: World, out: Path) -> tuple[list[dict], str]:
    """One ``bisectkit run`` (it must succeed): its steps, and its output in one line."""
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh",
            "--good-if", GOOD_IF, "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(FIRST_BAD)
    return result["steps"], " ".join((r.stdout + r.stderr).split())


def cache_file(world: World) -> Path:
    return world.superproject / ".git" / "bisectkit" / "verdicts.json"


#: Ways an entry can be damaged; the last ones look fine to a careless reader.
DAMAGE = [
    lambda e: e.update(verdict="maybe"),
    lambda e: e.pop("verdict"),
    lambda e: e.update(reason=["exit 1"]),
    lambda e: e.update(flags="flaky"),
    lambda e: e.update(extra=[1]),
]


def test_damaged_entries_are_tested_again_and_overwritten(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    steps, _ = bisect(world, out)
    assert all(s["source"] == "run" for s in steps)
    data = json.loads(cache_file(world).read_text())
    entries = data.get("entries", data)  # (format 1 before format 2: the test fails there)
    keys = sorted(entries)
    assert len(keys) > len(DAMAGE) + 1
    # Written in format 1 (a bare key -> entry object, as before format 2): the keys
    # are computed the same way, so the sound entries are still reused.
    damaged = {}
    for key, damage in zip(keys, DAMAGE, strict=False):
        damage(entries[key])
        damaged[key] = entries[key]
    entries[keys[len(DAMAGE)]] = "good"  # not even an object
    cache_file(world).write_text(json.dumps(entries), encoding="utf-8")
    steps, text = bisect(world, out)  # the right answer (checked by bisect), no traceback
    n = len(DAMAGE) + 1
    assert f"note: {n} damaged entries of the verdict cache" in text
    assert "ignored (tested again)" in text
    tested = [s for s in steps if s["source"] == "run"]
    assert len(tested) == n, [s["reason"] for s in steps]
    assert all(s["source"] == "cache" for s in steps if s not in tested)
    # Overwritten with sound entries: the next run reuses every verdict, and says nothing.
    entries = json.loads(cache_file(world).read_text())["entries"]
    assert all(entries[k]["verdict"] in ("good", "bad", "skip") for k in keys)
    steps, text = bisect(world, out)
    assert all(s["source"] == "cache" for s in steps) and "note:" not in text


def test_verdicts_of_another_kind_are_not_trusted(world: World, tmp_path: Path):
    """Every entry says "maybe" (another program's verdicts): not good, not bad, so the
    engine would have had to guess; all are tested again and the answer is right."""
    out = tmp_path / "r.json"
    first, _ = bisect(world, out)
    data = json.loads(cache_file(world).read_text())
    for entry in data.get("entries", data).values():
        entry["verdict"] = "maybe"
    cache_file(world).write_text(json.dumps(data), encoding="utf-8")
    steps, text = bisect(world, out)  # checks the answer
    assert [s["source"] for s in steps] == ["run"] * len(first)
    assert f"note: {len(first)} damaged entries" in text


@pytest.mark.parametrize(("content", "why"), [
    ("[1, 2]", "not a JSON object but a list"),
    ('"verdicts"', "not a JSON object but a string"),
    ("{\"abc\": ", "not valid JSON"),
    ("\xff\xfe garbage", "not UTF-8 text"),
    ('{"version": 99, "entries": {}}', "format 99, written by another bisectkit version"),
    ('{"version": 2, "entries": [["key", "good"]]}', "its entries are a list"),
])
def test_an_unusable_cache_file_is_rebuilt(world: World, tmp_path: Path, content: str,
                                           why: str):
    path = cache_file(world)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("latin-1"))
    steps, text = bisect(world, tmp_path / "r.json")
    assert all(s["source"] == "run" for s in steps)
    assert f"note: the verdict cache {path} is unreadable ({why}" in flat(text)
    assert "it is being rebuilt" in text
    data = json.loads(path.read_text())
    assert data["version"] == FORMAT_VERSION and len(data["entries"]) == len(steps)


def test_an_entry_moved_to_another_key_is_damaged(world: World, tmp_path: Path):
    """Two entries swapped between keys (a hand merge of two cache files, a tool that
    rewrote the file): each still says which trees and inputs it was tested with, and
    neither is those of the key it sits under, so both are tested again."""
    out = tmp_path / "r.json"
    bisect(world, out)
    data = json.loads(cache_file(world).read_text())
    entries = data["entries"]
    good = next(k for k, v in entries.items() if v["verdict"] == "good")
    bad = next(k for k, v in entries.items() if v["verdict"] == "bad")
    entries[good], entries[bad] = entries[bad], entries[good]
    cache_file(world).write_text(json.dumps(data), encoding="utf-8")
    steps, text = bisect(world, out)  # the right answer (checked by bisect)
    assert "note: a damaged entry of the verdict cache" in text
    assert "was ignored: it was written for other trees or inputs" in text
    assert 1 <= sum(s["source"] == "run" for s in steps) <= 2, [s["reason"] for s in steps]


# -- verdicts that are not the commit's are not kept -------------------------------

def run_json(world: World, out: Path, *args: str) -> tuple[int, list[dict], str]:
    """``bisectkit run ARGS``: exit status, steps, output in one line."""
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--json", str(out), *args)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads(out.read_text())["steps"], " ".join(
        (r.stdout + r.stderr).split())


#: Runs the world's repro, after sleeping past ``--timeout`` the first time ever (``{once}``).
SLOW_ONCE_SH = """#!/bin/sh
if mkdir {once} 2>/dev/null; then sleep 30; fi
exec ./repro.sh
"""


def test_a_verdict_a_timed_out_run_decided_is_not_kept(world: World, tmp_path: Path):
    """``-p flaky --repeat 2``: the first repro run of the run times out (a loaded
    machine) and makes its step bad (any-bad); the step's reason does not say "timed out",
    yet the verdict is not kept: the next run tests that commit again."""
    repro = tmp_path / "slow-once.sh"
    repro.write_text(SLOW_ONCE_SH.format(once=tmp_path / "loaded"), encoding="utf-8")
    repro.chmod(0o755)
    # (No build: --timeout applies to it too, and only the repro's hiccup is wanted.)
    args = ("-p", "flaky", "--repeat", "2", "--timeout", "3", "--timeout-verdict", "bad",
            "--good-if", GOOD_IF, "--", str(repro))
    out = tmp_path / "r.json"
    code, steps, _ = run_json(world, out, *args)
    assert code == 0
    assert steps[0]["reason"] == "2 runs: 1 bad, 1 good -> bad (any-bad)", steps[0]
    code, again, _ = run_json(world, out, *args)
    assert code == 0
    first = [s for s in again if s["commit"] == steps[0]["commit"]]
    assert first and first[0]["source"] == "run", first
    assert json.loads(out.read_text())["first_bad"] == world.sha(FIRST_BAD)


#: A GPU repro: the driver is missing until ``{loaded}`` exists.
GPU_SH = """#!/bin/sh
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then
  echo 'error: miscompiled'; exit 1
fi
if [ -f {loaded} ]; then echo ok; exit 0; fi
echo "HAL device 'vulkan' not found"; exit 1
"""


def test_a_skip_the_machine_decided_is_not_kept(world: World, tmp_path: Path):
    """``-p iree_devices --have-driver vulkan``: the driver is missing on this machine,
    so steps are skipped for the machine's sake (and the run stops); once the machine is
    fixed, those commits are tested, not skipped from the cache."""
    loaded = tmp_path / "driver-loaded"
    repro = tmp_path / "gpu.sh"
    repro.write_text(GPU_SH.format(loaded=loaded), encoding="utf-8")
    repro.chmod(0o755)
    args = ("-p", "iree_devices", "--have-driver", "vulkan", "--", str(repro))
    out = tmp_path / "r.json"
    code, steps, text = run_json(world, out, *args)
    assert code == 3 and "skipped for the machine" in text
    assert steps and all(s["verdict"] == "skip" and s.get("environment") for s in steps)
    loaded.write_text("", encoding="utf-8")
    code, again, _ = run_json(world, out, *args)
    assert code == 0
    assert not [s for s in again if s["source"] == "cache"], [s["reason"] for s in again]
    assert json.loads(out.read_text())["first_bad"] == world.sha(FIRST_BAD)


# -- the file's format, in process ---------------------------------------------------

KEY = "a" * 64


def test_parse_keeps_valid_entries_only():
    good = {"verdict": "bad", "reason": "exit 1", "flags": ["flaky"], "extra": {"runs": 3},
            "trees": "t", "inputs": "i"}
    data = parse({"version": FORMAT_VERSION,
                  "entries": {KEY: good, "b" * 64: {"verdict": "maybe", "reason": ""},
                              "not-a-key": {"verdict": "good", "reason": ""},
                              "c" * 64: {"verdict": "good", "reason": "", "trees": 3}},
                  "inputs": {"i": {"build": "x"}, "j": "damaged"}})
    assert data.entries == {KEY: good}
    assert data.damaged == 3 and data.problem is None
    assert data.inputs == {"i": {"build": "x"}}


def test_parse_reads_format_1_and_refuses_other_versions():
    assert parse({KEY: {"verdict": "good", "reason": "exit 0"}}).entries == {
        KEY: {"verdict": "good", "reason": "exit 0"}}
    assert parse({"version": 3, "entries": {}}).problem is not None
    assert parse(None).problem == "not a JSON object but null"


def test_only_the_inputs_of_kept_entries_are_written():
    data = CacheData(entries={KEY: {"verdict": "good", "reason": "", "inputs": "new"}},
                     inputs={"old": {}, "new": {"build": "x"}})
    assert to_json(data)["inputs"] == {"new": {"build": "x"}}
