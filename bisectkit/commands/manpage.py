"""The man pages ``git-bisect-patched(1)`` and ``bisectkit(1)``, written from the parsers,
and ``--help``, which shows them.

Everything a page says about the commands comes from
:func:`bisectkit.commands.registry.build_parser` (descriptions, usages, options, the
``example:`` epilogs), so the pages cannot drift from ``-h``; the committed copies under
``share/man/man1`` (shipped in the wheel) are checked against a fresh rendering by
``tests/test_manpage.py``. After changing a command's arguments or words::

    python3 -m bisectkit.commands.manpage --write

``git bisect-patched --help`` never reaches bisectkit: git runs ``man
git-bisect-patched``, which finds the page installed with the package, editable or not
(``<prefix>/share/man/man1``, found from ``<prefix>/bin`` on PATH;
``build_backend/bisectkit_build.py`` puts the pages in editable wheels). Run directly,
``--help`` opens the same page in a terminal and prints argparse's help otherwise
(a pipe, CI), so it never waits for a pager nobody reads.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from bisectkit.cli import about
from bisectkit.cli.about import commands, epilog_parts, usage_lines
from bisectkit.commands.registry import build_parser
from bisectkit.errors import ExitCode
from bisectkit.model import GIT_PROG, VERSION

#: The page of each program: file name -> ``git_mode``.
PAGES = {"git-bisect-patched.1": True, "bisectkit.1": False}
#: Where the pages live in a checkout and in an installed prefix (``<prefix>/share/man/man1``).
MAN_DIR = Path("share", "man", "man1")
#: The checkout's copies (an editable install runs from the checkout).
SOURCE_DIR = Path(__file__).resolve().parents[2] / MAN_DIR
REGENERATE = "python3 -m bisectkit.commands.manpage --write"
#: Lines shown as written are wrapped here: the page is read in 80 columns, its text indented
#: by 7, and 4 more in an indented block (usages in the synopsis: about.USAGE_WIDTH).
_BLOCK_WIDTH = 68

_EXIT_STATUS = [
    (str(int(ExitCode.FOUND)), "the first bad commit was found (advance: where the pin can go is "
                             "known); any other command succeeded"),
    (str(int(ExitCode.INCONCLUSIVE)), "only skipped commits are left; the possible first bad "
                                    "commits are listed"),
    (str(int(ExitCode.USAGE)), "bad input (an unknown revision, a dirty work tree, a session "
                             "already in progress, ...): one line on stderr, nothing touched; "
                             "a command line that does not parse has the command's usage "
                             "in one line above it"),
    (str(int(ExitCode.ABORTED)), "the run had to stop: the repro exited 128 or more or was "
                               "killed, a command cannot run, too many steps were skipped for "
                               "the machine's sake, another process moved the tree under test, "
                               "or a plugin raised"),
    (str(int(ExitCode.GIT_FAILURE)), "a git operation failed after the session started, or the "
                                   "disk is full or read-only; 'reset' finishes once it is "
                                   "fixed"),
    (str(int(ExitCode.RANGE_NOT_VERIFIED)), "an end does not test as claimed (the good end is "
                                          "not good, or the bad end not bad)"),
    (str(int(ExitCode.INTERNAL)), "internal error: an unexpected exception (traceback on "
                                "stderr)"),
    ("128+N", f"stopped by signal N ({int(ExitCode.INTERRUPTED)}: Ctrl-C, 143: SIGTERM); the "
              "running build or repro is killed"),
]
_FILES = [
    (".git/bisectkit/", "the state of bisectkit, in the superproject's git dir"),
    (".git/bisectkit/session.json", "the session in progress; removed by reset"),
    (".git/bisectkit/journal", "every change made during the session; reset replays it"),
    (".git/bisectkit/lock", "present while a bisectkit command works in this superproject"),
    (".git/bisectkit/verdicts.json", "the verdict cache, kept across sessions"),
    (".git/bisectkit/last-log", "the log of the last session, for replay"),
    (".git/bisectkit/workspaces/", "the workspaces of --jobs"),
]


# -- roff -----------------------------------------------------------------------

def esc(text: str) -> str:
    """``text`` safe inside a roff line: backslashes, minus signs (``\\-``, so options copy
    and search as typed) and a leading ``.`` or ``'`` (a control line otherwise)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def _font(text: str, font: str) -> str:
    return f"\\f{font}{esc(text)}\\fR"


