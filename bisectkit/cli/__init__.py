"""The command line: argv grammar, option types, and argv translated to typed requests.

argparse is imported here and in :mod:`bisectkit.commands` only.
"""
