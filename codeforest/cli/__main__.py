"""``python -m codeforest.cli``: the ``codeforest`` command."""

import sys

from codeforest.cli import main

if __name__ == "__main__":
    sys.exit(main())
