"""What the import-only shims share: a name the released code imports at module level and, on the path a
RethinkMCTS run on HumanEval takes, never uses. Using one is an error, so a shim can never stand in silently."""


class Unused:
    """Stands for a class or function the released code imports but does not call on the recorded path."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} is shimmed for the RethinkMCTS conformance run, which never uses it")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unused(f"{self._name}.{attr}")
