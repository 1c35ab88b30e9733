"""``python -m phi.cli`` — the same as the ``phi`` command (SPEC §15)."""

import sys

from .main import main

sys.exit(main())