def _verbatim(lines: Sequence[str]) -> list[str]:
    """Lines shown as written (usages, examples), in an indented block."""
    return [".PP", ".RS 4", ".nf", *(esc(line) for line in lines), ".fi", ".RE"]


def _commands_block(commands: Sequence[str]) -> list[str]:
    return _verbatim([line for c in commands for line in about.shell_lines(c, _BLOCK_WIDTH)])


# -- reading the parser ---------------------------------------------------------

def _invocation(p: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = p._get_formatter()
    if not action.option_strings:
        return _font(formatter._metavar_formatter(action, action.dest)(1)[0], "I")
    args = "" if action.nargs == 0 else formatter._format_args(action, action.dest.upper())
    return ", ".join(_font(opt, "B") + (" " + _font(args, "I") if args else "")
                     for opt in action.option_strings)


def _options(p: argparse.ArgumentParser, skip_help: bool = True) -> list[str]:
    """The option list of ``p``, group by group, as ``.TP`` entries."""
    out: list[str] = []
    formatter = p._get_formatter()
    for group in p._action_groups:
        shown = [a for a in group._group_actions if a.help is not argparse.SUPPRESS
                 and not isinstance(a, argparse._SubParsersAction)
                 and not (skip_help and isinstance(a, argparse._HelpAction))]
        if not shown:
            continue
        out += [".PP", _font(f"{group.title or 'options'}:", "I")]
        for action in shown:
            described = formatter._expand_help(action) if action.help else ""
            out += [".TP", _invocation(p, action), esc(" ".join(described.split()))]
    return out


# -- the page -------------------------------------------------------------------

def render(git_mode: bool) -> str:
    """The roff source of ``git-bisect-patched(1)`` (``git_mode``) or ``bisectkit(1)``."""
    parser = build_parser(git_mode)
    prog = GIT_PROG if git_mode else "bisectkit"
    page = prog.replace(" ", "-")
    listed = list(commands(parser))
    # .nh .ad l: no hyphenation, ragged right (options must not be split or stretched).
    lines = [f'.TH "{page.upper()}" "1" "" "bisectkit {VERSION}" "bisectkit manual"',
             ".nh", ".ad l", ".SH NAME",
             f"{esc(page)} \\- bisect regressions in projects that pin a patched submodule",
             ".SH SYNOPSIS", ".nf"]
    for _, _, sub in listed:
        lines += [esc(line) for line in usage_lines(sub)]
    lines += [".fi", ".SH DESCRIPTION", esc(parser.description or ""), ".PP",
              f"{_font(f'{prog} help', 'B')} prints the usage of every command; "
              f"{_font(f'{prog} COMMAND -h', 'B')} the options of one.",
              ".SH COMMANDS"]
    for name, summary, _ in listed:
        lines += [".TP", _font(name, "B"), esc(summary)]
    lines += [".SH OPTIONS", *_options(parser, skip_help=False)]
    for name, _, sub in listed:
        lines += _command_section(name, sub)
    lines += [".SH EXIT STATUS"]
    for code, meaning in _EXIT_STATUS:
        lines += [".TP", _font(code, "B"), esc(meaning)]
    lines += [".SH EXAMPLES"]
    for name, summary, sub in listed:
        lines += [".PP", f"{esc(name)}: {esc(summary)}", *_commands_block(epilog_parts(sub)[1])]
    lines += [".SH FILES"]
    for path, what in _FILES:
        lines += [".TP", _font(path, "I"), esc(what)]
    lines += [".SH SEE ALSO", f"{_font('git-bisect', 'B')}(1), {_font('git-submodule', 'B')}(1)"
              + ("" if git_mode else f", {_font('git-bisect-patched', 'B')}(1)")
              + (f", {_font('bisectkit', 'B')}(1)" if git_mode else ""),
              ".PP", "The README of bisectkit: tutorials, plugins, the JSON result."]
    return "\n".join(lines) + "\n"


def _command_section(name: str, sub: argparse.ArgumentParser) -> list[str]:
    """``.SS name``: the description, the usage, the options, the note and the example."""
    note, examples = epilog_parts(sub)
    lines = [f'.SS "{esc(name)}"', esc(sub.description or ""),
             *_verbatim(usage_lines(sub, _BLOCK_WIDTH)),
             *_options(sub)]
    if note:
        lines += [".PP", esc(note)]
    if examples:
        lines += [".PP", "Example:", *_commands_block(examples)]
    return lines


# -- --help ---------------------------------------------------------------------

def show_manual(parser: argparse.ArgumentParser, out: TextIO) -> int:
    """``--help``: the man page in a terminal (where ``man`` is installed), else ``-h``."""
    page = parser.prog.replace(" ", "-")
    man = shutil.which("man")
    if man is not None and out.isatty():
        found = manual_page(page)
        argv = [man, "-l", str(found)] if found else [man, page]
        out.flush()
        # A page man cannot find or render: argparse's help below, instead of nothing.
        if (found or _man_knows(man, page)) and subprocess.run(argv).returncode == 0:
            return 0
    out.write(parser.format_help())
    return 0


def manual_page(page: str) -> Path | None:
    """The page ``page`` that belongs to this bisectkit: the checkout's copy when it runs
    from one (an editable install: that copy is current, the one installed beside it is a
    snapshot), else the one installed with it (under the install scheme's data path)."""
    name = f"{page}.1"
    data = [sysconfig.get_path("data"),
            sysconfig.get_path("data", sysconfig.get_preferred_scheme("user"))]
    for directory in [SOURCE_DIR, *(Path(d) / MAN_DIR for d in data if d)]:
        if (directory / name).is_file():
            return directory / name
    return None


def _man_knows(man: str, page: str) -> bool:
    """Whether ``man`` finds ``page`` on its own path (say, installed by a distribution)."""
    return subprocess.run([man, "-w", page], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


# -- the command ----------------------------------------------------------------

def stale(directory: Path = SOURCE_DIR) -> list[str]:
    """The pages in ``directory`` that differ from a fresh rendering (or are missing)."""
    found = []
    for name, git_mode in PAGES.items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render(git_mode):
            found.append(name)
    return found


def write(directory: Path = SOURCE_DIR) -> list[Path]:
    """Render every page into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, git_mode in PAGES.items():
        path = directory / name
        path.write_text(render(git_mode), encoding="utf-8")
        written.append(path)
    return written


def install(prefix: Path) -> list[Path]:
    """Link this bisectkit's pages (:func:`manual_page`) into ``prefix``/share/man/man1,
    where man looks for the programs in ``prefix``/bin (or ``prefix``/shims): for a Python
    whose install prefix man does not search, such as pyenv's. Links, so a regenerated page
    is seen at once."""
    target = prefix / MAN_DIR
    target.mkdir(parents=True, exist_ok=True)
    linked = []
    for name in PAGES:
        page = manual_page(name.removesuffix(".1")) or SOURCE_DIR / name
        link = target / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(page)
        linked.append(link)
    return linked


def main(argv: Sequence[str] | None = None) -> int:
    """``python3 -m bisectkit.commands.manpage --write|--check|--install [PREFIX]|--print PAGE``."""
    ap = argparse.ArgumentParser(prog="python3 -m bisectkit.commands.manpage", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true", help=f"regenerate {SOURCE_DIR}/*.1")
    what.add_argument("--check", action="store_true", help="exit 1 if a page is out of date")
    what.add_argument("--install", nargs="?", const=sys.prefix, metavar="PREFIX",
                      help=f"link the pages into PREFIX/{MAN_DIR} (default PREFIX: "
                           f"{sys.prefix}), for a Python whose prefix man does not "
                           f"search (pyenv: PREFIX $(pyenv root))")
    what.add_argument("--print", choices=sorted(PAGES), metavar="PAGE",
                      help="print a page's roff source")
    ap.add_argument("--dir", type=Path, default=SOURCE_DIR,
                    help="with --write or --check: the pages' directory (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.print:
        sys.stdout.write(render(PAGES[args.print]))
    elif args.check:
        if out_of_date := stale(args.dir):
            print(f"out of date: {', '.join(out_of_date)}; run: {REGENERATE}", file=sys.stderr)
            return 1
    else:
        for path in write(args.dir) if args.write else install(Path(args.install)):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
