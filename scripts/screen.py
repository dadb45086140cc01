#!/usr/bin/env python3
"""Capture an 80-column terminal screen of a ``bisectkit run`` in progress, as text.

Builds the demo's world (``worldgen``), runs the real ``bisectkit run`` in it
under a pseudo-terminal of ``--cols`` x ``--rows`` (a build that takes a
moment, so the run is caught mid-way), feeds what it writes to a minimal
terminal emulator (text, CR/LF, cursor up/down, erase line: what rich's live
display uses; colours are dropped) and prints the screen once step
``--at-step`` is under way, then the run's last lines and its exit status.

Usage: python3 scripts/screen.py [--cols 80] [--rows 24] [--at-step 3]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pexpect
import worldgen

_CONTROL = re.compile(r"\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b.")


class Screen:
    """Just enough of a VT100 for rich's output: a grid of characters and a cursor."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.row = self.col = 0

    def feed(self, data: str) -> None:
        at = 0
        for m in _CONTROL.finditer(data):
            self._text(data[at:m.start()])
            if m.group(2):
                self._csi(m.group(1), m.group(2))
            at = m.end()
        self._text(data[at:])

    def _text(self, text: str) -> None:
        for ch in text:
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self._down()
            elif ch == "\b":
                self.col = max(self.col - 1, 0)
            elif ch >= " ":
                if self.col >= self.cols:  # auto-wrap, as a terminal does
                    self.col = 0
                    self._down()
                self.grid[self.row][self.col] = ch
                self.col += 1

    def _down(self) -> None:
        if self.row == self.rows - 1:
            self.grid = self.grid[1:] + [[" "] * self.cols]
        else:
            self.row += 1

    def _csi(self, params: str, final: str) -> None:
        n = int(params) if params.isdigit() else 0
        if final == "A":
            self.row = max(self.row - max(n, 1), 0)
        elif final == "B":
            self.row = min(self.row + max(n, 1), self.rows - 1)
        elif final == "G":
            self.col = max(n - 1, 0)
        elif final == "K":
            line = self.grid[self.row]
            lo, hi = {0: (self.col, self.cols), 1: (0, self.col + 1)}.get(n, (0, self.cols))
            line[lo:hi] = [" "] * (hi - lo)

    def text(self) -> str:
        return "\n".join("".join(line).rstrip() for line in self.grid)


def bisectkit_argv() -> list[str]:
    exe = shutil.which("bisectkit")
    return [exe] if exe else [sys.executable, "-m", "bisectkit"]


def capture(root: Path, cols: int, rows: int, at_step: int) -> int:
    world = worldgen.build_world(root, worldgen.WorldSpec())
    argv = [*bisectkit_argv(), "run", "--submodule", worldgen.SUBMODULE,
            "--upstream", "upstream/main", "--good", world.sha(0), "--bad", world.sha(300),
            "--build", "./build.sh && sleep 0.6", "--good-if", "device .* not found",
            "--", "./repro.sh"]
    child = pexpect.spawn(argv[0], argv[1:], cwd=str(world.superproject), env=world.env,
                          encoding="utf-8", dimensions=(rows, cols), timeout=None)
    screen, shown, deadline = Screen(rows, cols), False, time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            screen.feed(child.read_nonblocking(65536, timeout=0.1))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            break
        if not shown and f"step {at_step} of ~" in screen.text() and "\n> built" in screen.text():
            print(f"--- a {cols}x{rows} terminal during step {at_step} " + "-" * 20)
            print(screen.text().rstrip())
            shown = True
    child.close()
    print(f"--- the same terminal at the end (exit {child.exitstatus}) " + "-" * 20)
    print(screen.text().rstrip())
    return 0 if shown and child.exitstatus == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cols", type=int, default=80)
    parser.add_argument("--rows", type=int, default=24)
    parser.add_argument("--at-step", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bisectkit-screen-") as tmp:
        return capture(Path(tmp), args.cols, args.rows, args.at_step)


if __name__ == "__main__":
    sys.exit(main())
