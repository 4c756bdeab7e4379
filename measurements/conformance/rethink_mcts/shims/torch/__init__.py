"""Shim: the released RethinkMCTS keeps token ids (from tiktoken) in torch tensors between its functions and reads
them back with ``tolist()``; it does no arithmetic on them, and it runs on the CPU. This holds the same ids in Python
lists with the calls it makes: ``tensor``/``LongTensor``, ``unsqueeze(0)``, ``to(device)``, indexing, ``len`` and
``tolist``, and ``device``, ``cuda.is_available`` (False), ``set_num_threads`` and ``no_grad``. PyPI's Linux torch
is the CUDA build (gigabytes of NVIDIA libraries) for a job a list does."""

import contextlib
import copy


class Tensor:
    def __init__(self, data):
        self._data = data

    def unsqueeze(self, dim):
        if dim != 0:
            raise NotImplementedError("the shim's unsqueeze adds the leading dimension only")
        return Tensor([self._data])

    def to(self, *args, **kwargs):
        return self

    def tolist(self):
        return copy.deepcopy(self._data)

    def __getitem__(self, index):
        item = self._data[index]
        return Tensor(item) if isinstance(item, list) else item

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"tensor({self._data!r})"


def tensor(data, *args, **kwargs):
    return Tensor(copy.deepcopy(list(data)))


def LongTensor(data):  # noqa: N802 - torch's name
    return Tensor([int(x) for x in data])


class device(str):  # noqa: N801 - torch's name
    @property
    def type(self):
        return str(self).split(":")[0]


class cuda:  # noqa: N801 - torch's name
    @staticmethod
    def is_available():
        return False


def set_num_threads(n):
    pass


def no_grad():
    return contextlib.nullcontext()
