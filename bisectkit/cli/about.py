"""How the parsers read and write: the one-line refusal of a bad command line, no
abbreviated options, and the ``example:`` epilogs that ``-h``, ``help COMMAND`` and the man
pages (:mod:`bisectkit.commands.manpage`) show.

Each command's description and examples are declared beside its arguments, in its module
under :mod:`bisectkit.commands` (a :class:`~bisectkit.commands.command.Command`).
"""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from bisectkit.model import GIT_PROG

#: Marks the start of the examples in an epilog (the man page collects them under EXAMPLES).
EXAMPLE = "example:"

#: Usages are wrapped here by ``help`` and the man pages' synopsis (a page is read in 80
#: columns, its text indented by 7).
USAGE_WIDTH = 72
#: A refusal's usage line fits here (with its "usage: " prefix): an 80-column terminal.
ERROR_WIDTH = 80
USAGE_PREFIX = "usage: "
#: The build command the examples show.
EXAMPLE_BUILD = "--build 'ninja -C build'"


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


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction


class Subcommands(_SubParsers):
    """A program's subcommands, whose parsers are completed when first used.

    Each subcommand's parser is added with its name, aliases and one-line help (all the
    program's ``-h`` and an unknown command's refusal show) and, :meth:`defer`, what
    completes it (its arguments, words and defaults: its module's to add). The one the
    command line chooses is completed before it parses the rest; :func:`commands` and
    :func:`subcommand` complete those they return. A process that runs one command
    builds (and imports) only that command's parser.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What completes each parser not yet complete, by ``id`` of the parser.
        self._pending: dict[int, Callable[[argparse.ArgumentParser], None]] = {}

    def defer(self, parser: argparse.ArgumentParser,
              complete: Callable[[argparse.ArgumentParser], None]) -> None:
        """Complete ``parser`` (one of these subcommands') with ``complete`` when it is used."""
        self._pending[id(parser)] = complete

    def complete(self, name: str) -> argparse.ArgumentParser:
        """The parser of subcommand ``name`` (a name or an alias), complete."""
        parser: argparse.ArgumentParser = self.choices[name]
        complete = self._pending.pop(id(parser), None)
        if complete is not None:
            complete(parser)
        return parser

    def complete_all(self) -> None:
        """Complete every subcommand's parser."""
        for name in list(self.choices):
            self.complete(name)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        if isinstance(values, list) and values and values[0] in self.choices:
            self.complete(values[0])  # an unknown name: argparse's refusal, unchanged
        super().__call__(parser, namespace, values, option_string)


def subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` of ``parser``, complete (``parser`` itself if none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            if isinstance(action, Subcommands):
                return action.complete(name)
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


# -- reading a parser back (help, the man pages) ---------------------------------

#: A subcommand as listed: (name, one-line help, parser).
Listed = tuple[str, str, argparse.ArgumentParser]


def commands(parser: argparse.ArgumentParser) -> Iterator[Listed]:
    """(name, one-line help, parser) of every subcommand, each complete, in the parser's order;
    an alias (``view`` for ``visualize``) is named in its command's help, not listed again."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    if isinstance(action, Subcommands):
                        sub = action.complete(name)
                    yield name, helps.get(name, ""), sub


def usage_lines(p: argparse.ArgumentParser, width: int = USAGE_WIDTH) -> list[str]:
    """``p``'s usage, wrapped at ``width`` (argparse would wrap at the terminal's width)."""
    formatter = argparse.HelpFormatter(prog=p.prog, width=10_000)
    formatter.add_usage(p.usage, p._actions, p._mutually_exclusive_groups, prefix="")
    # -h is everywhere; a synopsis without it reads like git's.
    one_line = " ".join(formatter.format_help().split()).replace(" [-h]", "", 1)
    return wrap_usage(one_line, width)


#: An innermost bracketed group of a usage (``[--limit N]``, ``[-- PATHSPEC...]``).
_GROUP = re.compile(r"\[[^][()]*\]|\([^][()]*\)")
#: Stands for a space inside a group while the usage is wrapped.
_KEPT_SPACE = "\0"


def wrap_usage(one_line: str, width: int) -> list[str]:
    """A usage wrapped at ``width``, its continuation lines indented, never inside an
    innermost group: ``[--limit N]`` stays whole (argparse's own usages do too)."""
    kept = _GROUP.sub(lambda m: m.group(0).replace(" ", _KEPT_SPACE), one_line)
    lines = textwrap.wrap(kept, width, subsequent_indent="    ", break_long_words=False,
                          break_on_hyphens=False)
    return [line.replace(_KEPT_SPACE, " ") for line in lines]


def epilog_parts(p: argparse.ArgumentParser) -> tuple[str, list[str]]:
    """``p``'s epilog as (note, example command lines)."""
    note, _, examples = (p.epilog or "").partition(EXAMPLE)
    return " ".join(note.split()), [line.strip() for line in examples.splitlines()
                                    if line.strip()]



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

    def _format_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                      groups: Iterable[argparse._MutuallyExclusiveGroup],
                      prefix: str | None) -> str:
        text = super()._format_usage(usage, actions, groups, prefix)
        if usage is None:
            return text  # made from the arguments: argparse wrapped it
        # A usage written by hand is printed as written: wrap it as argparse wraps its own.
        return "\n".join(wrap_usage(" ".join(text.split()), self._width)) + "\n\n"


class Parser(argparse.ArgumentParser):
    """The parsers' class (subcommands inherit it): formats with :class:`_Formatter`, and
    takes no abbreviated option: ``run --good REV`` would otherwise be read as
    ``--good-if REV`` and judge every step by a rule the user never wrote."""

    #: The usage line a refusal shows, when the one :meth:`synopsis` makes would mislead
    #: (set by :class:`~bisectkit.commands.command.Command`).
    short_usage: str | None = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def synopsis(self) -> str:
        """The one usage line of a refusal: the usage when it fits a line, else the command,
        ``[options]`` and its positional arguments (the full usage is one ``help`` away)."""
        if self.short_usage:
            return self.short_usage
        full = " ".join(usage_lines(self, 10_000))
        if len(USAGE_PREFIX + full) <= ERROR_WIDTH:
            return full
        words = [self.prog, "[options]"]
        formatter = argparse.HelpFormatter(prog=self.prog, width=10_000)
        for action in self._get_positional_actions():
            if action.nargs == argparse.REMAINDER:  # argparse shows "..." for any of them
                words.append(action.metavar if isinstance(action.metavar, str) else "...")
            else:
                words.append(formatter._format_args(action, action.dest))
        return " ".join(words)

    def help_command(self) -> str:
        """The command that prints this parser's help: ``bisectkit help run``."""
        root = GIT_PROG if self.prog.startswith(GIT_PROG) else self.prog.split(" ", 1)[0]
        name = self.prog[len(root):].strip()
        return f"{root} help {name}" if name else f"{root} help"

    def error(self, message: str) -> NoReturn:
        """The command's usage in one line, then the refusal in one, as every refusal is
        (``bisectkit: error: ...``, exit 2) with where the full help is: not the whole
        usage (a screenful above the reason) nor the top level's."""
        root = GIT_PROG if self.prog.startswith(GIT_PROG) else self.prog.split(" ", 1)[0]
        line = " ".join(message.split())  # argparse's own messages may wrap
        self.exit(2, f"{USAGE_PREFIX}{self.synopsis()}\n"
                     f"{root}: error: {line} (see '{self.help_command()}')\n")
