"""``python -m codeforest.cli``: the ``codeforest`` command."""

from codeforest.cli import entry

if __name__ == "__main__":
    entry()
