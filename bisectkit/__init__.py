"""bisectkit: bisect regressions in projects that pin a patched submodule.

Plugin authors import from here: ``from bisectkit import hookimpl, Outcome, Step``.
"""

from bisectkit.model import VERSION as __version__
from bisectkit.model import Outcome, Step, hookimpl

__all__ = ["Outcome", "Step", "__version__", "hookimpl"]
