"""``bisectkit status`` and defaults read from git config."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.worlds import SUBMODULE, World, cli, snapshot

GOOD_IF = "device .* not found"


def test_status_of_a_patched_submodule(world: World):
    before = snapshot(world)
    r = cli(world, "status", "--", "lib/bug.txt", "lib/build.txt")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"merge-base  {world.sha(300)[:12]} upstream commit 300" in out
    assert "patched: 4 local patches (what happens at upstream/main):" in out
    assert "100, 1 touching lib/bug.txt lib/build.txt" in " ".join(out.split())  # fits 80
    assert f"{world.sha(320)[:12]} upstream commit 320: touch lib/build.txt" in out

    data = json.loads(cli(world, "status", "--json").stdout)
    assert data["clean"] is False
    assert data["merge_base"] == world.sha(300)
    assert data["upstream_commits_since_merge_base"] == 100
    assert [c["commit"] for c in data["affecting"]] == [world.sha(n) for n in range(301, 401)]
    by_kind = [(p["kind"], p["refers_to"], p["upstream_has_it"], p["at_upstream_head"])
               for p in data["patches"]]
    assert by_kind == [
        ("revert", world.sha(120), False, "applied"),
        ("cherry-pick", world.sha(320), True, "dropped"),
        ("cherry-pick", world.sha(350), True, "dropped"),  # found by patch id
        ("local", None, False, "conflict"),  # upstream 340 rewrote the same line
    ]
    assert data["patches"][2]["found_by"] == "patch-id"
    assert snapshot(world) == before


def test_status_of_a_clean_submodule_and_limit(world: World):
    world.git(world.submodule, "checkout", "-q", "--detach", world.sha(390))
    data = json.loads(cli(world, "status", "--json").stdout)
    assert data["clean"] is True and data["patches"] == []
    assert data["merge_base"] == world.sha(390)
    assert data["upstream_commits_since_merge_base"] == 10
    r = cli(world, "status", "--limit", "3")
    assert "clean: no local patches" in r.stdout
    assert "... 7 older not shown" in r.stdout
    assert f"{world.sha(400)[:12]} upstream commit 400" in r.stdout


def test_status_bad_input(world: World):
    r = cli(world, "status", "--submodule", "lib")
    assert r.returncode == 2 and "not a submodule" in r.stderr
    r = cli(world, "status", "--upstream", "nope/main")
    assert r.returncode == 2 and "unknown revision 'nope/main'" in r.stderr


def test_config_supplies_submodule_upstream_and_build(world: World, tmp_path: Path):
    log = tmp_path / "builds.log"
    sup = world.superproject
    world.git(sup, "config", "bisectkit.submodule", SUBMODULE)
    world.git(sup, "config", "bisectkit.upstream", "upstream/main")
    world.git(sup, "config", "bisectkit.build", f"echo configured >> {log} && ./build.sh")
    r = cli(world, "run", "--good", world.sha(0), "--bad", world.sha(300), "--good-if", GOOD_IF,
            "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert set(log.read_text().split()) == {"configured"}

    # Flags win over config.
    world.git(sup, "config", "bisectkit.upstream", "nope/main")
    r = cli(world, "run", "--good", world.sha(0), "--bad", world.sha(300), "--good-if", GOOD_IF,
            "--", "./repro.sh")
    assert r.returncode == 2 and "unknown revision 'nope/main'" in r.stderr
    r = cli(world, "run", "--upstream", "upstream/main", "--good", world.sha(0),
            "--bad", world.sha(300), "--good-if", GOOD_IF, "--no-cache",
            "--build", f"echo flag >> {log} && ./build.sh", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert "flag" in log.read_text().split()
    assert cli(world, "status").returncode == 2  # status reads the same config
    assert cli(world, "status", "--upstream", "upstream/main").returncode == 0


def test_nothing_to_bisect_without_flag_or_config(world: World):
    # Several submodules and no --submodule or config: which one is not guessed.
    sup = world.superproject
    world.git(sup, "update-index", "--add", "--cacheinfo", f"160000,{world.sha(1)},other")
    world.git(sup, "commit", "-q", "-m", "a second submodule")
    r = cli(world, "run", "--good", world.sha(0), "--bad", world.sha(300), "--", "./repro.sh")
    assert r.returncode == 2
    assert ("pass --submodule PATH, --integrate or set git config bisectkit.submodule "
            f"(submodules here: other, {SUBMODULE})") in r.stderr
