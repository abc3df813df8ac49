"""Shared test setup: hypothesis profiles (ci: few examples, no database; dev; exhaustive)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=8,
    # Deterministic through the seed that `make test` passes (--hypothesis-seed=0),
    # not derandomize=True: with that, hypothesis 6.170 nests the settings of a
    # parametrized test once per parameter and hits the recursion limit after ~950.
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile("exhaustive", max_examples=500, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)
