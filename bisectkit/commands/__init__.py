"""The commands behind ``bisectkit`` and ``git bisect-patched`` (the CLI maps them)."""
