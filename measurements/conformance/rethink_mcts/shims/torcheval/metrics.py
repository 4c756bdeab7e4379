"""Shim: the released modules import these metrics and never use them."""

from _unused import Unused

HitRate = Unused("torcheval.metrics.HitRate")
ReciprocalRank = Unused("torcheval.metrics.ReciprocalRank")
