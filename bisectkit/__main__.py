"""``python -m bisectkit`` is ``bisectkit``."""

from bisectkit.cli import main

raise SystemExit(main())
