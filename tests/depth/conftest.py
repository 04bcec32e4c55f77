"""Registers the depth sweeps for these tests."""

import otod.depth  # noqa: F401
