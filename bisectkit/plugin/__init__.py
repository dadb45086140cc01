"""Plugins: the hook specifications, the manager that loads them, the typed facade."""
