"""``python -m bcast``: the ``bcast`` command."""

import sys

from .cli import main

sys.exit(main())
