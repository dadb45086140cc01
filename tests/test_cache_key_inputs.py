"""The pure parts of the verdict cache's key, in process: which environment variables the
commands read, which superproject paths ``bisectkit.cacheIgnore`` leaves out, and how two
keys' differences are told (the CLI behaviour is in tests/test_cache_key.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisectkit.envscan import env_part, names_in, names_in_files
from bisectkit.keydiff import UNSET, describe, differences, summary
from bisectkit.pathglobs import PathGlobs


@pytest.mark.parametrize(("text", "names"), [
    ("make CC=$CC -j${JOBS:-4} ${#ARGS} $(CFLAGS)", {"CC", "JOBS", "ARGS", "CFLAGS"}),
    ('cmake -DX=$ENV{LLVM_DIR}; perl -e \'print $ENV{"PERL_VAR"}\'', {"LLVM_DIR", "PERL_VAR"}),
    ('os.environ["IREE_HAL_DRIVER"]; os.environ.get(\'A\', "x"); environ.setdefault("B")',
     {"IREE_HAL_DRIVER", "A", "B"}),
    ('os.getenv("C"); const char *d = getenv( "D" ); ENV.fetch("E"); ENV["F"]',
     {"C", "D", "E", "F"}),
    ("process.env.NODE_OPTS + process.env['G']", {"NODE_OPTS", "G"}),
    # Positional and special parameters are not variables; bisectkit's own and the
    # shell's are never inputs.
    ('echo "$1 $@ $? $$ $PWD $SHLVL $_ $BISECTKIT_COMMIT ${BISECTKIT_STEP} $BASH_SOURCE"',
     set()),
    ("cost: $5 and 100%", set()),
])
def test_names_in_finds_the_documented_forms(text: str, names: set[str]):
    assert names_in(text) == names


def test_names_in_files_reads_text_files_only(tmp_path: Path):
    script = tmp_path / "build.sh"
    script.write_text("#!/bin/sh\n${CC:-cc} -O2 main.c\n", encoding="utf-8")
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF\0\0\0$HOME getenv(\"X\")")
    assert names_in_files([script, binary, tmp_path / "missing"]) == {"CC"}


def test_env_part_tells_unset_from_empty():
    part = env_part(["B", "A", "C", "A"], {"A": "", "B": "gcc"})
    assert list(part) == ["A", "B", "C"]
    assert part["C"] is None and part["A"] is not None and part["A"] != part["B"]
    assert "gcc" not in str(part)  # values are hashed


@pytest.mark.parametrize(("patterns", "excluded", "kept"), [
    (["bisect.log"], ["bisect.log", "sub/bisect.log", "bisect.log/x"], ["bisect.log.txt"]),
    (["/notes.txt"], ["notes.txt"], ["docs/notes.txt"]),
    (["*.log"], ["a.log", "deep/er/b.log"], ["a.log.gz", "log"]),
    (["build/"], ["build/x.o", "src/build/y"], ["build", "builder/x"]),
    (["docs/*.md"], ["docs/a.md"], ["docs/sub/a.md", "x/docs/a.md"]),
    (["**/out/**"], ["out/a", "x/out/b/c"], ["out", "outx/a"]),
    (["a/**/b"], ["a/b", "a/x/y/b"], ["a/xb"]),
    (["*.log", "!keep.log"], ["x.log"], ["keep.log"]),
    (["res[0-9].json", "?.tmp"], ["res1.json", "a.tmp"], ["resx.json", "ab.tmp"]),
    (["# comment", "", "nested/"], ["nested/"], ["nested.txt"]),
])
def test_cache_ignore_patterns_are_gitignore_like(patterns: list[str], excluded: list[str],
                                                  kept: list[str]):
    globs = PathGlobs(patterns)
    assert [p for p in excluded if not globs.match(p)] == []
    assert [p for p in kept if globs.match(p)] == []


def _parts(**changes: object) -> dict[str, object]:
    parts: dict[str, object] = {
        "build": "./build.sh", "repro": ["./repro.sh"], "rules": [[], [], []],
        "timeout": None, "timeout_verdict": "skip", "plugins": [],
        "files": {"/w/build.sh": "d1"}, "cache_inputs": {}, "submodules": {},
        "superproject": {"modified": {}, "untracked": {"a.txt": "d2"}},
        "env": {"CC": "h1", "GONE": None},
    }
    parts.update(changes)
    return parts


def test_differences_name_each_changed_part():
    before = summary(_parts())
    after = summary(_parts(
        build="make", env={"CC": "h2", "GONE": "h3", "NEW": None},
        superproject={"modified": {"CMakeLists.txt": "d4"},
                      "untracked": {"a.txt": "d5", "notes.txt": "d6"}},
        files={"/w/build.sh": "d1", "/w/input": "d7"}))
    assert after["env"]["NEW"] == UNSET
    texts = [c.text for c in differences(before, after, "/w")]
    assert texts == ["the build command changed", "CC changed", "GONE is now set",
                     "NEW is now read", "input is new", "local edit of CMakeLists.txt is new",
                     "untracked a.txt changed", "untracked notes.txt is new"]
    assert describe(differences(before, after, "/w")) == (
        "the build command changed; CC changed; GONE is now set and 5 more")
    assert differences(before, summary(_parts())) == []


def test_a_named_untracked_file_is_told_once():
    before = summary(_parts(superproject={"modified": {}, "untracked": {}}))
    after = summary(_parts(files={"/w/build.sh": "d1", "/w/a.out": "d8"},
                           superproject={"modified": {}, "untracked": {"a.out": "d8"}}))
    assert [c.text for c in differences(before, after, "/w")] == ["a.out is new"]


def test_a_script_named_through_a_variable_is_hashed_and_read(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    from bisectkit.commandinputs import command_env, named_files
    from bisectkit.model import RunOptions

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "b.sh").write_text("make CC=$CC\n", encoding="utf-8")
    monkeypatch.setenv("TOOLS", str(tools))
    opts = RunOptions(repro=("sh", "-c", "./r.sh > $TOOLS/out.log"), build="$TOOLS/b.sh -j8")
    (tools / "out.log").write_text("", encoding="utf-8")
    named, written = named_files(opts, tmp_path)
    assert named == [tools / "b.sh"] and written == {str(tools / "out.log")}
    assert command_env(opts) == {"TOOLS"}
    assert names_in_files(named) == {"CC"}
