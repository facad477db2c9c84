"""The Transformer family and the training tasks, built only from tinygradx's public API."""
