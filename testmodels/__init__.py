"""Scripts that build graphlint's test and example models (no downloads; random weights)."""
