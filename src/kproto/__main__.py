"""``python -m kproto ...``: the ``kproto`` command line (:mod:`kproto.cli`)."""

from __future__ import annotations

import sys

from kproto.cli import main

if __name__ == "__main__":
    sys.exit(main())
