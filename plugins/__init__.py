"""Plugins bundled with bisectkit, loaded by name: ``-p iree_devices``, ``-p flaky``,
``-p cmake_ninja``.

Installed as the package ``bisectkit_plugins``; each module is an ordinary
plugin (module-level ``bisectkit_*`` hook implementations) and doubles as an
example of how to write one.
"""
