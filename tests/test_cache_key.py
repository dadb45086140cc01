"""The verdict cache's key covers everything a verdict depends on (through the real CLI).

Every world here bisects upstream 0..300 of the patched submodule with a repro
whose answer is chosen by an input file: ``bug`` makes upstream 200 the first
bad commit (``lib/bug.txt`` says "miscompile" from there), ``feature`` makes it
upstream 50 (``lib/feature.txt`` leaves v0 there). Changing that input must
re-test every step and give the other answer; an unchanged rerun must reuse
every verdict.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers.repros import BUG, run, script
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

#: ``check.sh FILE``: bad (exit 1) or good (exit 0) depending on what FILE says.
CHECK_SH = """#!/bin/sh
case "$(cat "$1")" in
  bug) grep -q miscompile third_party/llvm-project/lib/bug.txt && exit 1 ;;
  feature) grep -q "feature v0" third_party/llvm-project/lib/feature.txt || exit 1 ;;
  *) echo "unknown input" >&2; exit 200 ;;
esac
exit 0
"""

FIRST_BAD = {"bug": 200, "feature": 50}


def add_script(world: World, name: str = "check.sh", ignore: bool = True) -> None:
    path = world.superproject / name
    path.write_text(CHECK_SH, encoding="utf-8")
    path.chmod(0o755)
    if ignore:
        exclude(world, name)


def exclude(world: World, pattern: str) -> None:
    """Ignore ``pattern`` in the superproject (``.git/info/exclude``)."""
    with (world.superproject / ".git/info/exclude").open("a", encoding="utf-8") as fh:
        fh.write(f"/{pattern}\n")


def bisect(world: World, out: Path, *repro: str, options: tuple[str, ...] = (),
           extra_env: dict[str, str] | None = None) -> list[dict]:
    """One ``bisectkit run``; the steps of its JSON result (it must succeed)."""
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--json", str(out), *options,
            "--", *repro, extra_env=extra_env)
    assert r.returncode == 0, r.stdout + r.stderr
    return list(json.loads(out.read_text())["steps"])


def first_bad(out: Path) -> str:
    return str(json.loads(out.read_text())["first_bad"])


def all_cached(steps: list[dict]) -> bool:
    return bool(steps) and all(s["source"] == "cache" and s["reason"].startswith("cached")
                               for s in steps)


def none_cached(steps: list[dict]) -> bool:
    return bool(steps) and all(s["source"] == "run" for s in steps)


def check_rerun_then_change(world: World, out: Path, change, *repro: str,
                            options: tuple[str, ...] = (),
                            extra_env: dict[str, str] | None = None) -> None:
    """Bisect ("bug"), rerun unchanged (all cached), ``change()`` the input to "feature",
    rerun: every step re-tested and the new answer found."""
    assert none_cached(bisect(world, out, *repro, options=options, extra_env=extra_env))
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])
    assert all_cached(bisect(world, out, *repro, options=options, extra_env=extra_env))
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])
    change()
    steps = bisect(world, out, *repro, options=options, extra_env=extra_env)
    assert none_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["feature"])


def test_a_file_named_in_the_repro_argv_is_in_the_key(world: World, tmp_path: Path):
    """``-- ./check.sh test.cpp``: test.cpp is neither executable nor a known script."""
    add_script(world)
    test_cpp = world.superproject / "test.cpp"
    test_cpp.write_text("bug\n", encoding="utf-8")
    exclude(world, "test.cpp")  # ignored: only its being named puts it in the key
    check_rerun_then_change(world, tmp_path / "r.json",
                            lambda: test_cpp.write_text("feature\n", encoding="utf-8"),
                            "./check.sh", "test.cpp")


def test_a_file_named_inside_a_shell_string_is_in_the_key(world: World, tmp_path: Path):
    """``sh -c './check.sh input'``; the build appends to a log it names (an output)."""
    add_script(world)
    data = world.superproject / "input"  # no suffix, not executable
    data.write_text("bug\n", encoding="utf-8")
    exclude(world, "input")
    exclude(world, "builds.log")
    log = world.superproject / "builds.log"
    check_rerun_then_change(world, tmp_path / "r.json",
                            lambda: data.write_text("feature\n", encoding="utf-8"),
                            "sh", "-c", "./check.sh input",
                            options=("--build", "echo built >> builds.log"))
    # The unchanged rerun reused every verdict although the log it names had grown.
    assert log.read_text().count("built") > 0


def test_cache_input_directory(world: World, tmp_path: Path):
    """``--cache-input DIR``: a file changed deep inside the directory re-tests."""
    add_script(world)
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "which").write_text("bug\n", encoding="utf-8")
    (data / ".git").mkdir()  # skipped: not an input
    repro = world.superproject / "repro-data.sh"
    repro.write_text('#!/bin/sh\nexec ./check.sh "$DATA/sub/which"\n', encoding="utf-8")
    repro.chmod(0o755)
    exclude(world, "repro-data.sh")
    env = {"DATA": str(data)}
    out = tmp_path / "r.json"
    options = ("--cache-input", str(data))
    check_rerun_then_change(world, out,
                            lambda: (data / "sub" / "which").write_text("feature\n",
                                                                        encoding="utf-8"),
                            "./repro-data.sh", options=options, extra_env=env)
    # A .git inside the directory is not an input: changing it re-tests nothing.
    (data / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    assert all_cached(bisect(world, out, "./repro-data.sh", options=options, extra_env=env))


def test_cache_input_must_exist(world: World, tmp_path: Path):
    before = snapshot(world)
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
            world.sha(300), "--cache-input", str(tmp_path / "missing"), "--", "./repro.sh")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"--cache-input {tmp_path / 'missing'}: no such file or directory" in r.stderr
    assert snapshot(world) == before


# Holds up (no defect): editing a --cache-input file tests again instead of replaying.
def test_editing_a_cache_input_tests_again(world: World, tmp_path: Path):
    data = tmp_path / "expected.txt"
    data.write_text("miscompile\n")
    repro = script(tmp_path / "repro.sh", f"""\
        if grep -q miscompile {data} && {BUG}; then exit 1; fi
        exit 0
    """)
    out = tmp_path / "r.json"
    r = run(world, "--cache-input", str(data), repro=(str(repro),), good=190, bad=210)
    assert f"{world.sha(200)} is the first bad commit" in r.stdout, r.stderr
    data.write_text("fixed\n")
    r = run(world, "--cache-input", str(data), repro=(str(repro),), good=190, bad=210,
            json_path=out)
    assert r.returncode == 5, r.stderr + r.stdout[-2000:]  # the bad end no longer tests bad
    assert not [s for s in json.loads(out.read_text())["steps"] if s["source"] == "cache"]


def add_other_submodule(world: World, tmp_path: Path) -> tuple[Path, list[str]]:
    """A second submodule ``third_party/other`` whose ``mode`` file is "bug" then "feature"."""
    origin = tmp_path / "other"
    origin.mkdir()
    world.git(origin, "init", "-q")
    shas = []
    for mode in ("bug", "feature"):
        (origin / "mode").write_text(f"{mode}\n", encoding="utf-8")
        world.git(origin, "add", "mode")
        world.git(origin, "commit", "-q", "-m", mode)
        shas.append(world.git(origin, "rev-parse", "HEAD"))
    world.git(origin, "checkout", "-q", shas[0])
    world.git(world.superproject, "submodule", "add", "-q", str(origin), "third_party/other")
    world.git(world.superproject, "commit", "-q", "-m", "add third_party/other")
    return world.superproject / "third_party/other", shas


def test_another_submodules_head_and_edits_are_in_the_key(world: World, tmp_path: Path):
    add_script(world)
    other, shas = add_other_submodule(world, tmp_path)
    assert world.git(other, "rev-parse", "HEAD") == shas[0]
    # The repro reads the other submodule's file without naming it.
    wrapper = world.superproject / "repro-other.sh"
    wrapper.write_text("#!/bin/sh\nexec ./check.sh third_party/other/mode\n", encoding="utf-8")
    wrapper.chmod(0o755)
    exclude(world, "repro-other.sh")
    out = tmp_path / "r.json"
    # The superproject still pins the first commit: the HEAD checked out is what counts.
    check_rerun_then_change(world, out,
                            lambda: world.git(other, "checkout", "-q", shas[1]),
                            "./repro-other.sh")
    # An uncommitted edit of a tracked file there re-tests as well.
    assert all_cached(bisect(world, out, "./repro-other.sh"))
    (other / "mode").write_text("bug\n", encoding="utf-8")
    assert none_cached(bisect(world, out, "./repro-other.sh"))
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])


def test_untracked_superproject_files_are_in_the_key(world: World, tmp_path: Path):
    add_script(world)
    mode = world.superproject / "mode.txt"
    mode.write_text("bug\n", encoding="utf-8")
    exclude(world, "mode.txt")
    # The JSON result is written inside the work tree, not ignored: not an input.
    out = world.superproject / "result.json"
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt"))
    assert all_cached(bisect(world, out, "./check.sh", "mode.txt"))
    # An ignored file appears: still the same test.
    exclude(world, "scratch")
    (world.superproject / "scratch").mkdir()
    (world.superproject / "scratch/notes.txt").write_text("x\n", encoding="utf-8")
    assert all_cached(bisect(world, out, "./check.sh", "mode.txt"))
    # An untracked file git does not ignore appears (a new test input, say): re-test.
    (world.superproject / "tests").mkdir()
    (world.superproject / "tests/new.mlir").write_text("func\n", encoding="utf-8")
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt"))
    assert all_cached(bisect(world, out, "./check.sh", "mode.txt"))
    # Its content changes: re-test. (A moment later, as an edit is: a new mtime too, so the
    # key must see the change whichever way it reads the file, content or size and mtime.)
    time.sleep(0.01)
    (world.superproject / "tests/new.mlir").write_text("func2\n", encoding="utf-8")
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt"))
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])
    status = subprocess.run(["git", "status", "--porcelain"], cwd=world.superproject,
                            env=world.env, capture_output=True, text=True).stdout
    assert "result.json" in status  # really untracked and not ignored


def test_a_run_that_leaves_an_untracked_output_says_so(world: World, tmp_path: Path):
    """A build output in the work tree that git does not ignore changes the next key; the
    run during which it appeared keeps none of its verdicts (they were not tested with the
    key's local files)."""
    add_script(world)
    (world.superproject / "mode.txt").write_text("bug\n", encoding="utf-8")
    exclude(world, "mode.txt")
    out = tmp_path / "r.json"
    note = "note: 1 untracked or edited file(s) of the superproject changed during this run (a.out)"

    def run() -> tuple[list[dict], str]:
        r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
                world.sha(300), "--json", str(out), "--build", "touch a.out", "--",
                "./check.sh", "mode.txt")
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(out.read_text())["steps"], " ".join(r.stdout.split())

    steps, stdout = run()
    assert none_cached(steps) and note in stdout
    assert "so none of this run's verdicts were kept in the cache" in stdout
    steps, stdout = run()  # a.out is in the key now: tested again, and nothing changed
    assert none_cached(steps) and "note:" not in stdout  # (no verdict of the first run left)
    steps, stdout = run()
    assert all_cached(steps) and "note:" not in stdout


