"""The session log (``log``) and reading it back (``replay``): one format, one module.

A log is what ``git bisect log`` is for git: the ``start`` line, then one
``git bisect-patched good|bad|skip|old|new SHA`` line per verdict, with
comments (``# ...``) for what is recomputed on replay and for the answer.

A log ``git bisect log`` wrote is read too (:func:`parse_log` tells them apart by
their first command): its start line's revisions, terms and pathspec become
``start`` words (what git cannot say, ``--submodule``/``--integrate``, comes from
``replay``'s own command line or ``start``'s defaults), and its marks, in git's terms,
become the sides ``old``/``new`` (and ``skip``). :func:`git_log_lines` writes the
session the other way, for ``git bisect replay`` where the commits mean the same. A
comment's subject or reason has its control characters shown
(:mod:`bisectkit.safetext`): a carriage return in a subject cannot start a line
that ``replay`` would run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from bisectkit import engine, safetext
from bisectkit.engine import Clear, Decision, Found, Inconclusive, search
from bisectkit.errors import BadInput
from bisectkit.model import VERDICTS
from bisectkit.pipeline.descent import decide_and_descend, descended
from bisectkit.pipeline.parts import RunParts

_PROG = ["git", "bisect-patched"]
_GIT = ["git", "bisect"]
#: ``git bisect start`` options that take a word, as bisectkit's start spells them.
_GIT_TERMS = {"--term-new": "--term-new", "--term-bad": "--term-new",
              "--term-old": "--term-old", "--term-good": "--term-old"}
#: ``git bisect start`` options with nothing to say to bisectkit: ``--no-checkout`` changes
#: where git tests, not which commits are marked (bisectkit always checks out).
_GIT_IGNORED = ("--no-checkout",)


def log_lines(b: RunParts) -> list[str]:
    """A log that ``replay`` accepts, in the format of ``git bisect log``."""
    s = b.session
    lines = [f"git bisect-patched {shlex.join(s.start_argv)}"]
    for v in s.verdicts:
        if v.source == "auto":
            # Conflict skips are recomputed on replay; keep them as comments.
            lines.append(f"# {b.term(v.verdict)}: [{v.commit}] {_subject(b, v.commit)} "
                         f"({safetext.one_line(v.reason)})")
            continue
        if v.source in ("check-stack", "confirm"):
            continue
        word: str = v.verdict
        if not s.terms.is_default:
            # Sides, not repro outcomes: unambiguous when replayed.
            word = {"good": "old", "bad": "new"}.get(v.verdict, v.verdict)
        lines.append(f"# {b.term(v.verdict)}: [{v.commit}] {_subject(b, v.commit)}")
        lines.append(f"git bisect-patched {word} {v.commit}")
    lines += [f"# --all-parents: bisected into merge [{m}] {_subject(b, m)}"
              for m in descended(b)]
    try:
        decision: Decision | None = decide_and_descend(b, search.named(s.params.search))
    except engine.ContradictoryVerdicts as exc:
        decision = None
        lines.append("# the verdicts contradict each other: "
                     f"{safetext.one_line(b.contradiction(exc))}")
    lines += _answer(b, decision)
    return lines


def _answer(b: RunParts, decision: Decision | None) -> list[str]:
    new = b.session.terms.new
    if isinstance(decision, Found):
        return [f"# first {new} commit: [{decision.first_bad}] "
                f"{_subject(b, decision.first_bad)}"]
    if isinstance(decision, Clear):
        last = decision.last_good
        return [f"# no {new} commit: the pin can move to "
                f"[{last}] {_subject(b, last)}" if last else f"# no {new} commit"]
    if isinstance(decision, Inconclusive):
        return ["# only skipped commits left to test", *(
            f"# possible first {new} commit: [{c}] {_subject(b, c)}"
            for c in decision.candidates)]
    return []


def _subject(b: RunParts, sha: str) -> str:
    return safetext.one_line(b.strategy.describe(sha).subject)


@dataclass(frozen=True)
class ReplayLog:
    """A log read back: the ``start`` words (with any pathspec) and the marks in order;
    ``git``: written by ``git bisect log`` (its start line says no strategy)."""

    start: list[str]
    pathspec: list[str]
    marks: list[list[str]]
    git: bool = False


def git_log_lines(b: RunParts) -> list[str]:
    """The session as ``git bisect log`` would write it (for ``git bisect replay`` in the
    repository whose commits are bisected): the range and the marks, in git's words."""
    s = b.session
    terms = [] if s.terms.is_default else ["--term-new", s.terms.new, "--term-old",
                                             s.terms.old]
    ends = [s.bad, *s.good] if not search.named(s.params.search).open_end else []
    paths = ["--", *s.pathspec] if s.pathspec else []
    lines = [f"git bisect start {shlex.join([*terms, *ends, *paths])}".rstrip()]
    for v in s.verdicts:
        if v.source in ("check-stack", "confirm"):
            continue
        word = "skip" if v.verdict == "skip" else b.term(v.verdict)
        lines += [f"# {word}: [{v.commit}] {_subject(b, v.commit)}",
                  f"git bisect {word} {v.commit}"]
    return lines + [line for line in _answer(b, _decided(b)) if line.startswith("# first")]


