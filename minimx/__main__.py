"""`python -m minimx` (or `minimx`): the command line; see `minimx.commands`."""
from __future__ import annotations

import sys

from .commands import main

if __name__ == "__main__":
    sys.exit(main())
