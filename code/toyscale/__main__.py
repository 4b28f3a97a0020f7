"""`python -m toyscale`: see toyscale.cli."""

import sys

from .cli import main

sys.exit(main())
