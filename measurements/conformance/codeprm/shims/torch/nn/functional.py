"""Shim: imported as ``F`` by the released utils module and prm/ring_attn_utils.py, never used."""

from _unused import Unused


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return Unused(f"torch.nn.functional.{name}")