@pytest.mark.parametrize("integrate", [False, True])
def test_the_key_does_not_depend_on_what_is_checked_out(world_factory, tmp_path: Path,
                                                        integrate: bool):
    """``run`` in a session reads the key with a candidate checked out: same key as at HEAD."""
    w = world_factory(tmp_path, integrate=integrate)
    if integrate:
        target = ["--integrate", w.integrate["adv12"], w.integrate["init"]]
        oneshot = ["--integrate", "--good", w.integrate["init"], "--bad", w.integrate["adv12"]]
    else:
        target = ["--submodule", SUBMODULE, w.sha(300), w.sha(0)]
        oneshot = ["--submodule", SUBMODULE, "--good", w.sha(0), "--bad", w.sha(300)]
    out = tmp_path / "r.json"
    options = ["--build", "./build.sh", "--good-if", "device .* not found", "--json", str(out)]
    r = cli(w, "run", *oneshot, *options, "--", "./repro.sh")
    assert r.returncode == 0, r.stdout + r.stderr
    # (In the integrate world "fix" has the tree and pins of "adv6": one verdict for both.)
    assert any(s["source"] == "run" for s in json.loads(out.read_text())["steps"])
    found = first_bad(out)
    assert git_cli(w, "start", *target).returncode == 0
    r = git_cli(w, "run", *options, "./repro.sh")
    assert r.returncode == 0, r.stdout + r.stderr
    # Steps skipped without a build (a patch conflict, a pin missing) are never cached.
    steps = [s for s in json.loads(out.read_text())["steps"] if s["source"] != "auto"]
    assert all_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == found
    assert git_cli(w, "reset").returncode == 0


