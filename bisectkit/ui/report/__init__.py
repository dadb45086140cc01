"""A run's output formats (``--json``, ``--report``, ``--trace``) and its paste-ready reports.

``outputs`` holds the formats, each a built-in ``bisectkit_session_finish`` plugin.

``render_markdown`` writes a report for a GitHub issue or a chat: the range
searched, the culprit, what the patch stack (or the submodule moves) did there
and just before, the first error lines of its logs, the local patches that stop
applying in the range, the skipped and flagged steps, the follow-up commands
and the command that reproduces the run. ``render_terminal`` is the same in a
few plain lines. The renderers are pure: they read step log files, nothing else.

The modules, from the words up: ``text`` (escaping, error lines, the result's
terms), ``links`` (which address a commit links to), ``logs`` (the evidence
from a step log), ``sections`` (tables and lists), then the two renderers,
``markdown`` and ``terminal``, and ``outputs``, the formats that write them.
"""

from bisectkit.ui.report.links import Links, commit_link
from bisectkit.ui.report.markdown import render_markdown
from bisectkit.ui.report.terminal import render_terminal
from bisectkit.ui.report.text import ERROR_MARKERS, MAX_LINE, MAX_ROWS, Result, error_lines

__all__ = ["ERROR_MARKERS", "MAX_LINE", "MAX_ROWS", "Links", "Result", "commit_link",
           "error_lines", "render_markdown", "render_terminal"]
