"""python -m moe_gather {bench,accuracy} ...: the benchmark table (moe_gather.bench) and the accuracy anchors
(moe_gather.accuracy)."""

import sys

from . import accuracy, bench

COMMANDS = {"bench": bench.main, "accuracy": accuracy.main}
USAGE = "usage: python -m moe_gather {bench,accuracy} [--help]"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{USAGE}\n\n  bench     {bench.__doc__.splitlines()[0]}\n  accuracy  {accuracy.__doc__.splitlines()[0]}")
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"{USAGE}\nunknown command {argv[0]!r}", file=sys.stderr)
        return 2
    COMMANDS[argv[0]](argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
