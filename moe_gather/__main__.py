"""python -m moe_gather bench ...: see moe_gather.bench."""

import sys

from . import bench

if len(sys.argv) < 2 or sys.argv[1] != "bench":
    sys.exit("usage: python -m moe_gather bench [--help]")
bench.main(sys.argv[2:])
