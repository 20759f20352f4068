"""``python -m cas``: the same as the ``cas`` command."""

from cas.cli import main

main()
