"""``python -m kevolve``: the CLI, for environments where the ``kevolve`` script is not on PATH."""

import sys

from kevolve.cli import main

sys.exit(main())
