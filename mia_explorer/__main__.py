"""``python -m mia_explorer ...``: the ``mia-explorer`` command."""
import sys

from mia_explorer.cli import main

sys.exit(main())
