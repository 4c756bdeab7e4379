"""Shim: what the released CodePRM's GVR-MCTS path calls of torch, which is no tensor arithmetic at all:
``no_grad()`` around its chat calls (ChatModels.GPT35), ``device`` and ``cuda.is_available()`` (False: run.py's
``args.device``, which only an unused local model reads), ``set_num_threads`` (run.py's ``__main__``) and, for
``--repeat_id`` 2 or 3 (not the default), the seeds of ``seed_everything``. Everything else is ``Unused``: the
search keeps token ids in lists (tiktoken's), and only the token-level search, the local models and the trained PRM
hold tensors. PyPI's Linux torch is the CUDA build, gigabytes of NVIDIA libraries, for none of it."""

import contextlib
import types

from _unused import Unused


class device(str):  # noqa: N801 - torch's name
    @property
    def type(self):
        return str(self).split(":")[0]


class cuda:  # noqa: N801 - torch's name
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def manual_seed(seed):
        pass

    @staticmethod
    def manual_seed_all(seed):
        pass


backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(deterministic=False, benchmark=False))


def set_num_threads(n):
    pass


def manual_seed(seed):
    pass


def no_grad():
    return contextlib.nullcontext()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return Unused(f"torch.{name}")
