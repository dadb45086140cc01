"""Checks of a command line against the machine, before anything is touched.

A bisection runs for hours: a repro that is not executable, a ``--build``
whose first command does not exist, a ``#!`` interpreter that is missing or an
output file that cannot be written would otherwise fail at every step (and
126/127 at every step reads as "bad"). Each check raises :class:`BadInput`
(one line, exit 2).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bisectkit.errors import BadInput
from bisectkit.execute import envscan
from bisectkit.model import Rules


def commands(build: str | None, repro: Sequence[str], root: Path) -> None:
    """``--build`` and the repro (resolved already) can run: their first commands exist."""
    if build:
        _check_syntax("--build", build)
        _check_shell_command("--build", build, root)
    if repro:
        _check_interpreter(repro[0])
        if Path(repro[0]).name in _SHELLS and len(repro) > 2 and repro[1] == "-c":
            _check_syntax("the repro", repro[2], repro[0])
            _check_shell_command("the repro", repro[2], root)


def rules_problem(rules: Rules) -> str | None:
    """Error message for the first invalid regex, or ``None``."""
    for name, patterns in (("good-if", rules.good_if), ("bad-if", rules.bad_if),
                           ("skip-if", rules.skip_if)):
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                return f"invalid --{name} regex {p!r}: {exc}"
    return None


def cache_input(value: str) -> str:
    """A ``--cache-input`` path made absolute (follow-up commands run from anywhere)."""
    path = Path(value).expanduser()
    if not path.exists():
        raise BadInput(f"--cache-input {value}: no such file or directory")
    if not (path.is_file() or path.is_dir()):
        raise BadInput(f"--cache-input {value}: not a regular file or a directory")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise BadInput(f"--cache-input {value}: permission denied")
    return os.path.abspath(path)


def cache_env(value: str) -> str:
    """A ``--cache-env`` name, checked (an environment variable name, not ``$CC``)."""
    name = value[1:] if value.startswith("$") else value
    if not envscan.valid_name(name):
        raise BadInput(f"--cache-env {value}: not an environment variable name "
                       "(letters, digits and '_', not starting with a digit)")
    return name


#: Paths that name a process's streams (``/dev/stdout`` resolves to whatever stdout is).
_STREAMS = ("/dev/std", "/dev/fd/", "/proc/")


def output_path(flag: str, value: str) -> None:
    """Refuse an output file that could not be written, before a bisection of hours: the
    folder must take a new file (the result is written beside it, then renamed over it),
    and what is there already must be a regular file (a device or a pipe would be
    replaced by the rename); a name that ends with '/' names a folder, never a file."""
    if not value:
        raise BadInput(f"{flag}: give a file name")
    if value == "-":  # only --json writes to stdout (the caller lets its '-' through)
        raise BadInput(f"{flag} -: only --json writes to stdout; give a file name "
                       "(./- for a file named '-')")
    if os.path.abspath(value).startswith(_STREAMS):
        raise BadInput(f"{flag} {value}: names a stream or a process's file, not a file; "
                       "give a file name" + (" ('-' for stdout)" if flag == "--json" else ""))
    if os.path.basename(value) in ("", ".", ".."):
        # realpath would drop the "/": "traces/" would write a file named "traces", and
        # "result.json/" the file itself.
        raise BadInput(f"{flag} {value}: names a folder (it ends with '/'); give a file name")
    path = Path(os.path.realpath(value))  # a link: its target is written
    if path.is_dir():
        raise BadInput(f"{flag} {value}: is a directory; give a file name")
    if path.exists() and not path.is_file():
        raise BadInput(f"{flag} {value}: not a regular file (a device, a pipe or a socket); "
                       "give a file name" + (" ('-' for stdout)" if flag == "--json" else ""))
    parent = path.parent
    if not parent.is_dir():
        raise BadInput(f"{flag} {value}: directory {parent} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        raise BadInput(f"{flag} {value}: the file is not writable")
    try:  # what access() cannot tell: root in /proc, a full or immutable folder
        fd, probe = tempfile.mkstemp(prefix=".bisectkit-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise BadInput(f"{flag} {value}: cannot create a file in {parent}: "
                       f"{exc.strerror or exc}") from None


def workspace_root(value: str, path: str) -> None:
    """``--workspace-root``: a folder, or one that can be made (its nearest existing
    parent takes new folders), checked before the first workspace is cloned."""
    where = Path(path)
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise BadInput(f"--workspace-root {value}: {where} is not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".bisectkit-probe-", dir=where))
    except OSError as exc:
        raise BadInput(f"--workspace-root {value}: cannot create a folder in {where}: "
                       f"{exc.strerror or exc}") from None


def resolve_command(word: str) -> str:
    """Absolute path of the repro, checked before anything is touched."""
    if os.sep in word:
        path = Path(word).resolve()
        if not path.is_file():
            raise BadInput(f"repro not found: {word}")
        if not os.access(path, os.X_OK):
            raise BadInput(f"repro is not executable: {word} (chmod +x it)")
        return str(path)
    found = shutil.which(word)
    if found is None:
        if Path(word).is_file():  # a shell runs a file here only as ./NAME too
            raise BadInput(f"repro not found: {word} is not on PATH; did you mean ./{word}?")
        raise BadInput(f"repro not found: {word} (not a file and not on PATH)")
    return found


#: Shells whose ``-c STRING`` is checked like ``--build``.
_SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
#: First words a shell runs itself (or that wrap another command): not checked.
_SHELL_WORDS = frozenset((
    "!", ".", ":", "[", "[[", "{", "(", "alias", "break", "builtin", "case", "cd", "command",
    "continue", "declare", "echo", "env", "eval", "exec", "exit", "export", "false", "for",
    "function", "if", "local", "nice", "nohup", "printf", "read", "return", "set", "shift",
    "source", "test", "time", "timeout", "trap", "true", "ulimit", "umask", "unset", "until",
    "while", "xargs"))


#: ``NAME=value``: an assignment before the command (``CC=clang make``), not the command.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def _check_syntax(what: str, text: str, shell: str = "/bin/sh") -> None:
    """The shell can read ``text`` (``sh -n``: parsed, nothing run); a quote left open
    would otherwise fail the same way at every step, each one a skip."""
    try:
        proc = subprocess.run([shell, "-n", "-c", text], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return  # no shell to ask here: the step will say what is wrong
    if proc.returncode != 0:
        said = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        reason = said[-1] if said else f"exit {proc.returncode}"
        raise BadInput(f"{what}: the shell cannot parse it ({reason}): {text}")


def _check_shell_command(what: str, text: str, root: Path) -> None:
    """The first command of a shell string must exist and be executable (exit 2 if not).

    Shells exit 126/127 for a command that cannot run; found at every step,
    that would read as "bad" everywhere. Only what can be known is checked:
    the first simple command, unless it is a builtin, a keyword or a wrapper.
    """
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return  # not valid for shlex; the shell decides
    assigned = [w.partition("=")[0] for w in words if _ASSIGNMENT.fullmatch(w)]
    words = [w for w in words if not _ASSIGNMENT.fullmatch(w)] or [""]
    first = re.split(r"[;&|<>()]", words[0], maxsplit=1)[0]
    if not first or first in _SHELL_WORDS or any(c in first for c in "$`*?~"):
        return
    if "PATH" in assigned and "/" not in first:
        return  # ``PATH=tools:$PATH cmd``: looked up on a PATH we do not know
    if "/" in first:
        path = Path(first) if os.path.isabs(first) else root / first
        if not path.is_file():
            raise BadInput(f"{what}: {first}: no such file (relative to {root})")
        if not os.access(path, os.X_OK):
            raise BadInput(f"{what}: {first} is not executable (chmod +x it)")
        _check_interpreter(str(path), what)
    elif shutil.which(first) is None:
        if (root / first).is_file():  # run there, a shell runs it only as ./NAME too
            raise BadInput(f"{what}: {first} is not on PATH; did you mean ./{first}?")
        raise BadInput(f"{what}: command not found: {first} (not on PATH)")


def _check_interpreter(path: str, what: str = "the repro") -> None:
    """A script whose ``#!`` interpreter is missing cannot run (exit 126/127 at every step)."""
    try:
        with open(path, "rb") as f:
            head = f.readline(256)
    except OSError:
        return
    if not head.startswith(b"#!"):
        return
    words = head[2:].decode("utf-8", "replace").split()
    if not words:
        return
    interpreter = words[0]
    if Path(interpreter).name == "env" and len(words) > 1:
        name = next((w for w in words[1:] if not w.startswith("-")), None)
        if name is not None and "=" not in name and shutil.which(name) is None:
            raise BadInput(f"{what}: {path}: its interpreter {name} (#!{' '.join(words)}) "
                           "is not on PATH")
    elif not os.access(interpreter, os.X_OK):
        raise BadInput(f"{what}: {path}: its interpreter {interpreter} does not exist or is "
                       "not executable")
