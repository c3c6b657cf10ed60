"""Fixtures of the calendar tests on a pool: ``clock`` (a FakeClock) and ``make_pool``
(pools closed and checked at teardown)."""

from __future__ import annotations

from support.pool import clock_fixture, make_pool_fixture  # noqa: F401  (fixtures)
