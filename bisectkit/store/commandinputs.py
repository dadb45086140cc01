"""What the build and repro commands can be seen to read: the files their words name
(and those they write), the makefiles make reads, the files those scripts source or
include, and the environment variables all of them name.

Part of the verdict cache's key material (:func:`bisectkit.store.cachekey.run_identity`);
the variables read by the named scripts are found by :mod:`bisectkit.execute.envscan`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

from bisectkit.execute.envscan import MAKE_VARIABLES, names_in, read_text
from bisectkit.model import RunOptions

#: Command words that run make (its makefiles and implicit variables are inputs).
MAKES = frozenset({"make", "gmake"})
#: The makefile make reads when no ``-f`` is given: the first of these that exists.
DEFAULT_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
#: How deep ``. FILE``/``source FILE``/``include FILE`` are followed, and how many files
#: that adds at most (a scan of the key, not an interpreter).
FOLLOW_DEPTH = 3
FOLLOW_FILES = 32
#: ``. FILE``/``source FILE`` in a shell script, ``include``/``-include``/``sinclude``
#: in a makefile: the words after them (literal paths only are followed).
_PULLS_IN = re.compile(r"(?:^|[;&|({]|\bthen|\bdo)[ \t]*(?:\.|source)[ \t]+([^\s;&|)]+)"
                       r"|^[ \t]*-?s?include[ \t]+([^\n#]+)", re.MULTILINE)


def command_env(opts: RunOptions) -> set[str]:
    """Variables named in the build and repro words (``$CC``, ``${BUILD_TYPE:-Debug}``),
    and make's implicit ones when a command runs make."""
    names = names_in(opts.build or "")
    for word in opts.repro:
        names |= names_in(word)
    if any(_make_args(cmd) is not None for cmd in _commands(opts)):
        names |= MAKE_VARIABLES
    return names


def named_files(opts: RunOptions, root: Path) -> tuple[list[Path], set[str]]:
    """Existing regular files the build and repro read, and the files they write.

    Named files: the argv words and the shell words inside them (``sh -c
    './repro.sh input'``, ``--build``); relative ones are relative to the
    superproject root, where the commands run; ``~`` and ``$VAR`` are
    expanded (with bisectkit's environment); ``--opt=FILE`` and ``VAR=FILE``
    name FILE. The target of a shell redirection (``> log``, ``>> log``) or of
    ``tee`` is an output, not an input: never hashed. Directories are never
    hashed from here (``.`` or ``build`` would mean the whole tree, or a build
    directory that changes at every step): ``--cache-input DIR`` adds one.
    Then the makefiles of every make command (``-C DIR``, ``-f FILE``, else
    ``GNUmakefile``/``makefile``/``Makefile``), and the files those files
    source or include (:func:`pulled_in`).
    """
    words: list[str] = []
    outputs: set[str] = set()
    for word in [*opts.repro, *([opts.build] if opts.build else [])]:
        words.append(word)
        inner, out = shell_words(word)
        words += inner
        outputs |= {_resolve(w, root) for w in out}
    candidates = [_resolve(c, root) for word in words
                  for c in (word, word.partition("=")[2]) if c]
    for cmd in _commands(opts):
        args = _make_args(cmd)
        if args is not None:
            candidates += makefiles(args, root)
    found: dict[str, Path] = {}
    for path in candidates:
        with contextlib.suppress(OSError, ValueError):
            if path not in outputs and Path(path).is_file():
                found.setdefault(path, Path(path))
    for extra in pulled_in(list(found.values()), root):
        found.setdefault(str(extra), extra)
    return [found[k] for k in sorted(found)], outputs


