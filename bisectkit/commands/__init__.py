"""One module per command (``registry`` lists them), and the helpers several commands share."""
