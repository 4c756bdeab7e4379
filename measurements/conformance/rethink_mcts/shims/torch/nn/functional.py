"""Shim: imported as ``F`` by the released utils module, never used."""
