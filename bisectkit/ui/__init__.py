"""What the user sees: the console, the live panel, observers, and the report formats.

rich is imported here only.
"""
