"""Shim: the released run.py imports Accelerator and never uses it."""

from _unused import Unused

Accelerator = Unused("accelerate.Accelerator")
