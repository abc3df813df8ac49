"""kproto's benchmarks; run with ``python -m benchmarks`` (``make bench``)."""
