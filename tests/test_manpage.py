"""The man pages, ``--help`` and ``help``: generated from the parsers, shipped in the wheel,
found by ``man`` (and so by ``git bisect-patched --help``)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pexpect
import pytest
from helpers.worlds import World, cli, git_cli

from bisectkit.cli import about
from bisectkit.commands import manpage
from bisectkit.commands.registry import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(manpage.PAGES)
needs_man = pytest.mark.skipif(shutil.which("man") is None,
                               reason="man is not installed (.ci/run installs man-db)")


def _subcommands(git_mode: bool) -> list[tuple[str, str, argparse.ArgumentParser]]:
    return list(manpage.commands(build_parser(git_mode)))


def _man_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No MANPATH (man derives it from PATH), 80 columns, no pager, no user config."""
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "MANPAGER", "PAGER")}
    env.update(MANWIDTH="80", LC_ALL="C", HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1", **extra)
    return env


def test_the_committed_pages_are_generated_from_the_parsers() -> None:
    assert manpage.stale() == [], (f"share/man/man1 is out of date with bisectkit/cli/parser.py; "
                                   f"run: {manpage.REGENERATE}")


def test_check_names_a_stale_page_and_the_command_to_run(tmp_path: Path) -> None:
    for name in PAGES:
        shutil.copy(manpage.SOURCE_DIR / name, tmp_path / name)
    (tmp_path / "bisectkit.1").write_text(manpage.render(False).replace("advance", "adv"),
                                          encoding="utf-8")
    assert manpage.stale(tmp_path) == ["bisectkit.1"]
    check = subprocess.run([sys.executable, "-m", "bisectkit.commands.manpage", "--check", "--dir",
                            str(tmp_path)], capture_output=True, text=True)
    assert (check.returncode, check.stderr) == (
        1, "out of date: bisectkit.1; run: python3 -m bisectkit.commands.manpage --write\n")


@pytest.mark.parametrize("git_mode", [True, False], ids=["git-bisect-patched", "bisectkit"])
def test_every_subcommand_has_a_description_and_an_example(git_mode: bool) -> None:
    listed = _subcommands(git_mode)
    assert len(listed) >= 6
    problems = []
    for name, summary, sub in listed:
        note, examples = manpage.epilog_parts(sub)
        if not summary or "\n" in summary:
            problems.append(f"{name}: no one-line help= in add_parser")
        if not (sub.description or "").strip():
            problems.append(f"{name}: no description (bisectkit/cli/about.py)")
        if not examples or not all(e.startswith(f"{sub.prog.rsplit(' ', 1)[0]} ")
                                   for e in examples):
            problems.append(f"{name}: no example of the program in its epilog (about.py)")
        if "\nexample:\n  " not in sub.format_help():
            problems.append(f"{name}: -h shows no example")
    assert problems == []
    summaries = [summary for _, summary, _ in listed]
    assert len(set(summaries)) == len(summaries), "two subcommands share a one-line help"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout to build and install from (a build writes into its tree)."""
    src = tmp_path_factory.mktemp("source") / "bisectkit"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "*.egg-info", "build", "dist", "__pycache__", ".*_cache", ".benchmarks"))
    return src


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built for real from a copy of the checkout."""
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           *_build_isolation(), "-w", str(dist), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = dist.glob("bisectkit-*.whl")
    return built


def _build_isolation() -> list[str]:
    """Build with this environment's setuptools (bisectkit[test] has it, and 'wheel': setuptools
    < 70.1 builds wheels only with it); without them, let pip fetch the build requirements."""
    if importlib.util.find_spec("setuptools") is None:
        return []
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    if (major, minor) < (64, 0):  # no PEP 660 (pip install -e) before 64
        return []
    has_bdist_wheel = (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None
    return ["--no-build-isolation"] if has_bdist_wheel else []


def _venv(where: Path) -> Path:
    """A fresh virtual environment of this Python, to install bisectkit into, that sees the
    packages of the environment running the tests (pygit2, ...) behind its own.

    Not --system-site-packages: that exposes the *base* interpreter's site-packages, and when
    the tests run from a virtual environment (the README's set-up) the base has no pygit2.
    One .pth line per site directory of this environment instead: plain path lines, so the
    .pth files in them (an editable bisectkit's finder) are not run, and the venv's own
    bisectkit comes first. pip installs with --ignore-installed, so it never uninstalls the
    bisectkit it sees through them."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    outer = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")
             and Path(p).is_dir() and Path(p) != Path(purelib)]
    Path(purelib, "_the_tests_environment.pth").write_text("\n".join(outer) + "\n",
                                                          encoding="utf-8")
    return python


def _install(python: Path, *what: str) -> None:
    isolation = _build_isolation()  # an isolated build fetches its requirements
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                           "--ignore-installed", *isolation,
                           *(["--no-index"] if isolation else []), *what],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _in_venv_env(tmp_path: Path, venv: Path) -> dict[str, str]:
    """The venv's bin first on PATH, as activating it does, and its own bisectkit (the
    PYTHONPATH of a worktree's test run left out)."""
    env = _man_env(tmp_path, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    return env


def _git_help_shows_the_pages(env: dict[str, str], cwd: Path) -> None:
    """'git bisect-patched --help' (git runs 'man git-bisect-patched') and 'man bisectkit'."""
    shown = subprocess.run(["git", "bisect-patched", "--help"], capture_output=True, text=True,
                           env=env, stdin=subprocess.DEVNULL, cwd=cwd, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("GIT-BISECT-PATCHED(1)")
    assert "EXIT STATUS" in shown.stdout
    shown = subprocess.run(["man", "bisectkit"], capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL, cwd=cwd, timeout=60)
    assert (shown.returncode, shown.stdout.split()[:1]) == (0, ["BISECTKIT(1)"]), shown.stderr


def test_the_wheel_ships_every_module(wheel: Path) -> None:
    """pyproject.toml lists the packages one by one: a new one left out breaks every import
    of it from a wheel install (an editable install, running from the checkout, works)."""
    with zipfile.ZipFile(wheel) as whl:
        shipped = set(whl.namelist())
    modules = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "bisectkit").rglob("*.py"))]
    assert [m for m in modules if m not in shipped] == []


@needs_man
def test_the_wheel_ships_the_pages_and_man_renders_them(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        shipped = {Path(n).name: n for n in whl.namelist()
                   if re.fullmatch(r"bisectkit-[^/]+\.data/data/share/man/man1/[^/]+\.1", n)}
        assert sorted(shipped) == PAGES
        for name, member in shipped.items():
            (tmp_path / name).write_bytes(whl.read(member))
    for name, git_mode in manpage.PAGES.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == manpage.render(git_mode)
        shown = subprocess.run(["man", "-l", str(tmp_path / name)], capture_output=True,
                               text=True, env=_man_env(tmp_path), stdin=subprocess.DEVNULL)
        assert shown.returncode == 0, shown.stderr
        assert shown.stderr == ""  # no troff warnings either
        text = shown.stdout
        assert max(len(line) for line in text.splitlines()) <= 80
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS",
                        "EXIT STATUS", "EXAMPLES", "FILES", "SEE ALSO"):
            assert re.search(rf"^{section}$", text, re.MULTILINE), section
        prog = "git bisect-patched" if git_mode else "bisectkit"
        for command, _, sub in _subcommands(git_mode):
            assert re.search(rf"^ {{7}}{re.escape(command)}\b", text, re.MULTILINE), command
            for example in manpage.epilog_parts(sub)[1]:  # wrapped as the shell reads it
                assert about.shell_lines(example, 68)[0] in text
        assert f"{prog} run" in text and ".git/bisectkit/journal" in text and "130" in text


@needs_man
def test_git_bisect_patched_help_opens_the_page_installed_from_the_wheel(
        wheel: Path, tmp_path: Path) -> None:
    """git turns 'git bisect-patched --help' into 'man git-bisect-patched'; man finds the page
    in <venv>/share/man because <venv>/bin is on PATH."""
    venv = tmp_path / "venv"
    python = _venv(venv)
    _install(python, str(wheel))
    assert sorted(p.name for p in (venv / manpage.MAN_DIR).iterdir()) == PAGES
    env = _in_venv_env(tmp_path, venv)
    _git_help_shows_the_pages(env, tmp_path)
    # Run directly in a terminal, the installed bisectkit opens the page installed with it.
    assert _page_found(python, env, tmp_path) == \
        str(venv / manpage.MAN_DIR / "git-bisect-patched.1")


def _page_found(python: Path, env: dict[str, str], cwd: Path) -> str:
    """The page ``git-bisect-patched --help`` run directly opens, as that install finds it."""
    found = subprocess.run([str(python), "-c",
                            "from bisectkit.commands.manpage import manual_page as m; "
                            "print(m('git-bisect-patched'))"],
                           capture_output=True, text=True, env=env, cwd=cwd, check=True)
    return found.stdout.strip()


@needs_man
def test_git_bisect_patched_help_opens_the_page_after_an_editable_install(
        source: Path, tmp_path: Path) -> None:
    """The README's 'pip install -e .' installs the pages too (setuptools alone leaves data
    files out of editable installs: build_backend/bisectkit_build.py adds them)."""
    venv = tmp_path / "venv"
    python = _venv(venv)
    _install(python, "-e", str(source))
    assert sorted(p.name for p in (venv / manpage.MAN_DIR).iterdir()) == PAGES
    env = _in_venv_env(tmp_path, venv)
    _git_help_shows_the_pages(env, tmp_path)
    # The editable bisectkit runs from the checkout, whose pages are the current ones.
    assert _page_found(python, env, tmp_path) == \
        str(source / manpage.MAN_DIR / "git-bisect-patched.1")


@needs_man
def test_install_links_the_pages_where_man_finds_them_through_pyenvs_shims(
        tmp_path: Path) -> None:
    """pyenv runs programs through <root>/shims, so man never searches the version's prefix:
    --install "$(pyenv root)" links the pages into <root>/share/man, which man finds from
    <root>/shims on PATH."""
    root = tmp_path / "pyenv"
    (root / "shims").mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "bisectkit.commands.manpage", "--install",
                           str(root)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(root / manpage.MAN_DIR / n) for n in manpage.PAGES]
    env = _man_env(tmp_path, PATH=f"{root / 'shims'}{os.pathsep}{os.environ['PATH']}")
    where = subprocess.run(["man", "-w", "git-bisect-patched"], capture_output=True, text=True,
                           env=env)
    assert where.returncode == 0
    assert Path(where.stdout.strip()).resolve() == manpage.SOURCE_DIR / "git-bisect-patched.1"


