"""``python -m tilec --version``: what this build of tilec is (as ``tilec --version``)."""

import sys

from . import build_info


def main(argv):
    if argv in (["--version"], ["-V"]):
        print(build_info()["text"])
        return 0
    print("usage: python -m tilec --version", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
