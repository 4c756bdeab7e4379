"""Shim: the released utils module imports TSNE (for plots not in the release) and never uses it."""
