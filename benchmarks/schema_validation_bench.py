"""What broker-side schema validation adds to the validation of a produced batch.

``python -m benchmarks.schema_validation_bench [--records N] [--repeat R]``: one
batch of N records (55-byte values framed with one schema id, null keys),
uncompressed and lz4, through :func:`kproto.broker.log_validator.validate_batches`
with ``confluent.value.schema.validation`` off, on, and on for keys and values
(the registry lookup, once per distinct id, is not included). Prints ms per batch
and records/s (best of R). Run with ``KPROTO_NO_EXTENSIONS=1`` for the pure-Python
path. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import struct
import timeit


def main(argv: list[str] | None = None) -> int:
    from kproto.broker.log_validator import LogPolicy, validate_batches
    from kproto.records import Compression, encode_batch

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    n = args.records
    value = struct.pack(">bI", 0, 1) + b"x" * 50
    policies = {
        "off": LogPolicy(),
        "value": LogPolicy(value_schema_ids=True),
        "key+value": LogPolicy(key_schema_ids=True, value_schema_ids=True),
    }
    for compression in (Compression.NONE, Compression.LZ4):
        data = encode_batch([(None, value)] * n, compression=compression)
        for name, policy in policies.items():
            number = 20
            best = min(
                timeit.repeat(
                    lambda data=data, policy=policy: validate_batches(data, policy),
                    number=number,
                    repeat=args.repeat,
                )
            )
            per_batch = best / number
            print(
                f"{compression.name.lower():5} validation {name:9} "
                f"{per_batch * 1e3:8.3f} ms per batch  {n / per_batch / 1e6:7.2f} M records/s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
