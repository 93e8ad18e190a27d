"""``python -m daemon`` is the same as the ``anchorstream`` command."""

from daemon.cli import entry

entry()
