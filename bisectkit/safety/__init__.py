"""Nothing of the user's is lost: lock, journal and mover, recovery, signals, processes.

Also the atomic files and the check that the tree under test is still the one tested.
"""
