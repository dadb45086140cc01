"""``python -m bisectkit`` is ``bisectkit``."""

from bisectkit.app import main

raise SystemExit(main())