def test_follow_up_commands_repeat_cache_input(integrate_world: World, tmp_path: Path):
    """The submodule bisect suggested after an integrate bisect keeps ``--cache-input``."""
    w = integrate_world
    data = tmp_path / "data"
    data.mkdir()
    (data / "x").write_text("1\n", encoding="utf-8")
    out = tmp_path / "r.json"
    # Given relative to the current directory (a subdirectory); repeated as an absolute path.
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["adv12"], "--build", "./build.sh", "--good-if", "device .* not found",
            "--cache-input", "../../data", "--json", str(out), "--", "../repro.sh",
            cwd=w.superproject / "third_party")
    assert r.returncode == 0, r.stdout + r.stderr
    followup = json.loads(out.read_text())["followup"]
    assert any(f"--cache-input={data}" in line for line in followup), followup


@pytest.mark.parametrize(("command", "inputs", "outputs"), [
    ("./r.sh input", ["./r.sh", "input"], []),
    ("echo x >> builds.log; ./build.sh", ["echo", "x", "./build.sh"], ["builds.log"]),
    ("make 2>&1 | tee -a build.log more.log", ["make", "2", "tee", "-a"],
     ["1", "build.log", "more.log"]),
    ("cat < in.txt > out.txt", ["cat", "in.txt"], ["out.txt"]),
    ("./r.sh 'it is' &> both", ["./r.sh", "it is"], ["both"]),
])
def test_shell_words_tell_inputs_from_outputs(command: str, inputs: list[str],
                                              outputs: list[str]):
    from bisectkit.store.commandinputs import shell_words

    assert shell_words(command) == (inputs, outputs)


