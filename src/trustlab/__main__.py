"""``python -m trustlab`` is the ``trustlab`` command."""

import sys

from trustlab.cli import main

sys.exit(main())
