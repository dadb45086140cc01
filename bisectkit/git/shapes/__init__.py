"""Clone shapes (partial, shallow, sparse): what each changes in what git can answer."""