# -- the environment ---------------------------------------------------------------

#: The build writes the value of ``$CC`` where the repro reads it: the answer follows CC.
MKMODE_SH = '#!/bin/sh\nprintf "%s\\n" "$CC" > "$MODE_PATH"\n'
READMODE_SH = '#!/bin/sh\nexec ./check.sh "$MODE_PATH"\n'


def bisect_text(world: World, out: Path, *repro: str, options: tuple[str, ...] = (),
                extra_env: dict[str, str] | None = None) -> tuple[list[dict], str]:
    """Like :func:`bisect`, with the run's output too (in one line)."""
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--json", str(out), *options,
            "--", *repro, extra_env=extra_env)
    assert r.returncode == 0, r.stdout + r.stderr
    return list(json.loads(out.read_text())["steps"]), " ".join((r.stdout + r.stderr).split())


@pytest.mark.parametrize("build", ["./mkmode.sh", 'printf "%s\\n" "$CC" > "$MODE_PATH"'])
def test_a_variable_the_build_reads_is_in_the_key(world: World, tmp_path: Path, build: str):
    """``CC`` read by a script the build names, or by the ``--build`` text itself."""
    add_script(world)
    for name, text in (("mkmode.sh", MKMODE_SH), ("readmode.sh", READMODE_SH)):
        script = world.superproject / name
        script.write_text(text, encoding="utf-8")
        script.chmod(0o755)
        exclude(world, name)
    out = tmp_path / "r.json"
    options = ("--build", build)
    # (Named in a command word, "$MODE_PATH" would be hashed too: the file the last
    # build left there, another input that changes between runs.)
    repro = ("./readmode.sh",)
    env = {"MODE_PATH": str(tmp_path / "mode"), "CC": "bug"}
    steps, _ = bisect_text(world, out, *repro, options=options, extra_env=env)
    assert none_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["bug"])
    # A variable nothing reads changes: the same test.
    steps, text = bisect_text(world, out, *repro, options=options,
                              extra_env={**env, "UNRELATED": "1"})
    assert all_cached(steps) and "note:" not in text
    steps, text = bisect_text(world, out, *repro, options=options,
                              extra_env={**env, "CC": "feature"})
    assert none_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["feature"])
    # The new answer takes another path: only the trees both paths test were known.
    assert re.search(r"note: 0 of \d+ known verdicts reused: CC changed restored", text)


