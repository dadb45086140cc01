"""Helpers the tests share: git worlds and the CLI, sessions, states, repros, histories."""
