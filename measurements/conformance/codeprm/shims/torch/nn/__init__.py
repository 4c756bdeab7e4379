"""Shim: ``torch.nn`` is imported by the trained PRM's modules (prm/), never used on the recorded path."""

from _unused import Unused


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return Unused(f"torch.nn.{name}")
