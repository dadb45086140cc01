"""Commit and tree ids: :class:`Sha`, and the one length they are shortened to for people."""

from __future__ import annotations

#: Hex digits of an id as bisectkit shows it (messages, reports, the console).
SHORT = 12


class Sha(str):
    """A commit or tree id: 40 hex digits from git, or as given where a user or a test
    abbreviated it (kept as given, never checked here).

    A plain ``str`` subclass, so JSON, dict keys, comparison, hashing, pygit2 and
    pickling see the same text as before; it adds only :attr:`short`. Slicing or
    joining one gives a plain ``str``.
    """

    __slots__ = ()

    @property
    def short(self) -> str:
        """The id as shown to people: its first :data:`SHORT` hex digits."""
        return short(self)


def short(sha: str) -> str:
    """An id held as a plain ``str`` (a JSON value, a plugin's) as shown to people."""
    return sha[:SHORT]
