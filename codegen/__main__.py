"""``python -m codegen [fetch|generate|check]``: stage inputs, generate, or check drift.

- ``fetch``: fill ``schema/`` from ../shared/kafka-schema (or download), sha256-checked.
- ``generate`` (default): fetch, then write ``src/kproto/{schema/,index.py,errors.py}``.
- ``check``: regenerate in memory and exit 1 if the committed output differs.
"""

from __future__ import annotations

import argparse
import sys
import time

from codegen import emit, sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument(
        "command", nargs="?", default="generate", choices=["fetch", "generate", "check"]
    )
    parser.add_argument(
        "--jobs", type=int, default=0, help="black workers (0: one per core)"
    )
    args = parser.parse_args(argv)
    try:
        sources.stage()
        if args.command == "fetch":
            return 0
        start = time.perf_counter()
        messages = sources.load_messages()
        errors = emit.load_errors(sources.SCHEMA_DIR / emit.ERRORS_FILE)
        files = emit.render(messages, errors, jobs=args.jobs)
    except (sources.SourceError, ValueError) as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 2
    took = time.perf_counter() - start
    if args.command == "check":
        diffs = emit.check(files)
        for line in diffs[:50]:
            print(line)
        if diffs:
            print(
                f"codegen: {len(diffs)} generated file(s) out of date; run `make build-schema`",
                file=sys.stderr,
            )
            return 1
        print(f"codegen: {len(files)} generated files up to date ({took:.1f} s)")
        return 0
    written, deleted = emit.write(files)
    print(
        f"codegen: {len(messages)} messages, {len(files)} files "
        f"({written} written, {deleted} deleted) in {took:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
