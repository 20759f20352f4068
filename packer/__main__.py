"""``python -m packer [ARGS]``: the same as ``cas pack [ARGS]`` (a surface, like ``cas``)."""

import sys

from cas.__main__ import run

if __name__ == "__main__":
    sys.argv[1:1] = ["pack"]
    run()