CHECK_ENV_SH = CHECK_SH.replace('"$(cat "$1")"', '"$MODE"')


def test_cache_env_declares_a_variable_nothing_shows(world: World, tmp_path: Path):
    """The repro runs a program it does not name (here ``inner.sh``, found on PATH) that
    reads ``MODE``: ``--cache-env MODE`` or ``git config bisectkit.cacheEnv MODE``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "inner.sh").write_text(CHECK_ENV_SH, encoding="utf-8")
    (bin_dir / "inner.sh").chmod(0o755)
    out = tmp_path / "r.json"
    path = f"{bin_dir}:{world.env['PATH']}"
    repro = ("sh", "-c", "inner.sh")
    options = ("--cache-env", "MODE")
    steps, _ = bisect_text(world, out, *repro, options=options,
                           extra_env={"PATH": path, "MODE": "bug"})
    assert none_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["bug"])
    steps, text = bisect_text(world, out, *repro, options=options,
                              extra_env={"PATH": path, "MODE": "feature"})
    assert none_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["feature"])
    assert "known verdicts reused: MODE changed" in text
    # The same key through git config: the first run's verdicts.
    world.git(world.superproject, "config", "--add", "bisectkit.cacheEnv", "MODE")
    steps, _ = bisect_text(world, out, *repro, extra_env={"PATH": path, "MODE": "bug"})
    assert all_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["bug"])


def test_a_plugin_declares_the_variables_its_commands_read(world: World, tmp_path: Path):
    """A plugin's repro reads ``MODE`` in Python: its ``bisectkit_configure`` adds it to
    ``config.cache_env``."""
    plugin = tmp_path / "envrepro.py"
    plugin.write_text(PLUGIN_READING_MODE, encoding="utf-8")
    out = tmp_path / "r.json"
    repro = ("-p", str(plugin), "--no-verify")  # the plugin is the repro: no command
    steps, _ = bisect_text(world, out, options=repro, extra_env={"MODE": "bug"})
    assert none_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["bug"])
    steps, text = bisect_text(world, out, options=repro, extra_env={"MODE": "feature"})
    assert none_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["feature"])
    assert "known verdicts reused: MODE changed" in text


PLUGIN_READING_MODE = """
import subprocess
from bisectkit import Outcome, hookimpl

_MODE = "MO" + "DE"  # built at run time: no scan can see it


@hookimpl
def bisectkit_configure(config):
    config.cache_env.append(_MODE)


@hookimpl
def bisectkit_repro(step):
    mode = step.env[_MODE]
    sub = step.workdir + "/third_party/llvm-project/lib/"
    if mode == "bug":
        bad = "miscompile" in open(sub + "bug.txt").read()
    else:
        bad = "feature v0" not in open(sub + "feature.txt").read()
    return Outcome(1 if bad else 0, mode)