def makefiles(args: list[str], root: Path) -> list[str]:
    """The makefiles make reads given ``args`` (the words after ``make``), absolute."""
    cwd, given = str(root), []
    i = 0
    while i < len(args):
        arg, nxt = args[i], args[i + 1] if i + 1 < len(args) else ""
        for short, long in (("-C", "--directory"), ("-f", "--file"), ("-f", "--makefile")):
            value = (nxt if arg in (short, long) else arg[len(long) + 1:]
                     if arg.startswith(long + "=") else arg[2:]
                     if arg.startswith(short) and len(arg) > 2 else None)
            if value is None:
                continue
            if short == "-C":  # several -C add up; -f files are relative to the last
                cwd = _resolve(value, Path(cwd))
            else:
                given.append(value)
            i += arg in (short, long)
            break
        i += 1
    if given:
        return [_resolve(f, Path(cwd)) for f in given]
    present = [f for f in DEFAULT_MAKEFILES if os.path.isfile(os.path.join(cwd, f))]
    return [os.path.join(cwd, present[0])] if present else []


def pulled_in(files: list[Path], root: Path) -> list[Path]:
    """Files that ``files`` source (``. FILE``, ``source FILE``) or include (make's
    ``include FILE``), and so on, :data:`FOLLOW_DEPTH` deep and :data:`FOLLOW_FILES` at
    most. Only literal paths are followed (no ``$``), relative to the superproject root
    (where the commands run) or else to the including file's folder."""
    seen = {str(f) for f in files}
    found: list[Path] = []
    layer = list(files)
    for _ in range(FOLLOW_DEPTH):
        following: list[Path] = []
        for path in layer:
            for word in _pulled_words(path):
                for base in (root, path.parent):
                    full = Path(_resolve(word, base))
                    if full.is_file():
                        break
                else:
                    continue
                if str(full) not in seen and len(found) < FOLLOW_FILES:
                    seen.add(str(full))
                    found.append(full)
                    following.append(full)
        layer = following
    return found


def _pulled_words(path: Path) -> Iterator[str]:
    text = read_text(path)
    for match in _PULLS_IN.finditer(text or ""):
        sourced, included = match.groups()
        for word in [sourced] if sourced else (included or "").split():
            word = word.strip("'\"")
            if word and "$" not in word and "`" not in word:
                yield word


def _commands(opts: RunOptions) -> Iterator[list[str]]:
    """Each command the build and repro run that can be seen: the repro argv, and the
    simple commands of every shell string among the words."""
    if opts.repro:
        yield list(opts.repro)
    for text in [*opts.repro, *([opts.build] if opts.build else [])]:
        if text == opts.build or any(c.isspace() for c in text):  # a word, not a string
            yield from _simple_commands(text)


def _make_args(cmd: list[str]) -> list[str] | None:
    """The words after ``make`` in ``cmd`` (None: it does not run make)."""
    for i, word in enumerate(cmd):
        if os.path.basename(word) in MAKES:
            return cmd[i + 1:]
    return None


def shell_words(text: str) -> tuple[list[str], list[str]]:
    """(words, redirection and tee targets) of ``text`` read as a shell command."""
    tokens, punctuation = _tokens(text)
    words: list[str] = []
    outputs: list[str] = []
    redirect = tee = False
    for token in tokens:
        if token and all(c in punctuation for c in token):
            redirect, tee = ">" in token, False
            continue
        if redirect or (tee and not token.startswith("-")):
            outputs.append(token)  # tee writes every file it is given
        else:
            words.append(token)
            tee = (tee and token.startswith("-")) or os.path.basename(token) == "tee"
        redirect = False
    return words, outputs


def _simple_commands(text: str) -> Iterator[list[str]]:
    """The word lists of ``text`` between shell operators (``;``, ``&&``, ``|``...)."""
    tokens, punctuation = _tokens(text)
    cmd: list[str] = []
    for token in tokens:
        if token and all(c in punctuation for c in token):
            if cmd:
                yield cmd
            cmd = []
        else:
            cmd.append(token)
    if cmd:
        yield cmd


def _tokens(text: str) -> tuple[list[str], str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer), lexer.punctuation_chars
    except ValueError:  # not valid shell (an unbalanced quote): nothing more to find
        return [], ""


def _resolve(word: str, root: Path) -> str:
    # ``~/b.sh`` and ``$TOOLS/b.sh`` name the file the shell would run (the
    # variable's value is in the key too, see :func:`command_env`).
    path = os.path.expandvars(os.path.expanduser(word))
    return os.path.normpath(path if os.path.isabs(path) else root / path)
