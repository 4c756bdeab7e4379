"""Shim: imported by the released utils module, never used."""

from _unused import Unused

TSNE = Unused("sklearn.manifold.TSNE")
