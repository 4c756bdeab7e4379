"""Shim: imported (as ``torch.nn.functional``) by the released utils module, never used."""
