"""``python -m phi.cli`` — the same as the ``phi`` command."""

import sys

from .main import main

sys.exit(main())
