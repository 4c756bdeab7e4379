"""Shim: the released utils module imports pyplot (for plots not in the release) and never uses it."""
