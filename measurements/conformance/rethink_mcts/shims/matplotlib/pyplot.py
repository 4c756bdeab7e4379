"""Shim: imported as ``plt`` by the released utils module, never used."""
