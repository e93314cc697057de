"""The fixtures every conformance folder shares, from tests/conformance_fixtures.py: the OpInfo database, float32
samples only unless a test is marked ``bfloat16``, a store of the test's own, the cpu target."""

from conformance_fixtures import cpu, db, float32_only, store  # noqa: F401
