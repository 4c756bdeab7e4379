"""What the import-only shims share: a name the released CodePRM imports at module level and, on the path its
GVR-MCTS search takes (``-m CodePRMMCTS`` on function problems, an OpenAI-compatible endpoint, the prompted LLM
verifier), never uses. Using one is an error, so a shim can never stand in silently."""

import sys
import types


class Unused:
    """Stands for a class or function the released code imports but does not call on the recorded path."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} is shimmed for the CodePRM conformance run, which never uses it")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unused(f"{self._name}.{attr}")


class UnusedModule(types.ModuleType):
    """A module whose every name is ``Unused`` (what ``from MODULE import NAME`` takes)."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unused(f"{self.__name__}.{attr}")


def install(modules: dict[str, str]) -> None:
    """Put an ``UnusedModule`` for each dotted name (and its parents) into ``sys.modules``; the value says why."""
    for name, why in modules.items():
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            dotted = ".".join(parts[:i])
            if dotted not in sys.modules:
                module = UnusedModule(dotted, why)
                module.__path__ = []  # a package, so its submodules import
                sys.modules[dotted] = module
                if i > 1:
                    setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], module)
