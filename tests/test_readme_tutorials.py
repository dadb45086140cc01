"""The README's tutorials, run as written: their commands are read from README.md itself.

Each ``## Tutorial: TITLE`` section of README.md (up to the next ``## `` heading) is run in
a real git world built by ``scripts/worldgen.py`` (``TUTORIALS`` below says which world and
what fills its placeholders), so a tutorial cannot drift from what bisectkit does. The
README follows this convention in those sections:

- A fenced block tagged ``sh`` holds commands, run in the order they appear, each in its
  own ``bash -c`` from the superproject's root (the actions tutorial: from its folder).
  No shell state carries from one command to the next: a tutorial does not ``cd`` or set
  variables. A line ending in ``\\`` continues on the next; comment lines and blank lines
  are not commands (a trailing ``# comment`` is left to bash).
- In a ``sh`` block where lines start with ``$ ``, those lines are the commands and the
  lines under each, up to the next ``$ ``, are its expected output (a transcript). Where
  the command is ``cat FILE``, FILE is first written with the content shown (executable
  when it starts with ``#!``): the README shows the file the reader writes.
- A fenced block tagged ``text`` is the expected output of the last command run before it.
- Expected output is checked loosely: each line must appear in the command's output
  (stdout and stderr together, as on a terminal), in order, with runs of whitespace
  (line breaks included: output wraps at 80 columns in a pipe) counted as one space.
  ``...`` stands for anything: a line of its own for lines left out, inside a line for
  a part of it.
- A command must exit 0, unless a comment on its line says ``exits N``.
- ``<name>`` placeholders (lower case, in commands and expected output) are filled from
  the world (``TUTORIALS``); one that the table does not fill fails the test. Upstream and
  fork commit ids are the same in every generated world (fixed dates), so the README shows
  them as printed; a superproject's commit ids depend on where the world lies (its
  ``.gitmodules`` names the fork's path), so they are placeholders or ``...``. The
  actions tutorial's folder ``/tmp/tut`` is the test's own folder.
- ``sh`` blocks that need what a generated world cannot give are listed in ``NOT_RUN``
  (by their first command) with the reason; an entry that matches no block fails the test.

After the last command, every repository is back on its branch at its commit and
``git status`` shows nothing but the files the tutorial's commands write (``--json``,
``--report``, ``> FILE``), listed in ``TUTORIALS``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.advance import SMOKE
from helpers.advance import spec as advance_spec
from helpers.worlds import World, WorldFactory, snapshot
from worldgen import ADVANCE_STEP, hermetic_env

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DATA = Path(__file__).parent / "data" / "actions"

#: ``sh`` blocks of the tutorials that are not run (their first line, less a ``# comment``),
#: and why.
NOT_RUN = {
    "git bisect-patched help":
        "the manual pages depend on the install and on man: tests/test_manpage.py",
    "$ bisectkit actions --at 70f763fd6a73 --kind opt-bisect -- ./repro.sh":
        "needs a superproject whose commits change what the compiler does, and the "
        "tutorial's other commands run outside any repository: "
        "tests/test_actions_at_a_commit.py runs --at on such a generated world",
    "$ bisectkit run --good v10 --bad v30 --then-actions opt-bisect -- ./repro.sh":
        "as --at above: tests/test_actions_at_a_commit.py runs --then-actions",
    "$ bisectkit actions --kind opt-bisect -- ./iree_fma.sh":
        "needs IREE's iree-compile built with assertions: tests/test_actions_in_iree.py",
}

PLACEHOLDER = re.compile(r"<[a-z][a-z0-9 -]*>")
EXIT_COMMENT = re.compile(r"#.*\bexits (\d+)\b")


@dataclass
class Command:
    """One command of a tutorial, with what the README says it prints and exits with."""

    text: str
    line: int
    expected: list[str] = field(default_factory=list)
    #: The content shown under ``$ cat FILE``: the file is written before the command runs.
    writes: str | None = None

    @property
    def exit(self) -> int:
        """The exit status the README gives (``# ... exits N``), else 0."""
        found = EXIT_COMMENT.search(self.text.splitlines()[-1])
        return int(found.group(1)) if found else 0


@dataclass
class Block:
    """A fenced block: its info string, the line of its first content line, its lines."""

    tag: str
    line: int
    lines: list[str]


def sections(readme: str) -> dict[str, tuple[int, list[str]]]:
    """The ``## Tutorial: TITLE`` sections: title -> (first line number, lines)."""
    found: dict[str, tuple[int, list[str]]] = {}
    title: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(readme.splitlines(), 1):
        if line.startswith("## "):
            if title:
                found[title] = (start, body)
            title = line[len("## Tutorial: "):] if line.startswith("## Tutorial: ") else None
            start, body = number + 1, []
        elif title:
            body.append(line)
    if title:
        found[title] = (start, body)
    return found


def blocks(start: int, lines: list[str]) -> Iterator[Block]:
    """The fenced blocks of a section (indented ones in list items too), indent removed."""
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        indent, body = len(fence.group(1)), []
        i += 1
        while not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:])
            i += 1
        yield Block(fence.group(2), start + i - len(body) - 1, body)
        i += 1


