"""``kproto broker``: run an in-process cluster in the foreground until Ctrl-C.

kproto broker [--nodes N] [--port P] [--data-dir DIR] [--partitions N] [--log-requests]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parsers", "run_broker"]


def add_parsers(sub: Any) -> None:
    """Add the ``broker`` subcommand to the ``kproto`` parser's subparsers."""
    p = sub.add_parser(
        "broker",
        help="run a kproto broker cluster on 127.0.0.1 in the foreground",
        description="Run N broker nodes on 127.0.0.1 until Ctrl-C (SIGINT) or SIGTERM; "
        "prints the bootstrap servers on stdout once listening.",
    )
    p.add_argument("--nodes", type=int, default=1, help="number of nodes (default 1)")
    p.add_argument(
        "--port",
        type=int,
        default=0,
        help="first node's port (default: any free); node i gets P+i",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="log directory (default: a temporary one, removed on exit)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=1,
        help="partitions of auto-created topics (default 1)",
    )
    p.add_argument(
        "--no-auto-create",
        action="store_true",
        help="do not create unknown topics on Metadata",
    )
    p.add_argument(
        "--log-requests", action="store_true", help="log every request on stderr"
    )
    p.set_defaults(func=run_broker)


def run_broker(args: argparse.Namespace) -> int:
    """Run the cluster until SIGINT/SIGTERM; return 0 after a clean stop."""
    from kproto.broker.cluster import Cluster

    logging.basicConfig(
        level=logging.INFO if args.log_requests else logging.WARNING, stream=sys.stderr
    )
    if args.nodes < 1:
        print("kproto: error: --nodes must be at least 1", file=sys.stderr)
        return 2

    async def main() -> None:
        cluster = Cluster(
            nodes=args.nodes,
            data_dir=args.data_dir,
            auto_create_topics=not args.no_auto_create,
            num_partitions=args.partitions,
            port=args.port,
            log_requests=args.log_requests,
            request_log_size=0,  # nobody reads cluster.requests here: keep memory flat
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        async with cluster:
            print(cluster.bootstrap_servers, flush=True)
            await stop.wait()

    asyncio.run(main())
    return 0
