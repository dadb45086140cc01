"""The one owner of a run: lifecycle (lock, journal, restore), steps, testing, verification.

- :mod:`.lifecycle`: :class:`~.lifecycle.Run`, lock -> journal -> session -> restore.
- :mod:`.bisection`: :class:`~.bisection.Bisection`, advance -> test -> record, marks.
- :mod:`.testing`: build, repro, classify one candidate (exit 126/127 double-checked).
- :mod:`.verify`: the checks an answer rests on (ends, stack, boundary).

Nothing here prints: observers see everything through the hooks.
"""
