"""A tour of kproto against librdkafka's in-process mock cluster.

``python -m demo [OUT_DIR]`` (``make demo``) starts a 3-broker mock cluster and runs
:data:`demo.sections.SECTIONS` with a :class:`kproto.client.Client`: ApiVersions,
Metadata, FindCoordinator, Produce per codec, ListOffsets, Fetch, a group join, and
log segments written to ``OUT_DIR/segments`` (``demo-out``); then
:func:`demo.broker.broker_step` runs confluent-kafka clients against kproto's own
broker (data in ``OUT_DIR/broker-data``), and :mod:`demo.spark` reads both.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from kproto.client import Client

from .broker import broker_step
from .cluster import MOCK_VERSION_CAPS, StrayByteNote, mock_cluster
from .sections import SECTIONS, Tour
from .spark import spark_step
from .tables import Printer


def run_demo(out_dir: str | os.PathLike[str], *, out: IO[str] = sys.stdout) -> Path:
    """Run the sections against a fresh mock cluster; return ``out_dir/segments``."""
    p, segments, started = Printer(out), Path(out_dir) / "segments", time.monotonic()
    note, logger = StrayByteNote(), logging.getLogger("kproto.connection")
    logger.addFilter(note)
    try:
        with mock_cluster(3) as brokers:
            servers = ",".join(f"{host}:{port}" for host, port in brokers.values())
            with Client(servers, version_caps=MOCK_VERSION_CAPS) as client:
                tour = Tour(p, client, brokers, segments)
                for section in SECTIONS:
                    section(tour)
    finally:
        logger.removeFilter(note)
    p.line(
        f"\nmock cluster stopped; done in {time.monotonic() - started:.1f} s"
        f" ({note.count} stray Metadata bytes ignored)"
    )
    return segments


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m demo [OUT_DIR] [--master URL] [--no-spark]``."""
    parser = argparse.ArgumentParser(
        "python -m demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out_dir", nargs="?", default="demo-out", help="(demo-out)")
    parser.add_argument("--master", default="local[*]", help="Spark master URL")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark step")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="  (%(name)s: %(message)s)")
    segments = run_demo(args.out_dir)
    broker_data = broker_step(Path(args.out_dir))
    if not args.no_spark:
        spark_step(segments, broker_data, master=args.master)
    return 0
