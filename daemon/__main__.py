"""``python -m daemon`` is the same as the ``anchorstream`` command."""

import sys

from daemon.cli import main

sys.exit(main())
