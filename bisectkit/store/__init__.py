"""What lives in ``.git/bisectkit``: session, waiting state, verdict cache and key, logs."""
