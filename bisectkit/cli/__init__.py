"""The command line: argv grammar, option types, and argv translated to typed requests.

argparse is imported here, in :mod:`bisectkit.commands` (each command declares its
arguments) and in :mod:`bisectkit.app` only.
"""
