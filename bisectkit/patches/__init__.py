"""The local patch stack of a submodule: analysis, replay rules, patch ids, its upstream."""