def _decided(b: RunParts) -> Decision | None:
    try:
        return decide_and_descend(b, search.named(b.session.params.search))
    except engine.ContradictoryVerdicts:
        return None


def _git_start(words: list[str], where: str) -> tuple[list[str], tuple[str, str]]:
    """``git bisect start``'s words as bisectkit's ``start`` words, and the terms (new,
    old) its marks use."""
    out, terms = ["start"], {"--term-new": "bad", "--term-old": "good"}
    it = iter(words[1:])
    for word in it:
        flag, eq, value = word.partition("=")
        if flag in _GIT_TERMS:
            value = value if eq else next(it, "")
            terms[_GIT_TERMS[flag]] = value
            out += [_GIT_TERMS[flag], value]
        elif word in _GIT_IGNORED:
            continue
        elif word == "--":
            out += [word, *it]
        elif word.startswith("-") and word != "--first-parent":
            raise BadInput(f"{where}: git bisect start option {word} has no meaning here")
        else:
            out.append(word)
    return out, (terms["--term-new"], terms["--term-old"])


def _git_mark(words: list[str], terms: tuple[str, str], where: str) -> list[str]:
    """A ``git bisect <term> SHA...`` line as a mark of a side (``new``/``old``/``skip``)."""
    new, old = terms
    side = {new: "new", old: "old", "skip": "skip"}.get(words[0])
    if side is None:
        raise BadInput(f"{where}: cannot replay 'git bisect {words[0]}' (the terms are "
                       f"{old}/{new})")
    return [side, *words[1:]]


def parse_log(text: str, path: Path) -> ReplayLog:
    """The commands of a log (bisectkit's, or ``git bisect log``'s); one line naming the
    file and line for anything else."""
    commands: list[list[str]] = []
    git: bool | None = None  # which program's log: told by its first command
    terms = ("bad", "good")
    # Lines end at a line feed only, as for git: a vertical tab, a form feed or U+2028 in
    # a line (str.splitlines would break there) never makes one line two commands.
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:  # an unbalanced quote
            raise BadInput(f"{path}:{n}: cannot read the line: {exc}: "
                           f"{safetext.one_line(line)}") from None
        this, words = _program(words)
        if this is None or (git is not None and this != git):
            raise BadInput(f"{path}:{n}: not a bisect-patched or git bisect command: {line}")
        git = this
        if (words[:1] == ["start"]) != (not commands):
            raise BadInput(f"{path}:{n}: the log must begin with exactly one 'start'")
        if git and not commands:
            words, terms = _git_start(words, f"{path}:{n}")
        elif git:
            words = _git_mark(words, terms, f"{path}:{n}")
        elif not words or words[0] not in ("start", "old", "new", *VERDICTS):
            raise BadInput(f"{path}:{n}: cannot replay: {line}")
        commands.append(words)
    if not commands:
        raise BadInput(f"{path}: no 'start' command in the log")
    start, pathspec = commands[0], []
    if "--" in start:
        cut = start.index("--")
        start, pathspec = start[:cut], start[cut + 1:]
    return ReplayLog(start, pathspec, commands[1:], git=bool(git))


def _program(words: list[str]) -> tuple[bool | None, list[str]]:
    """(whose command: True git bisect's, False bisect-patched's, None neither; its words
    after the program's name)."""
    if words[:2] == _PROG:
        return False, words[2:]
    if words[:1] == ["git-bisect-patched"]:
        return False, words[1:]
    if words[:2] == _GIT and len(words) > 2:
        return True, words[2:]
    if words[:1] == ["git-bisect"] and len(words) > 1:
        return True, words[1:]
    return None, words
