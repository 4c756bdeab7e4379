"""``python -m codeforest.cli``: the ``codeforest`` command."""

import sys

from codeforest.cli import main

sys.exit(main())
