"""Domain errors and the one place that maps them to exit codes."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar


class ExitCode(IntEnum):
    """The exit status of every bisectkit command (documented in the README and the man
    pages); a stop signal N exits 128+N instead."""

    #: The first bad commit was found (advance: where the pin can go is known); any other
    #: command succeeded.
    FOUND = 0
    #: Only skipped commits are left; the possible first bad commits are listed.
    INCONCLUSIVE = 1
    #: Bad input: one line on stderr (after the command's usage line, for a command line
    #: that does not parse), nothing touched.
    USAGE = 2
    #: The run had to stop (the repro asked to, a plugin raised, the tree was moved, ...).
    ABORTED = 3
    #: A git operation failed after the session started, or the disk is full or read-only.
    GIT_FAILURE = 4
    #: ``--verify-range``: an end does not test as claimed.
    RANGE_NOT_VERIFIED = 5
    #: An unexpected exception (a bug in bisectkit or in a plugin); traceback on stderr.
    INTERNAL = 70
    #: Ctrl-C (SIGINT, 128+2).
    INTERRUPTED = 130


_E = TypeVar("_E", bound="BisectkitError")


class BisectkitError(Exception):
    """Base class: a failure the user can act on, printed as one line."""

    exit_code: int = ExitCode.USAGE

    def reworded(self: _E, message: str) -> _E:
        """The same error (class, exit code, attributes) saying ``message`` instead: to add
        what the command had done when it failed. (Subclasses' constructors differ.)"""
        other = type(self).__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.args = (message,)
        return other


class BadInput(BisectkitError):
    """The command line or the repositories make the request impossible; nothing was touched."""


class GitFailure(BisectkitError):
    """A git operation failed mid-session (say, a checkout blocked by a local edit).

    Unlike :class:`BadInput` something may already have changed: the session
    is kept and says where it stands.
    """

    exit_code = ExitCode.GIT_FAILURE


class WriteFailed(BisectkitError):
    """A file bisectkit writes (its state in the git dir, a step log, an output) could not
    be written: a full disk, a read-only or immutable folder, a file size limit.

    Exit 4 once a session has started (its journal is kept: ``reset`` finishes once the
    machine is fixed); exit 2 when nothing had moved yet (``started`` False).
    """

    def __init__(self, path: object, cause: OSError, started: bool = True) -> None:
        reason = cause.strerror or str(cause)
        then = "run the command again" + (" or 'git bisect-patched reset'" if started else "")
        super().__init__(f"cannot write {path}: {reason}; free the space or fix the file "
                         f"system or permissions, then {then}")
        self.exit_code = ExitCode.GIT_FAILURE if started else ExitCode.USAGE
        self.path = str(path)
        self.cause = cause


class Aborted(BisectkitError):
    """The repro asked to stop (exit >= 128 or killed by a signal)."""

    exit_code = ExitCode.ABORTED


class MachineSkips(Aborted):
    """Too many consecutive steps were skipped for the machine's sake (``--max-env-skips``)."""

    def __init__(self, streak: int, last_reason: str) -> None:
        super().__init__(f"stopped after {streak} consecutive steps skipped for the machine, "
                         f"not the commit (last: {last_reason}); fix the machine or the "
                         "command, or raise --max-env-skips")


class SkipsInARow(Aborted):
    """Too many consecutive steps were skipped for the same reason (``--max-skips``): the
    candidates cannot be tested as asked (a repro that always exits 125)."""

    def __init__(self, streak: int, kind: str) -> None:
        super().__init__(f"{streak} steps in a row were skipped ({kind}): these candidates "
                         "cannot be tested as asked; fix the build or the repro and run "
                         "again, or give --max-skips 0 to go on")


class NotEnumerable(Aborted):
    """``bisectkit actions``: the compiler's actions cannot be numbered for sure (the two
    enumerations differ, or the counter counted nothing), so no action is named (exit 3)."""


class RangeNotVerified(BisectkitError):
    """``--verify-range``: the good end is not good, or the bad end is not bad."""

    exit_code = ExitCode.RANGE_NOT_VERIFIED


class PluginFailed(Aborted):
    """A plugin's hook raised: one line naming the plugin, the hook and the exception.

    The traceback is kept in :attr:`traceback_text` (written to the step log,
    named by ``log``); the bisection stops (exit 3) with everything restored.
    """

    def __init__(self, plugin: str, hook: str, cause: BaseException, traceback_text: str,
                 log: str | None = None) -> None:
        where = f" (traceback in {log})" if log else ""
        super().__init__(f"plugin '{plugin}' raised in {hook}: "
                         f"{type(cause).__name__}: {cause}{where}")
        self.plugin = plugin
        self.hook = hook
        self.cause = cause
        self.traceback_text = traceback_text


class TreeMoved(Aborted):
    """A repository of a step no longer held what it held when the step began, after the
    build or the repro, or moved meanwhile and came back (another process moved or edited
    it): the step's outcome is no verdict (exit 3)."""


class InfrastructureFailed(Aborted):
    """The machinery that runs steps failed (a workspace cannot be made, a worker's replay
    disagrees, a cluster keeps losing the task): never a verdict on a commit (exit 3)."""


class Cancelled(Exception):
    """A step in flight was cancelled (its verdict no longer matters, or the run stops);
    its process group was killed. Never a verdict."""
