"""The Transformer family and the training tasks, built only from tinygradx\x27s public API."""