def test_help_lists_the_usage_of_every_command(world: World) -> None:
    shown = git_cli(world, "help")
    assert (shown.returncode, shown.stderr) == (0, "")
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("usage: git bisect-patched [start|good|bad|")
    for name, summary, _ in _subcommands(True):
        assert any(line.startswith(f"git bisect-patched {name}") for line in lines), name
        assert f"        {summary}" in lines
    assert "man git-bisect-patched" in shown.stdout
    assert cli(world, "help").stdout.startswith("usage: bisectkit [run|status|advance|")


def test_help_command_prints_that_commands_help(world: World) -> None:
    assert git_cli(world, "help", "reset").stdout == git_cli(world, "reset", "-h").stdout
    shown = cli(world, "help", "run")
    assert (shown.returncode, shown.stdout) == (0, cli(world, "run", "-h").stdout)
    assert "example:\n  bisectkit run --submodule" in shown.stdout
    wrong = git_cli(world, "help", "bisect")
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert len(wrong.stderr.splitlines()) == 1
    assert wrong.stderr.startswith("git bisect-patched: error: no command 'bisect' "
                                   "(commands: start, good, bad,")


def test_help_option_without_a_terminal_prints_the_help(world: World) -> None:
    shown = cli(world, "--help", extra_env={"CI": "true"})
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout == cli(world, "-h").stdout
    assert "'bisectkit help' lists every command's usage" in shown.stdout
    direct = subprocess.run([shutil.which("git-bisect-patched") or "git-bisect-patched",
                             "--help"], capture_output=True, text=True, env=world.env,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert (direct.returncode, direct.stderr) == (0, "")
    assert direct.stdout.startswith("usage: git bisect-patched [-h] [--version] COMMAND")


@needs_man
def test_help_option_in_a_terminal_opens_the_manual(world: World) -> None:
    env = dict(world.env, MANPAGER="cat", PAGER="cat", MANWIDTH="80")
    exe = shutil.which("bisectkit")
    assert exe is not None
    done = pexpect.run(f"{exe} --help", env=env, withexitstatus=True, timeout=60,
                       cwd=str(world.superproject), encoding="utf-8")
    assert isinstance(done, tuple)  # withexitstatus: (the output, the exit status)
    out, status = done
    text = re.sub(r".\x08", "", out)  # man's bold and underline by overstrike
    assert status == 0, text
    assert text.lstrip().startswith("BISECTKIT(1)")
    assert "EXIT STATUS" in text and "bisectkit advance --apply" in text
