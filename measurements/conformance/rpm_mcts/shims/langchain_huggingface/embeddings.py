"""Shim: ``HuggingFaceEmbeddings`` as codeforest's ``WordLlamaEmbeddings`` (see this package's ``__init__``).

codeforest is not installed in the released code's environment (its own venv): ``$CONFORMANCE_CODEFOREST`` (JSON,
written by record.sh from codeforest's own interpreter) names the folders of the packages ``codeforest`` and
``codeforest.tools``; both ``__init__`` files are light (no LangGraph, no model client), and
``codeforest/tools/knowledge.py`` needs only numpy, langchain-core and wordllama, which the venv has."""

import importlib.util
import json
import os
import sys


def _load_package(name: str, folder: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


try:
    from codeforest.tools.knowledge import WordLlamaEmbeddings
except ImportError:
    _folders = json.loads(os.environ["CONFORMANCE_CODEFOREST"])
    _load_package("codeforest", _folders["codeforest"])
    _load_package("codeforest.tools", _folders["codeforest.tools"])
    from codeforest.tools.knowledge import WordLlamaEmbeddings

_announced = False


class HuggingFaceEmbeddings(WordLlamaEmbeddings):
    """What the released code asks for, served by WordLlama."""

    def __init__(self, model_name: str = "", model_kwargs: dict | None = None, encode_kwargs: dict | None = None,
                 **kwargs):
        global _announced
        super().__init__()
        self.requested = model_name
        if not _announced:
            print(f"[conformance shim] embeddings: {WordLlamaEmbeddings.name} (codeforest) in place of "
                  f"{model_name or 'a Hugging Face model'}", file=sys.stderr)
            _announced = True
