"""What each subcommand is for, with an example: its description and epilog in ``-h``,
``help COMMAND`` and the man pages (:mod:`bisectkit.cli.manpage`).

Kept apart from :mod:`bisectkit.cli.parser` so that the grammar stays readable; a new
subcommand gets its entry here (or ``description=``/``epilog=`` in ``add_parser``):
``tests/test_manpage.py`` fails for a subcommand without a description and an example.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import NoReturn

from bisectkit.model import GIT_PROG

#: Marks the start of the examples in an epilog (the man page collects them under EXAMPLES).
EXAMPLE = "example:"

#: The one-line help of each mark (the description repeats what follows the colon).
MARKS = {
    "good": "mark good: the repro passes there (the old side)",
    "bad": "mark bad: the regression is there (the new side)",
    "skip": "mark skip: it cannot be tested; a neighbour is tested instead",
    "old": "mark old: the side before the change (--term-old; good by default)",
    "new": "mark new: the side after the change (--term-new; bad by default)",
}

_BUILD = "--build 'ninja -C build'"
#: Commands of both programs: (description, example command lines after the program name).
_COMMON: dict[str, tuple[str, ...]] = {
    "show-step": ("Print the kept build and repro output of step N of the session in progress, "
                  "or of the last one.", "show-step 3"),
    "help": ("Print the usage and summary of every command, as 'git bisect help' does; with "
             "COMMAND, that command's help (-h).", "help", "help run"),
}
_BISECTKIT: dict[str, tuple[str, ...]] = {
    "run": ("Bisect in one go: start a session, build and test candidates until the first bad "
            "commit is found, report it and restore every HEAD.",
            f"run --submodule third_party/llvm-project --good v1.0 --bad HEAD {_BUILD} "
            "-- ./repro.sh"),
    "status": ("Show a patched submodule against its upstream: the local patch stack, how far "
               "the pin is behind, and the newest upstream commits affecting it (read-only; "
               "with or without a session).", "status --limit 5 -- mlir/"),
    "advance": ("", f"advance {_BUILD} -- ./smoketest.sh",
                f"advance --apply {_BUILD} -- ./smoketest.sh"),
    "workspaces": ("List the workspaces kept for --jobs and --scheduler (a clone per job, "
                   "reused so builds stay warm), or remove the unused ones with --prune.",
                   "workspaces --prune"),
    "plugins": ("List the loaded plugins (built-in, bundled, installed or given with -p): "
                "where each comes from and the hooks it implements.", "plugins -p flaky"),
}
_GIT: dict[str, tuple[str, ...]] = {
    "start": ("Start a session: record every HEAD, resolve the candidates between the GOOD and "
              "BAD revisions, and check out the first one (with the local patch stack "
              "applied); then build, test and mark it. As with git, the ends may come later: "
              "with fewer, the session waits (nothing is checked out) for 'bad [REV]' and "
              "'good REV' (old/new in your terms); 'bad' with no REV is the superproject's "
              "HEAD with --integrate, else the upstream commit the submodule's pin sits on.",
              "start --submodule third_party/llvm-project HEAD v1.0",
              "start --submodule third_party/llvm-project",
              "start --integrate --all-parents main v1.0"),
    **{verdict: (f"Mark the candidate under test (or each REV) {verdict}: "
                 f"{line.split(': ', 1)[1]}.", verdict) for verdict, line in MARKS.items()},
    "skip": ("Mark the candidate under test (or each REV) skip: it cannot be tested; a "
             "neighbour is tested instead. A range A..B (or A...B) stands for the candidates "
             "in it; those already marked good or bad keep their verdict.",
             "skip", "skip v1.2..v1.3 abc123"),
    "run": ("Build and test candidates one after the other (or --jobs at once) until the "
            "first bad commit is found; the session is kept ('reset' ends it).",
            f"run {_BUILD} -- ./repro.sh"),
    "status": ("Show the session: the range, the verdicts so far, the candidates left and the "
               "one under test.", "status"),
    "log": ("Print the session as a log: its start line and every mark, in order; 'replay' "
            "starts over from it.", "log > bisect.log"),
    "replay": ("Start over from a log written by 'log' (or .git/bisectkit/last-log): end the "
               "session in progress, start with the log's start line and apply its marks.",
               "replay bisect.log"),
    "reset": ("Restore every HEAD, index and work tree to where the session found them and end "
              "the session (from the journal, even after a crash). With COMMIT, then check it "
              "out in the superproject, like 'git bisect reset <commit>' (a branch is checked "
              "out, anything else detaches HEAD; submodules stay as restored). COMMIT is "
              "resolved first: 'reset HEAD' stays on what is checked out now, and a bad COMMIT "
              "changes nothing.", "reset", "reset main"),
    "visualize": ("List the candidates still in play, newest first: those after the newest "
                  "good one up to the oldest bad one, each with its verdict so far in the "
                  "session's terms ('?': not tested). Submodule sessions list upstream commits "
                  "of the submodule; --integrate sessions superproject commits.",
                  "view", "visualize --log"),
    "terms": ("Print the session's terms, as 'git bisect terms' does; with an option, just the "
              "one word.", "terms", "terms --term-bad"),
}


def document(sub: argparse._SubParsersAction[argparse.ArgumentParser], git_mode: bool) -> None:
    """Give each subcommand its description (unless it has one) and its example (after the
    note its epilog may already hold)."""
    prog = GIT_PROG if git_mode else "bisectkit"
    table = {**_COMMON, **(_GIT if git_mode else _BISECTKIT)}
    for name, p in sub.choices.items():
        if name not in table:
            continue
        description, *examples = table[name]
        p.description = p.description or description
        p.epilog = example(*(f"{prog} {e}" for e in examples), note=p.epilog or "")


def example(*commands: str, note: str = "") -> str:
    """An epilog: an optional note, then ``example:`` and its command lines, indented (kept
    as written by :class:`Parser`)."""
    lines = "\n".join(f"  {c}" for c in commands)
    return f"{note}\n\n{EXAMPLE}\n{lines}" if note else f"{EXAMPLE}\n{lines}"


def shell_lines(command: str, width: int) -> list[str]:
    """``command`` wrapped at ``width`` as a shell would still read it: at spaces, each
    line but the last ending in `` \\`` (pasted, it runs as one command)."""
    lines = textwrap.wrap(command, width - 2, subsequent_indent="    ", break_long_words=False,
                          break_on_hyphens=False)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


def subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` of ``parser`` (``parser`` itself if none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, except that indented lines (the examples in an epilog) are
    wrapped as commands (:func:`shell_lines`), so that they can be copied."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for para in text.split("\n"):
            if para.startswith("  "):
                out += [indent + "  " + line
                        for line in shell_lines(para.strip(), width - len(indent) - 2)]
            else:
                out.extend(textwrap.wrap(" ".join(para.split()), width, initial_indent=indent,
                                         subsequent_indent=indent) or [""])
        return "\n".join(out)


class Parser(argparse.ArgumentParser):
    """The parsers' class (subcommands inherit it): formats with :class:`_Formatter`, and
    takes no abbreviated option: ``run --good REV`` would otherwise be read as
    ``--good-if REV`` and judge every step by a rule the user never wrote."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        """One line, as every refusal is (``bisectkit: error: ...``, exit 2); the usage is
        one ``-h`` away instead of a screenful above the reason."""
        root = GIT_PROG if self.prog.startswith(GIT_PROG) else self.prog.split(" ", 1)[0]
        line = " ".join(message.split())  # argparse's own messages may wrap
        self.exit(2, f"{root}: error: {line} (see '{self.prog} -h')\n")
