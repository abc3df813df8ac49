"""Run every benchmark: ``python -m benchmarks``.

Runs :mod:`benchmarks.serial_bench`, then :mod:`benchmarks.records_bench` when that
module exists.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys


def main() -> int:
    from benchmarks import serial_bench

    status = serial_bench.main() or 0
    if importlib.util.find_spec("benchmarks.records_bench") is not None:
        print()
        records_bench = importlib.import_module("benchmarks.records_bench")
        status = (records_bench.main() or 0) or status
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
