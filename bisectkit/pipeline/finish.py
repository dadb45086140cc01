"""The end of a run, told once: the one place a run's outputs are written.

The result and the trace go to ``bisectkit_session_finish``, whose built-in
implementations write ``--json``, ``--report`` and ``--trace``
(:mod:`bisectkit.ui.report.outputs`) before the user's plugins hear of it. Every
command that ends a run (``run`` in both programs, ``advance``) ends it here, so the
files are written by the same rules however the run ended.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from bisectkit.errors import PluginFailed
from bisectkit.pipeline.trace import Tracer
from bisectkit.plugin.facade import Hooks


def finish(hooks: Hooks, result: Mapping[str, Any], tracer: Tracer) -> None:
    """A run that answered: its outputs written, its plugins told. A plugin that raises
    stops the command (exit 3) once the outputs are written."""
    hooks.session_finish(result, tracer.document())


def finish_aborted(hooks: Hooks, result: Mapping[str, Any], tracer: Tracer) -> None:
    """A run that stopped: its outputs still written (``"status": "aborted"``), and a file
    that cannot be written (a full disk) said; a plugin that raises is not, since the run
    already stopped for a reason the user must see."""
    with contextlib.suppress(PluginFailed):
        hooks.session_finish(result, tracer.document())
