"""What the build and repro commands can be seen to read: the files their words name
(and those they write), and the environment variables those words name.

Part of the verdict cache's key material (:func:`bisectkit.cache.run_identity`);
the variables read by the named scripts are found by :mod:`bisectkit.envscan`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path

from bisectkit.envscan import names_in
from bisectkit.model import RunOptions


def command_env(opts: RunOptions) -> set[str]:
    """Variables named in the build and repro words (``$CC``, ``${BUILD_TYPE:-Debug}``)."""
    names = names_in(opts.build or "")
    for word in opts.repro:
        names |= names_in(word)
    return names


def named_files(opts: RunOptions, root: Path) -> tuple[list[Path], set[str]]:
    """Existing regular files named by the build and repro words, and the files they write.

    Words are the argv words and the shell words inside them (``sh -c
    './repro.sh input'``, ``--build``); relative ones are relative to the
    superproject root, where the commands run; ``~`` and ``$VAR`` are
    expanded (with bisectkit's environment); ``--opt=FILE`` and ``VAR=FILE``
    name FILE. The target of a shell redirection (``> log``, ``>> log``) or of
    ``tee`` is an output, not an input: never hashed. Directories are never
    hashed from here (``.`` or ``build`` would mean the whole tree, or a build
    directory that changes at every step): ``--cache-input DIR`` adds one.
    """
    words: list[str] = []
    outputs: set[str] = set()
    for word in [*opts.repro, *([opts.build] if opts.build else [])]:
        words.append(word)
        inner, out = shell_words(word)
        words += inner
        outputs |= {_resolve(w, root) for w in out}
    found: dict[str, Path] = {}
    for word in words:
        for candidate in (word, word.partition("=")[2]):
            if not candidate:
                continue
            path = _resolve(candidate, root)
            with contextlib.suppress(OSError, ValueError):
                if path not in outputs and Path(path).is_file():
                    found.setdefault(path, Path(path))
    return [found[k] for k in sorted(found)], outputs


def shell_words(text: str) -> tuple[list[str], list[str]]:
    """(words, redirection and tee targets) of ``text`` read as a shell command."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # not valid shell (an unbalanced quote): nothing more to find
        return [], []
    words: list[str] = []
    outputs: list[str] = []
    redirect = tee = False
    for token in tokens:
        if token and all(c in lexer.punctuation_chars for c in token):
            redirect, tee = ">" in token, False
            continue
        if redirect or (tee and not token.startswith("-")):
            outputs.append(token)  # tee writes every file it is given
        else:
            words.append(token)
            tee = (tee and token.startswith("-")) or os.path.basename(token) == "tee"
        redirect = False
    return words, outputs


def _resolve(word: str, root: Path) -> str:
    # ``~/b.sh`` and ``$TOOLS/b.sh`` name the file the shell would run (the
    # variable's value is in the key too, see :func:`command_env`).
    path = os.path.expandvars(os.path.expanduser(word))
    return os.path.normpath(path if os.path.isabs(path) else root / path)
