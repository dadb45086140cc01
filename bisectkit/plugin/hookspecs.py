"""Hook specifications: the one place bisectkit's plugin hooks are declared, by phase.

Implement them in a module or class with :data:`bisectkit.hookimpl` and load
it with ``-p NAME|PATH``, ``BISECTKIT_PLUGINS``, git config
``bisectkit.plugins`` or the ``bisectkit`` entry-point group. Plugins loaded
later are called first, so a user's plugin wins over the built-in ones; a
``firstresult`` hook stops at the first implementation that returns
something other than ``None``.

The order of the calls in one ``run`` (as pytest's hookspec writes it down):

1. Initialization: :func:`bisectkit_addoption` (when the parser is built),
   :func:`bisectkit_configure` (once the command line is parsed).
2. Each step: :func:`bisectkit_candidate` (before the candidate is made),
   :func:`bisectkit_prepared` (made, and checked out unless it needs no test),
   :func:`bisectkit_step_start`, :func:`bisectkit_phase` ``"build"``,
   :func:`bisectkit_build`, :func:`bisectkit_phase` ``"repro"``,
   :func:`bisectkit_repro`, :func:`bisectkit_classify`, then
   :func:`bisectkit_step_done` (also for a cached, skipped-unbuilt or marked
   verdict, without the calls between). A parallel run (``--jobs``,
   ``--scheduler``) calls the step hooks on the client as each step's result
   comes back, and :func:`bisectkit_jobs` while steps are in flight.
3. The end: :func:`bisectkit_run_done` (the steps are over, before the answer
   prints and the repositories are restored), then
   :func:`bisectkit_session_finish` (the result). The output formats (``--json``,
   ``--report``, ``--trace``) are built-in implementations of it that go first: a
   plugin that raises there never costs the user those files, and one file that
   cannot be written (a full disk) costs none of the others; it stops the command
   (exit 4) before the user's plugins are called.

:func:`bisectkit_message` may come at any time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bisectkit.model import hookspec

if TYPE_CHECKING:
    from bisectkit.model import (
        CommitInfo,
        Config,
        OptionGroup,
        Outcome,
        Step,
        Verdict,
    )
    from bisectkit.model.documents import (
        JobRow,
        ResultJSON,
        StepDetails,
        StepJSON,
        TermsJSON,
        TraceJSON,
    )


# -- Initialization --------------------------------------------------------------------

@hookspec(historic=True)
def bisectkit_addoption(parser: OptionGroup) -> None:
    """Add command-line options to ``run`` (both ``bisectkit run`` and ``git bisect-patched run``).

    :param parser: the plugins' option group; call ``parser.add_argument`` as with
        argparse.
        Options must come before the repro on the command line (or before
        ``--``), because plugins are found before the rest is parsed.

    Historic: a plugin loaded after the parser was built still gets called.
    """


@hookspec
def bisectkit_configure(config: Config) -> None:
    """Read options and set up, once the command line is parsed and before any step.

    :param config: ``config.option`` holds the parsed options (argparse
        namespace), ``config.pluginmanager`` the plugin manager,
        ``config.root`` the superproject root (or ``None``) and
        ``config.console`` the console to print to.
    """


# -- Each step -------------------------------------------------------------------------

@hookspec
def bisectkit_candidate(index: int, info: CommitInfo, remaining: int, steps_left: int) -> None:
    """Step ``index`` will test ``info`` (before it is materialised and checked out).

    :param index: the step number (1-based).
    :param info: the candidate commit.
    :param remaining: candidates still undecided, this one included.
    :param steps_left: roughly how many steps remain.
    """


@hookspec
def bisectkit_prepared(index: int, details: StepDetails, files_written: int | None) -> None:
    """Step ``index``'s candidate was materialised (and checked out, unless it needs no test).

    :param details: what the strategy did: ``patches`` (per-patch action) or
        ``submodules`` (moves), as in the JSON result.
    :param files_written: files the checkout wrote; ``None`` when nothing was
        checked out (a conflict skip or a cached verdict).
    """


@hookspec
def bisectkit_step_start(step: Step) -> None:
    """A candidate is checked out and about to be built and tested.

    :param step: the step under test; ``step.env`` is what the build and the
        repro will get.
    """


@hookspec
def bisectkit_phase(index: int, phase: str) -> None:
    """Step ``index`` enters ``phase``: ``"build"`` or ``"repro"`` (the checkout starts
    with :func:`bisectkit_candidate`); the live status shows it. ``"cancelled"``: a
    parallel step was stopped because its verdict could no longer change the answer
    (no verdict follows).

    :param index: the step number (1-based).
    :param phase: the phase's name.
    """


@hookspec(firstresult=True)
def bisectkit_build(step: Step) -> Outcome | None:
    """Build the checked-out candidate.

    :param step: the step under test.
    :returns: the build's :class:`~bisectkit.Outcome` (a failed outcome makes
        the step ``skip``), or ``None`` to leave it to the next
        implementation. The built-in one runs ``--build`` (returns ``None``
        when there is none: no build step).

    Stops at first non-None result.
    """


@hookspec(firstresult=True)
def bisectkit_repro(step: Step) -> Outcome | None:
    """Run the reproducer on the built candidate.

    :param step: the step under test.
    :returns: the repro's :class:`~bisectkit.Outcome`, or ``None`` to leave
        it to the next implementation. The built-in one runs the repro
        command; a plugin may replace it entirely, so no repro command is
        needed on the command line.

    Stops at first non-None result.
    """


@hookspec(firstresult=True)
def bisectkit_classify(step: Step, outcome: Outcome) -> Verdict | None:
    """Classify the repro's outcome at one step.

    :param step: the step under test; an implementation may set
        ``step.reason`` to explain its verdict, add ``step.flags`` (shown in
        the final report) and ``step.extra`` (kept in the step's JSON).
    :param outcome: exit status, signal, combined output, timeout flag and
        duration of the repro.
    :returns: ``"good"``, ``"bad"`` or ``"skip"``; ``None`` to let the next
        implementation decide. Built-ins, in call order: the ``--bad-if``,
        ``--skip-if``, ``--good-if`` rules and timeouts, then the exit
        status (``git bisect run``'s convention). When every implementation
        returns ``None`` (the exit-status rule does so for exit >= 128 and
        for signals) the bisection aborts.

    Stops at first non-None result.
    """


@hookspec
def bisectkit_step_done(step: Step, verdict: Verdict) -> None:
    """A verdict was recorded for a candidate (tested, cached, skipped unbuilt or marked).

    :param step: the step; ``step.record`` is its JSON record (commit,
        verdict, reason, source, patches or submodules, timings) and
        ``step.outputs`` the build and repro output, when they ran.
    :param verdict: ``"good"``, ``"bad"`` or ``"skip"``.
    """


# -- Parallel steps --------------------------------------------------------------------

@hookspec
def bisectkit_jobs(jobs: list[JobRow]) -> None:
    """The steps in flight of a parallel run (``--jobs``, ``--scheduler``), about twice a
    second while any runs, then once with an empty list.

    :param jobs: one row per step in flight: ``index``, ``commit``, ``subject``,
        ``phase`` (``queued``, ``checkout``, ``build``, ``repro``), ``where``,
        ``elapsed`` (seconds in that phase) and ``line`` (its last output line).
    """


# -- The end of a run ------------------------------------------------------------------

@hookspec
def bisectkit_run_done(steps: list[StepJSON], terms: TermsJSON) -> None:
    """A run's steps are over (it found, was inconclusive or aborted): before its answer
    prints and before the repositories are restored. The console prints the summary.

    :param steps: the session's step records (copies, as in the JSON result).
    :param terms: the words of the two sides (``old``, ``new``).
    """


@hookspec
def bisectkit_session_finish(result: ResultJSON, trace: TraceJSON) -> None:
    """A ``run`` ended (found, inconclusive or aborted; an ``advance`` once its pin
    moved): the one place a run's outputs are written. The built-in ``json-result``,
    ``markdown-report`` and ``chrome-trace`` plugins write ``--json``, ``--report`` and
    ``--trace`` here.

    :param result: the JSON result (as written by ``--json``): ``status``,
        ``first_bad``, ``candidates``, ``steps``...
    :param trace: the run's timeline as a Chrome trace document (what ``--trace``
        writes; recorded with or without ``--trace``).
    """


# -- Any time --------------------------------------------------------------------------

@hookspec
def bisectkit_message(text: str, kind: str) -> None:
    """A line for the user from the pipeline (it never prints itself).

    :param text: one line, plain text.
    :param kind: ``"progress"`` (what is being done now), ``"note"`` (a side
        remark), ``"warning"`` (something the user should act on) or ``"info"``.
    """
