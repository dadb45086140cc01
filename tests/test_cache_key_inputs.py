"""The pure parts of the verdict cache's key, in process: which environment variables the
commands read, which superproject paths ``bisectkit.cacheIgnore`` leaves out, and how two
keys' differences are told (the CLI behaviour is in tests/test_cache_key.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisectkit.execute.envscan import env_part, names_in, names_in_files
from bisectkit.store.keydiff import UNSET, describe, differences, summary
from bisectkit.store.pathglobs import PathGlobs


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
    from bisectkit.model import RunOptions
    from bisectkit.store.commandinputs import command_env, named_files

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


@pytest.mark.parametrize(("text", "names"), [
    ("printenv CC CXX; [[ -v DEBUG ]] && test -v TRACE; echo ${!PTR}",
     {"CC", "CXX", "DEBUG", "TRACE", "PTR"}),
    ("ifdef DEBUG\nX := $(origin CC) $(flavor LD) $(value AR)\nendif\n  ifndef NDEBUG",
     {"DEBUG", "CC", "LD", "AR", "NDEBUG"}),
    ('if "A" in os.environ and \'B\' not in environ: os.environb[b"C"]; os.getenvb(b"D")',
     {"A", "B", "C", "D"}),
    ('secure_getenv("E"); _wgetenv(L"F"); os.Getenv("G"); os.LookupEnv(`H`)',
     {"E", "F", "G", "H"}),
    ('env::var("I"); env::var_os("J"); env!("K"); option_env!("L")', {"I", "J", "K", "L"}),
    ('const { M, N: n, O = "x" } = process.env; Deno.env.get("P")', {"M", "N", "O", "P"}),
    ("awk '{print ENVIRON[\"Q\"]}'; ENV.key?('R'); ENV.fetch 'S'; set x $::env(T)",
     {"Q", "R", "S", "T"}),
    # Not reads: grep's -v, a positional parameter, a C include.
    ("grep -v PATTERN file; echo $1; #include <stdlib.h>", set()),
])
def test_names_in_finds_the_other_forms(text: str, names: set[str]):
    assert names_in(text) == names


@pytest.mark.parametrize(("build", "make"), [
    ("make -s", True), ("cd sub && gmake -j8 all", True), ("/usr/bin/make", True),
    ("cmake --build build", False), ("ninja -C build", False),
])
def test_a_command_that_runs_make_reads_makes_variables(build: str, make: bool):
    from bisectkit.execute.envscan import MAKE_VARIABLES
    from bisectkit.model import RunOptions
    from bisectkit.store.commandinputs import command_env

    names = command_env(RunOptions(repro=("./r.sh",), build=build))
    assert (names >= MAKE_VARIABLES) == make
    assert {"CC", "CFLAGS", "LDLIBS", "MAKEFLAGS"} <= MAKE_VARIABLES


def test_the_makefiles_make_reads(tmp_path: Path):
    from bisectkit.store.commandinputs import makefiles

    (tmp_path / "sub").mkdir()
    for name in ("Makefile", "sub/makefile", "sub/Makefile"):
        (tmp_path / name).write_text("all:\n", encoding="utf-8")
    assert makefiles(["-s"], tmp_path) == [str(tmp_path / "Makefile")]
    # GNU make's order: GNUmakefile, makefile, Makefile; -C adds up; -f replaces them.
    assert makefiles(["-C", "sub", "all"], tmp_path) == [str(tmp_path / "sub/makefile")]
    assert makefiles(["--directory=sub"], tmp_path) == [str(tmp_path / "sub/makefile")]
    assert makefiles(["-Csub", "-f", "a.mk", "--file=b.mk", "-fc.mk", "--makefile", "d.mk"],
                     tmp_path) == [str(tmp_path / "sub" / n) for n in ("a.mk", "b.mk", "c.mk",
                                                                         "d.mk")]
    assert makefiles(["-C", "nowhere"], tmp_path) == []


def test_named_files_add_makefiles_and_what_scripts_source_or_include(tmp_path: Path):
    from bisectkit.model import RunOptions
    from bisectkit.store.commandinputs import FOLLOW_DEPTH, named_files

    (tmp_path / "Makefile").write_text("include rules.mk\n-include $(GEN).mk\nall:\n",
                                       encoding="utf-8")
    (tmp_path / "rules.mk").write_text("X = 1\n", encoding="utf-8")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "b.sh").write_text('#!/bin/sh\n. ./env.sh\nsource "local.sh"\n'
                                '. "$HOME/secret.sh"\n', encoding="utf-8")
    (tmp_path / "env.sh").write_text("set -e; . chain1.sh\n", encoding="utf-8")
    (tools / "local.sh").write_text("", encoding="utf-8")  # beside the script only
    for i in range(1, FOLLOW_DEPTH + 2):  # a chain longer than followed
        (tmp_path / f"chain{i}.sh").write_text(f". ./chain{i + 1}.sh\n", encoding="utf-8")
    opts = RunOptions(repro=("./r.sh",), build="make -s && tools/b.sh")
    named, _ = named_files(opts, tmp_path)
    rel = sorted(p.relative_to(tmp_path).as_posix() for p in named)
    assert rel == ["Makefile", "chain1.sh", "chain2.sh", "env.sh", "rules.mk",
                   "tools/b.sh", "tools/local.sh"]


@pytest.mark.parametrize("name", ["notes[1].txt", "#x", "!x", "x*.txt", "a b.txt", "w?.txt",
                                  "back\\slash.txt", "trailing ", "dir/sub [2]/n.txt"])
def test_the_cache_ignore_suggestion_matches_that_path_only(tmp_path: Path, name: str):
    """The pattern bisectkit suggests matches the path and nothing else, here and for git
    itself (a ``.gitignore`` with it); printed shell-quoted, one word."""
    import shlex
    import subprocess

    from worldgen import hermetic_env

    from bisectkit.store.pathglobs import literal_pattern

    pattern = literal_pattern(name)
    others = ["notes1.txt", "x1.txt", "xx.txt", "wa.txt", "a", "sub/" + name.lstrip("/"),
              name.rstrip() + "x", "back/slash.txt", "dir/sub 2/n.txt"]
    others = [o for o in others if o != name]
    globs = PathGlobs([pattern])
    assert globs.match(name)
    assert [o for o in others if globs.match(o)] == []
    assert shlex.split(shlex.join(["git", "config", "--add", "k", pattern]))[-1] == pattern
    # git agrees (check-ignore on paths that need not exist).
    env = hermetic_env(tmp_path / "home")
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / ".git/info/exclude").write_text(pattern + "\n", encoding="utf-8")
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=repo,
                             input="\0".join([name, *others]) + "\0", capture_output=True,
                             text=True, env=env).stdout.split("\0")
    assert [p for p in ignored if p] == [name]


def test_named_files_inside_the_superproject_are_told_once_relative():
    before = summary(_parts(superproject={"modified": {}, "untracked": {}}, files={}))
    after = summary(_parts(files={"a.out": "d8"},
                           superproject={"modified": {}, "untracked": {"a.out": "d8"}},
                           where="workspaces", keep_output=65536))
    assert [c.text for c in differences(before, after, "/w")] == [
        "--keep-output changed",
        "the steps ran elsewhere (in workspaces, which hold only committed files, or in your "
        "tree)", "a.out is new"]


def test_a_submodule_a_checkout_leaves_as_a_folder_is_not_a_local_change(tmp_path: Path):
    """``--integrate`` checks out superproject commits that lack a submodule: its folder,
    left in place, shows as an untracked repository, which is not a change of the user's
    local files (a new untracked file is)."""
    import subprocess

    from worldgen import hermetic_env

    from bisectkit.git.repo import Repo
    from bisectkit.model import RunOptions
    from bisectkit.store.cachekey import run_identity

    env = hermetic_env(tmp_path / "home")

    def git(where: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=where, env=env, check=True, capture_output=True)

    sub, sp = tmp_path / "sub", tmp_path / "sp"
    for repo in (sub, sp):
        repo.mkdir()
        git(repo, "init", "-q")
        (repo / "f").write_text("x\n", encoding="utf-8")
        git(repo, "add", "f")
        git(repo, "commit", "-q", "-m", "f")
    git(sp, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib")
    git(sp, "commit", "-q", "-m", "lib")
    identity = run_identity(RunOptions(repro=("true",)), Repo(sp))
    git(sp, "rm", "-q", "--cached", "lib")  # as a commit without it checked out
    assert identity.changed_local_files(Repo(sp)) == []
    (sp / "notes.txt").write_text("x\n", encoding="utf-8")
    assert identity.changed_local_files(Repo(sp)) == ["notes.txt"]
