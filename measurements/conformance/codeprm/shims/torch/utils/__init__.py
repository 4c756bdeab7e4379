"""Shim: the released modules import ``torch.utils.data``'s loaders and never use them."""
