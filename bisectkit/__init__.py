"""bisectkit: bisect regressions in projects that pin a patched submodule.

The public API, for plugin authors; everything else in the package is internal
and may move between releases (the bundled plugins in ``plugins/`` use only
these names)::

    from bisectkit import hookimpl, Outcome, Step, Verdict, Config, BadInput, run_command

``hookimpl``
    Marks a hook implementation; the hooks are specified (and documented) in
    :mod:`bisectkit.plugin.hookspecs`; ``bisectkit plugins`` lists each loaded plugin's.
``Step``, ``Outcome``, ``Verdict``, ``VERDICTS``
    What the hooks get and return: the step under test, what a command did,
    ``"good"``/``"bad"``/``"skip"``.
``Sha``
    A commit or tree id (``step.commit``): a ``str`` whose ``.short`` is how
    bisectkit shows it.
``Config``, ``RunOptions``
    What ``bisectkit_configure`` gets: the parsed options and, for ``run``,
    ``config.run`` (the build command, the repro, ``timeout``, ``keep_output``...).
``BadInput``
    Raise it for an impossible option (in ``bisectkit_configure``): one line on
    stderr, exit 2, nothing touched.
``whole_number``
    An argparse ``type=`` for a plugin's numeric option
    (``type=whole_number(1)``: "must be 1 or more").
``run_command``
    Runs a command the way the built-in build and repro do: under a pty, its
    output streamed live and kept (bounded) for the classifiers, its whole
    process group killed on a timeout or Ctrl-C. To run like the built-in
    build step, pass the run's settings::

        run_command(argv, cwd=step.workdir, env=step.env, timeout=config.run.timeout,
                    echo=config.console.file, keep=config.run.keep_output)
"""

# The facade imports only the modules that define these names, none of which
# imports the facade: importing bisectkit stays cheap and acyclic.
from bisectkit.cli.argtypes import whole_number
from bisectkit.errors import BadInput
from bisectkit.execute.runner import run as run_command
from bisectkit.model import VERDICTS, Config, Outcome, RunOptions, Sha, Step, Verdict, hookimpl
from bisectkit.model import VERSION as __version__

__all__ = ["VERDICTS", "BadInput", "Config", "Outcome", "RunOptions", "Sha", "Step", "Verdict",
           "__version__", "hookimpl", "run_command", "whole_number"]
