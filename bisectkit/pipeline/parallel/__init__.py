"""Several steps at once (``--jobs``, ``--scheduler``): loop, pools, workspaces, remote steps."""
