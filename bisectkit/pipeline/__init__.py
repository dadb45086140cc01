"""The one owner of a run: lifecycle (lock, journal, restore), steps, testing, verification.

- :mod:`.lifecycle`: :class:`~.lifecycle.Run`, lock -> journal -> session -> restore.
- :mod:`.bisection`: :class:`~.bisection.Bisection`, advance -> test -> record, marks.
- :mod:`.testing`: build, repro, classify one candidate (exit 126/127 double-checked).
- :mod:`.verify`: the checks an answer rests on (ends, stack, boundary).
- :mod:`.parallel`: :class:`~.parallel.ParallelBisection`, k steps at once (``--jobs``,
  ``--scheduler``); :mod:`.remote`: a step as a recipe, its result checked;
  :mod:`.pools`: where they run (threads over local workspaces, or a Dask cluster);
  :mod:`.cluster`: a Dask cluster's faults (lost workers, no worker, lost scheduler).

Nothing here prints: observers see everything through the hooks.
"""
