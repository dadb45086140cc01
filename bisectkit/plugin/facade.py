"""The typed facade over the plugin manager: one method per hook (as tox 4 does).

Everything that calls a hook calls it here, so a plugin that raises is
reported the same way from every hook (:class:`~bisectkit.errors.PluginFailed`:
one line naming the plugin and the hook, exit 3), and the hook's signature is
checked by mypy at every call site.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, cast

import pluggy

from bisectkit.errors import BisectkitError, PluginFailed, WriteFailed
from bisectkit.model import (
    CommitInfo,
    Config,
    OptionGroup,
    Outcome,
    Step,
    StepRecord,
    Terms,
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


class Hooks:
    """Calls bisectkit's hooks on one plugin manager."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm

    def addoption(self, group: OptionGroup) -> None:
        self._call("bisectkit_addoption", historic=True, parser=group)

    def configure(self, config: Config) -> None:
        self._call("bisectkit_configure", config=config)

    def step_start(self, step: Step) -> None:
        self._call("bisectkit_step_start", step=step)

    def build(self, step: Step) -> Outcome | None:
        return timed(step, cast(Outcome | None, self._call("bisectkit_build", step=step)))

    def repro(self, step: Step) -> Outcome | None:
        return timed(step, cast(Outcome | None, self._call("bisectkit_repro", step=step)))

    def classify(self, step: Step, outcome: Outcome) -> Verdict | None:
        timed(step, outcome)  # a repro that ran on a worker is classified here
        return cast(Verdict | None, self._call("bisectkit_classify", step=step, outcome=outcome))

    def step_done(self, step: Step, verdict: Verdict) -> None:
        self._call("bisectkit_step_done", step=step, verdict=verdict)

    def session_finish(self, result: Mapping[str, Any], trace: TraceJSON) -> None:
        # The document holds its strategy's own fields beside ResultJSON's (a TypedDict
        # cannot say "and more"): typed for the plugins that read it.
        kwargs: dict[str, Any] = {"result": cast(ResultJSON, result), "trace": trace}
        # The built-in output formats first, each whatever another's fate: one returns
        # a file it could not write (a full disk) rather than raise it, so it costs none
        # of the other files; the first is raised before the user's plugins hear of a
        # run whose files are not all there (exit 4, as for any state bisectkit writes).
        answers = self._call("bisectkit_session_finish", only_builtins=True, **kwargs)
        failed = [a for a in answers or () if isinstance(a, WriteFailed)]
        if failed:
            raise failed[0]
        self._call("bisectkit_session_finish", only_builtins=False, **kwargs)

    def phase(self, index: int, phase: str) -> None:
        self._call("bisectkit_phase", index=index, phase=phase)

    def run_done(self, steps: Sequence[StepRecord], terms: Terms) -> None:
        # Copies, as JSON: what a plugin does with them never reaches the session.
        self._call("bisectkit_run_done", steps=[cast(StepJSON, st.to_json()) for st in steps],
                   terms=TermsJSON(old=terms.old, new=terms.new))

    def candidate(self, index: int, info: CommitInfo, remaining: int, steps_left: int) -> None:
        self._call("bisectkit_candidate", index=index, info=info, remaining=remaining,
                   steps_left=steps_left)

    def prepared(self, index: int, details: StepDetails, files_written: int | None) -> None:
        self._call("bisectkit_prepared", index=index, details=details,
                   files_written=files_written)

    def message(self, text: str, kind: str = "info") -> None:
        self._call("bisectkit_message", text=text, kind=kind)

    def jobs(self, jobs: list[JobRow]) -> None:
        self._call("bisectkit_jobs", jobs=jobs)

    def runs_commands_itself(self) -> list[str]:
        """Plugins besides the built-in ones that implement ``bisectkit_build`` or
        ``bisectkit_repro`` (they run in this process, not on a parallel worker)."""
        impls = [*self.pm.hook.bisectkit_build.get_hookimpls(),
                 *self.pm.hook.bisectkit_repro.get_hookimpls()]
        return sorted({i.plugin_name for i in impls if i.plugin_name not in ("build", "repro")})

    def has_repro_plugin(self) -> bool:
        """Does a plugin besides the built-in one implement ``bisectkit_repro``?"""
        return any(impl.plugin_name != "repro"
                   for impl in self.pm.hook.bisectkit_repro.get_hookimpls())

    def _call(self, hook: str, *, historic: bool = False, only_builtins: bool | None = None,
              **kwargs: Any) -> Any:
        """Call ``hook``; an exception from a plugin's implementation becomes
        :class:`PluginFailed`. ``only_builtins``: True, only bisectkit's own
        implementations; False, only the others; None, all.

        A user's plugin that raises (``sys.exit()`` included) must not look like a
        bisectkit bug (exit 70 and a traceback) nor choose the exit code: the run
        stops with one line naming the plugin and the hook, and everything is
        restored. bisectkit's own errors pass through, and so do exceptions from
        bisectkit's built-in implementations (those are bugs).
        """
        caller = getattr(self.pm.hook, hook)
        if only_builtins is not None:
            left_out = [p for p in self.pm.get_plugins() if _is_builtin(p) != only_builtins]
            caller = self.pm.subset_hook_caller(hook, remove_plugins=left_out)
        try:
            if historic:  # bisectkit_addoption: later registrations get it too
                return caller.call_historic(kwargs=kwargs)
            return caller(**kwargs)
        except BisectkitError:
            raise
        except (Exception, SystemExit) as exc:
            # sys.exit() in a plugin is a plugin that raised too: let through, it would
            # replace the run's own end (an aborted run exiting 0, "found", in silence).
            culprit = _raising_impl(self.pm, exc)
            if culprit is None:
                raise
            name, where = culprit
            text = "".join(traceback.format_exception(exc))
            raise PluginFailed(name, where, exc, text) from exc


def _raising_impl(pm: pluggy.PluginManager, exc: BaseException) -> tuple[str, str] | None:
    """(plugin, hook) of the innermost hook implementation in ``exc``'s traceback.

    Innermost: a plugin that calls hooks itself (``-p flaky`` classifies each
    run) is not blamed for the plugin it called. ``None`` for a built-in.
    """
    owners: dict[object, tuple[str, str, object]] = {}
    for plugin in pm.get_plugins():
        for caller in pm.get_hookcallers(plugin) or []:
            for impl in caller.get_hookimpls():
                code = getattr(impl.function, "__code__", None)
                if code is not None:
                    owners[code] = (impl.plugin_name, caller.name, impl.plugin)
    found: tuple[str, str, object] | None = None
    tb = exc.__traceback__
    while tb is not None:
        found = owners.get(tb.tb_frame.f_code, found)
        tb = tb.tb_next
    if found is None or _is_builtin(found[2]):
        return None
    return found[0], found[1]


def _is_builtin(plugin: object) -> bool:
    module = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__module__
    return module == "bisectkit" or module.startswith("bisectkit.")


def timed(step: Step, outcome: Outcome | None) -> Outcome | None:
    """``outcome``, after marking ``step`` (:attr:`~bisectkit.model.Step.timed_out`) when it
    timed out: the verdict cache keeps no verdict of a step a timeout had a say in."""
    if outcome is not None and outcome.timed_out:
        step.timed_out = True
    return outcome