def first_line(block: Block) -> str:
    """The block's first line without its trailing comment (how ``NOT_RUN`` names it)."""
    return block.lines[0].split("  #")[0].strip()


def logical_lines(lines: list[str], first: int) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` with ``\\``-continued lines joined (newline kept)."""
    i = 0
    while i < len(lines):
        number, text = first + i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        yield number, text
        i += 1


def commands(title: str) -> list[Command]:
    """The tutorial's commands in order, with their expected output."""
    start, lines = sections(README.read_text(encoding="utf-8"))[title]
    found: list[Command] = []
    skipped = False  # the last sh block is not run: the text blocks after it are not checked
    for block in blocks(start, lines):
        if block.tag == "text" and not skipped:
            assert found, f"README.md:{block.line}: a text block before any command"
            found[-1].expected += block.lines
        if block.tag != "sh":
            continue
        skipped = bool(block.lines) and first_line(block) in NOT_RUN
        if skipped:
            continue
        transcript = any(line.startswith("$ ") for line in block.lines)
        for number, text in logical_lines(block.lines, block.line + 1):
            if transcript and text.startswith("$ "):
                found.append(Command(text[2:], number))
            elif transcript:
                assert found, f"README.md:{number}: output before any command"
                found[-1].expected.append(text)
            elif text.strip() and not text.lstrip().startswith("#"):
                found.append(Command(text, number))
    for c in found:
        if re.fullmatch(r"cat \S+", c.text):
            c.writes = "".join(line + "\n" for line in c.expected)
    return found


def squeeze(text: str) -> str:
    """``text`` with every run of whitespace (line breaks too) one space."""
    return " ".join(text.split())


def unmatched(expected: list[str], output: str) -> str | None:
    """The first expected line not found in ``output`` (in order, loosely), or None."""
    flat, at = squeeze(output), 0
    for line in expected:
        for part in (squeeze(p) for p in line.split("...")):
            where = flat.find(part, at)
            if where < 0:
                return line
            at = where + len(part)
    return None


def fill(text: str, fills: dict[str, str]) -> str:
    """``text`` with its placeholders filled; one the table does not fill fails the test."""
    for key, value in fills.items():
        text = text.replace(key, value)
    left = PLACEHOLDER.findall(text)
    assert not left, f"no value for {left} in {text!r}: add it to TUTORIALS"
    return text


@dataclass
class Setting:
    """Where a tutorial runs: its folder, environment, placeholders, the files it writes."""

    cwd: Path
    env: dict[str, str]
    fills: dict[str, str]
    outputs: frozenset[str] = frozenset()
    world: World | None = None


def one_shot(make: WorldFactory, tmp: Path) -> Setting:
    """The default world: the miscompile at upstream commit 200, the pin on 300."""
    w = make(tmp)
    return Setting(w.superproject, w.env,
                   {"<good-rev>": w.sha(0)[:12], "<bad-rev>": "upstream/main"},
                   frozenset({"result.json"}), w)


def step_by_step(make: WorldFactory, tmp: Path) -> Setting:
    """The default world, bisected by hand from upstream 0 to 400, then by ``run``."""
    w = make(tmp)
    return Setting(w.superproject, w.env,
                   {"<bad>": w.sha(400)[:12], "<good>": w.sha(0)[:12], "<sha>": w.sha(200),
                    "<commit>": "main"}, frozenset({"bisect.log", "g.log"}), w)


def integrate(make: WorldFactory, tmp: Path) -> Setting:
    """The integrate world: advance 8 (upstream 175 -> 200) brings the miscompile."""
    w = make(tmp, integrate=True)
    return Setting(w.superproject, w.env,
                   {"<good>": w.integrate["init"][:12], "<bad>": w.integrate["adv12"][:12],
                    "<old base>": w.sha(7 * ADVANCE_STEP), "<new base>": w.sha(8 * ADVANCE_STEP),
                    "<culprit>": w.integrate["adv8"], "<sha>": w.integrate["adv8"][:12],
                    "<superproject>": str(w.superproject)}, frozenset(), w)


def advance(make: WorldFactory, tmp: Path) -> Setting:
    """The pin on upstream 100, ``smoketest.sh`` committed, failing from upstream 137."""
    w = make(tmp, advance_spec(137))
    smoke = w.superproject / "smoketest.sh"
    smoke.write_text(SMOKE, encoding="utf-8")
    smoke.chmod(0o755)
    w.git(w.superproject, "add", "smoketest.sh")
    w.git(w.superproject, "commit", "-qm", "smoketest")
    return Setting(w.superproject, w.env, {}, frozenset({"advance.md", "advance.json"}), w)


def actions(make: WorldFactory, tmp: Path) -> Setting:
    """An empty folder (no git) with Debian's LLVM and MLIR 19 on PATH."""
    missing = [t for t in ("opt-19", "lli-19", "mlir-opt-19", "mlir-cpu-runner-19")
               if shutil.which(t) is None]
    if missing:
        why = f"{', '.join(missing)} not installed (Debian: apt-get install llvm-19 mlir-19-tools)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the actions tutorial: {why}")
        pytest.skip(why)
    where = tmp / "tut"
    where.mkdir()
    # The files the tutorial names as tests/data/actions/ in the repository.
    for name in ("ub.mlir", "ub_mlir.sh"):
        shutil.copy2(DATA / name, where / name)
    env = hermetic_env(tmp / "home")
    env["TMPDIR"] = str(tmp)
    return Setting(where, env, {"/tmp/tut": str(where)})


TUTORIALS: dict[str, Callable[[WorldFactory, Path], Setting]] = {
    "one shot": one_shot,
    "`git bisect-patched`": step_by_step,
    "bisect the integrate branch": integrate,
    "move the pin forward (`bisectkit advance`)": advance,
    "from the culprit commit to the culprit pass (`bisectkit actions`)": actions,
}


def restored(title: str, before: dict[str, str], after: dict[str, str],
             outputs: frozenset[str]) -> None:
    """Every HEAD and branch as before; status clean but for the tutorial's outputs."""
    left = [line for line in after["super_status"].splitlines()
            if not (line.startswith("?? ") and line[3:] in outputs)]
    after = {**after, "super_status": "\n".join(left)}
    moved = {k: (before[k], v) for k, v in after.items() if v != before[k]}
    assert not moved, f"the tutorial {title!r} left repositories moved or dirty: {moved}"


def run(command: Command, setting: Setting) -> None:
    """Run one command as the README gives it; check its exit status and output."""
    text = fill(command.text, setting.fills)
    if command.writes is not None:
        target = setting.cwd / text.split()[1]
        target.write_text(fill(command.writes, setting.fills), encoding="utf-8")
        if command.writes.startswith("#!"):
            target.chmod(0o755)
    env = {k: v for k, v in setting.env.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(["bash", "-c", text], cwd=setting.cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, timeout=120)
    where = f"README.md:{command.line}: {text}"
    assert proc.returncode == command.exit, (
        f"{where}\nexited {proc.returncode}, the README says {command.exit}\n{proc.stdout}")
    missing = unmatched([fill(line, setting.fills) for line in command.expected], proc.stdout)
    assert missing is None, f"{where}\nthe README shows {missing!r}; it printed:\n{proc.stdout}"


def test_the_readme_has_the_tutorials_this_test_runs() -> None:
    titles = list(sections(README.read_text(encoding="utf-8")))
    assert titles == list(TUTORIALS)
    firsts = {first_line(b) for title in titles for b in blocks(*sections(
        README.read_text(encoding="utf-8"))[title]) if b.tag == "sh" and b.lines}
    assert set(NOT_RUN) <= firsts, set(NOT_RUN) - firsts


@pytest.mark.parametrize("title", list(TUTORIALS))
def test_a_readme_tutorial_runs_as_written(title: str, world_factory: WorldFactory,
                                           tmp_path: Path) -> None:
    setting = TUTORIALS[title](world_factory, tmp_path)
    before = snapshot(setting.world) if setting.world else None
    steps = commands(title)
    assert steps, f"the tutorial {title!r} has no command"
    for command in steps:
        run(command, setting)
    if setting.world and before:
        restored(title, before, snapshot(setting.world), setting.outputs)


def test_expected_output_is_matched_in_order_and_loosely() -> None:
    out = "[step 1] testing 1f2c upstream commit\n    200: touch lib/bug.txt\nsummary: 9 steps\n"
    assert unmatched(["...", "upstream commit 200: ... bug.txt", "summary:"], out) is None
    assert unmatched(["summary:", "[step 1]"], out) == "[step 1]"
    assert unmatched(["upstream commit 201"], out) == "upstream commit 201"


def test_a_command_exits_as_its_comment_says() -> None:
    assert Command("./build.sh && ./repro.sh   # exits 1 either way", 1).exit == 1
    assert Command("git bisect-patched good          # or: bad, skip", 1).exit == 0
