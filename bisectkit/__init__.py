"""bisectkit: bisect regressions in projects that pin a patched submodule.

Plugin authors import from here: ``from bisectkit import hookimpl, Outcome, Step``.
"""

from bisectkit.hookspecs import hookimpl
from bisectkit.runner import Outcome
from bisectkit.step import Step

__version__ = "0.1.0"

__all__ = ["Outcome", "Step", "__version__", "hookimpl"]