"""


def test_cache_env_must_be_a_variable_name(world: World):
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
            world.sha(300), "--cache-env", "CC=gcc", "--", "./repro.sh")
    assert r.returncode == 2
    assert r.stderr.strip() == ("bisectkit: error: --cache-env CC=gcc: not an environment "
                                "variable name (letters, digits and '_', not starting with a "
                                "digit)")


# -- files bisectkit wrote, files the user says the build does not read ------------

def test_files_earlier_runs_wrote_are_not_inputs(world: World, tmp_path: Path):
    """An earlier run's ``--json``/``--report`` in the work tree do not void the cache
    while they hold what bisectkit wrote; edited, they are inputs like any file."""
    add_script(world)
    (world.superproject / "mode.txt").write_text("bug\n", encoding="utf-8")
    exclude(world, "mode.txt")
    result = world.superproject / "result.json"
    options = ("--report", "report.md")
    assert none_cached(bisect(world, result, "./check.sh", "mode.txt", options=options))
    out = tmp_path / "r.json"  # elsewhere this time; result.json and report.md stay
    assert all_cached(bisect(world, out, "./check.sh", "mode.txt"))
    result.write_text("{}\n", encoding="utf-8")  # the user's file now
    steps, text = bisect_text(world, out, "./check.sh", "mode.txt")
    assert none_cached(steps)
    assert "known verdicts reused: untracked result.json is new" in text


def test_a_new_untracked_file_is_named_and_cache_ignore_leaves_it_out(world: World,
                                                                      tmp_path: Path):
    add_script(world)
    (world.superproject / "mode.txt").write_text("bug\n", encoding="utf-8")
    exclude(world, "mode.txt")
    out = tmp_path / "r.json"
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt"))
    (world.superproject / "notes.txt").write_text("try -O0\n", encoding="utf-8")
    (world.superproject / "logs").mkdir()
    (world.superproject / "logs" / "bisect.log").write_text("log\n", encoding="utf-8")
    world.git(world.superproject, "config", "--add", "bisectkit.cacheIgnore", "*.log")
    steps, text = bisect_text(world, out, "./check.sh", "mode.txt")
    assert none_cached(steps)
    why = ("untracked notes.txt is new (if the build does not read it: git config --add "
           "bisectkit.cacheIgnore /notes.txt)")
    # Said at the first step that could not reuse its verdict, and summed up at the end.
    assert f"note: verdicts cached for this tree are not reused: {why}" in text
    assert f"note: 0 of {len(steps)} known verdicts reused: {why}" in text
    # Ignored: the key is the first run's again.
    world.git(world.superproject, "config", "--add", "bisectkit.cacheIgnore", "/notes.txt")
    steps, text = bisect_text(world, out, "./check.sh", "mode.txt")
    assert all_cached(steps) and "note:" not in text


# -- what a run tests besides the trees ----------------------------------------------

def test_a_run_during_which_a_local_input_changed_keeps_no_verdict(world: World,
                                                                   tmp_path: Path):
    """An untracked input changes while the run tests (here the third build rewrites it):
    the verdicts tested after that are not the key's, so the run keeps none; put back as
    the key had it, the next run tests again and gives the key's answer."""
    add_script(world)
    mode = world.superproject / "mode.txt"  # untracked, not ignored: a local input
    mode.write_text("bug\n", encoding="utf-8")
    count = tmp_path / "count"
    build = tmp_path / "build.sh"  # outside the tree: not a local file itself
    build.write_text(f"#!/bin/sh\nn=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1))\n"
                     f"echo $n > {count}\n"
                     f"if [ $n -eq 3 ]; then echo feature > mode.txt; fi\n", encoding="utf-8")
    build.chmod(0o755)
    out = tmp_path / "r.json"
    options = ("--build", str(build))
    _, text = bisect_text(world, out, "./check.sh", "mode.txt", options=options)
    mode.write_text("bug\n", encoding="utf-8")
    steps = bisect(world, out, "./check.sh", "mode.txt", options=options)
    assert none_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])
    assert ("note: 1 untracked or edited file(s) of the superproject changed during this run "
            "(mode.txt); they are part of the verdict cache's key, so none of this run's "
            "verdicts were kept in the cache. If the build writes them") in text


#: ``check.sh`` reading ``mode.txt`` from where it runs ("bug" when there is none).
CHECK_MODE_TXT_SH = CHECK_SH.replace('"$(cat "$1")"', '"$(cat mode.txt 2>/dev/null || echo bug)"')


