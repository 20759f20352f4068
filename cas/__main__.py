"""``python -m cas``: the same as the ``cas`` command."""

from cas.cli import main

if __name__ == "__main__":  # not when a worker process imports the parent's main module
    main()
