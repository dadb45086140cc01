"""Running the build and the repro: the pty runner, built-in commands, classification.

pexpect is imported here only.
"""