def test_steps_in_workspaces_are_keyed_by_what_the_workspaces_hold(world: World,
                                                                   tmp_path: Path):
    """``--jobs`` workspaces hold only committed files: the user's untracked ``mode.txt``
    is not there. Their verdicts are not reused in the user's tree (nor the reverse), and
    the untracked file is not part of their key."""
    repro = tmp_path / "check-mode.sh"  # outside the tree: runs as is in the workspaces
    repro.write_text(CHECK_MODE_TXT_SH, encoding="utf-8")
    repro.chmod(0o755)
    (world.superproject / "mode.txt").write_text("feature\n", encoding="utf-8")
    out = tmp_path / "r.json"
    steps, noted = bisect_text(world, out, str(repro), options=("--jobs", "2"))
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])  # no mode.txt in the workspaces
    # In the user's tree, over a range whose middle the workspaces found good:
    # mode.txt says "feature" here, so that commit is bad.
    middle = next(world.shas.index(s["commit"]) for s in steps
                  if 50 <= world.shas.index(s["commit"]) < 200)
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            world.sha(0), "--bad", world.sha(2 * middle), "--json", str(out), "--", str(repro))
    assert r.returncode == 0, r.stdout + r.stderr
    steps = json.loads(out.read_text())["steps"]
    assert steps[0]["commit"] == world.sha(middle)
    assert none_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["feature"])
    assert ("note: the workspaces hold only committed files: the steps will not see "
            "untracked mode.txt of your tree") in noted
    (world.superproject / "mode.txt").write_text("bug\n", encoding="utf-8")
    steps, _ = bisect_text(world, out, str(repro), options=("--jobs", "2"))
    # The workspaces are the same: the first two candidates (chosen before any verdict)
    # are cached at least; which others are tested depends on which step ends first.
    assert sum(s["source"] == "cache" for s in steps) >= 2, [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])


#: Chatty from upstream 50 on (``feature v1``): the line a multi-line rule starts on and
#: the line it ends on are far apart in the middle of the output.
VERBOSE_SH = """#!/bin/sh
sub=third_party/llvm-project/lib
if grep -q miscompile $sub/bug.txt; then echo "error: miscompiled"; exit 1; fi
filler() {
  if grep -q 'feature v1' $sub/feature.txt; then
    i=0; while [ $i -lt 300 ]; do printf '%0300d\\n' $i; i=$((i + 1)); done
  fi
}
filler; echo "HAL device 'vulkan'"; filler; echo "was not found"; filler
exit 1
"""


def test_keep_output_is_in_the_key(world: World, tmp_path: Path):
    """A rule matching across lines of a long output: what ``--keep-output`` keeps of the
    output decides the verdict, so a verdict taken with another limit is not reused."""
    script = world.superproject / "verbose.sh"
    script.write_text(VERBOSE_SH, encoding="utf-8")
    script.chmod(0o755)
    exclude(world, "verbose.sh")
    out = tmp_path / "r.json"
    rule = ("--good-if", r"(?s)HAL device.*not found")
    assert none_cached(bisect(world, out, "./verbose.sh", options=rule))
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])
    steps = bisect(world, out, "./verbose.sh", options=(*rule, "--keep-output", "64K"))
    assert none_cached(steps), [s["reason"] for s in steps]
    # The match spanned lines of the dropped middle: lost, as the README says.
    assert first_bad(out) == world.sha(FIRST_BAD["feature"])


def test_an_untracked_repository_inside_the_superproject_is_in_the_key(world: World,
                                                                       tmp_path: Path):
    """A test suite cloned inside the superproject (git status shows only ``suite/``):
    its HEAD and its files are part of the key."""
    add_script(world)
    suite = world.superproject / "suite"
    suite.mkdir()
    world.git(suite, "init", "-q")
    (suite / "mode").write_text("bug\n", encoding="utf-8")
    world.git(suite, "add", "mode")
    world.git(suite, "commit", "-q", "-m", "bug")
    wrapper = world.superproject / "repro-suite.sh"  # reads suite/mode without naming it
    wrapper.write_text("#!/bin/sh\nexec ./check.sh suite/mode\n", encoding="utf-8")
    wrapper.chmod(0o755)
    exclude(world, "repro-suite.sh")

    def change() -> None:
        (suite / "mode").write_text("feature\n", encoding="utf-8")
        world.git(suite, "commit", "-q", "-am", "feature")  # HEAD moves, status clean

    check_rerun_then_change(world, tmp_path / "r.json", change, "./repro-suite.sh")


def test_an_untracked_file_in_the_bisected_submodule_named_by_the_repro_is_hashed(
        world: World, tmp_path: Path):
    """The submodule's tree covers its tracked files only: an untracked one the repro
    names (it survives every checkout) is hashed like any named file."""
    add_script(world)
    mode = world.superproject / SUBMODULE / "mode.local"
    mode.write_text("bug\n", encoding="utf-8")
    check_rerun_then_change(world, tmp_path / "r.json",
                            lambda: mode.write_text("feature\n", encoding="utf-8"),
                            "./check.sh", f"{SUBMODULE}/mode.local")


