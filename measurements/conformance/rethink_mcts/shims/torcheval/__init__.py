"""Shim: the released modules import two torcheval metrics and never use them."""
