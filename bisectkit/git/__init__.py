"""Everything that talks to git: one ``Repo`` and its parts, the git CLI, the in-memory merge.

pygit2 is imported here only; :mod:`bisectkit.git.shapes` holds what each clone shape
(partial, shallow, sparse) changes.
"""
