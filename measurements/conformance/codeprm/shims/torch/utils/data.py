"""Shim: the released Processor and models import these and never use them."""

from _unused import Unused

DataLoader = Unused("torch.utils.data.DataLoader")
SequentialSampler = Unused("torch.utils.data.SequentialSampler")
