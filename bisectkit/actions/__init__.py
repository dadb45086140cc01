"""The third level: bisect inside one compiler run (``bisectkit actions``).

A compiler run is a sequence of numbered *actions*: LLVM pass executions (OptBisect,
``-opt-bisect-limit=N``), MLIR actions counted by the debug counter
(``--mlir-debug-counter=TAG-skip=0,TAG-count=N``), LLVM debug-counter queries
(``-debug-counter=NAME-skip=0,NAME-count=N``). Running only the first N of them is
"limit N"; the numbering is stable for that prefix only, so limits are the candidates
of an ordinary bisection (:mod:`bisectkit.engine`): limit 0 must be good, the total
bad, and the smallest bad limit N names action #N.

- :mod:`~bisectkit.actions.listing`: what the tools print (BISECT lines, counter
  tables, MLIR action logs, counter queries) read into numbered actions. Pure.
- :mod:`~bisectkit.actions.kinds`: each kind's flags (limit, enumeration) and reader.
- :mod:`~bisectkit.actions.tester`: one repro run at one limit, through the hooks.
- :mod:`~bisectkit.actions.search`: the procedure (enumerate twice, the ends, the
  bisection, probes) and its answer.
"""