#: ``make``: the Makefile includes ``vars.mk``, which reads ``MODE`` from the environment.
MAKEFILE = "include vars.mk\nall:\n\t@printf '%s\\n' '$(WHAT)' > \"$$MODE_PATH\"\n"
VARS_MK = "WHAT = $(MODE)\n"
#: A script the build runs sources another, which reads ``MODE``.
SOURCING_SH = "#!/bin/sh\n. ./settings.sh\nprintf '%s\\n' \"$WHAT\" > \"$MODE_PATH\"\n"
SETTINGS_SH = 'WHAT="$MODE"\n'


@pytest.mark.parametrize("build", ["make -s", "./mkmode.sh"])
def test_files_make_reads_and_scripts_source_are_scanned(world: World, tmp_path: Path,
                                                         build: str):
    """``--build 'make -s'`` names no file, yet make reads its Makefile (and what that
    includes); ``./mkmode.sh`` sources ``./settings.sh``: the variables those read are in
    the key."""
    add_script(world)
    files = {"Makefile": MAKEFILE, "vars.mk": VARS_MK, "mkmode.sh": SOURCING_SH,
             "settings.sh": SETTINGS_SH, "readmode.sh": READMODE_SH}
    for name, text in files.items():
        path = world.superproject / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
        exclude(world, name)
    out = tmp_path / "r.json"
    env = {"MODE_PATH": str(tmp_path / "mode"), "MODE": "bug"}
    steps, _ = bisect_text(world, out, "./readmode.sh", options=("--build", build),
                           extra_env=env)
    assert none_cached(steps) and first_bad(out) == world.sha(FIRST_BAD["bug"])
    steps, text = bisect_text(world, out, "./readmode.sh", options=("--build", build),
                              extra_env={**env, "MODE": "feature"})
    assert none_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["feature"])
    assert "known verdicts reused: MODE changed" in text


def test_a_checkout_moved_elsewhere_reuses_its_verdicts(world: World, tmp_path: Path):
    """Paths inside the superproject are keyed relative to it: the repro (made absolute),
    a build given by its absolute path, the files they name."""
    add_script(world)
    (world.superproject / "mode.txt").write_text("bug\n", encoding="utf-8")
    exclude(world, "mode.txt")
    out = tmp_path / "r.json"
    build = ("--build", f"{world.superproject}/build.sh")
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt", options=build))
    moved = dataclasses.replace(world, superproject=tmp_path / "elsewhere" / "superproject")
    moved.superproject.parent.mkdir()
    shutil.move(world.superproject, moved.superproject)
    build = ("--build", f"{moved.superproject}/build.sh")
    steps = bisect(moved, out, "./check.sh", "mode.txt", options=build)
    assert all_cached(steps), [s["reason"] for s in steps]
    assert first_bad(out) == world.sha(FIRST_BAD["bug"])


def test_the_cache_ignore_suggestion_is_that_file_and_only_it(world: World, tmp_path: Path):
    """The suggested pattern is escaped and anchored, the command shell-quoted: run as
    printed, it leaves that file out of the key and nothing else (``notes 1.txt`` would
    match the raw name as a glob)."""
    add_script(world)
    (world.superproject / "mode.txt").write_text("bug\n", encoding="utf-8")
    exclude(world, "mode.txt")
    out = tmp_path / "r.json"
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt"))
    (world.superproject / "notes [1].txt").write_text("x\n", encoding="utf-8")
    steps, text = bisect_text(world, out, "./check.sh", "mode.txt")
    assert none_cached(steps)
    found = re.search(r"if the build does not read it: (git config [^)]*)\)", text)
    assert found, text
    subprocess.run(["sh", "-c", found.group(1)], cwd=world.superproject, env=world.env,
                   check=True)
    assert world.git(world.superproject, "config", "--get-all",
                     "bisectkit.cacheIgnore") == "/notes \\[1\\].txt"
    assert all_cached(bisect(world, out, "./check.sh", "mode.txt"))
    (world.superproject / "notes 1.txt").write_text("x\n", encoding="utf-8")
    assert none_cached(bisect(world, out, "./check.sh", "mode.txt"))
