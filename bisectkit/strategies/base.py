"""TEMPORARY."""
from bisectkit.strategy import Prepared, Strategy

__all__ = ["Prepared", "Strategy"]
