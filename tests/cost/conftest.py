"""Shared fixtures of the cost tests: small networks whose programs compile in well under a second."""

import pytest

from otod.cost import models as M


@pytest.fixture(scope="session")
def small_mlp():
    return M.mlp((784, 512, 10))


@pytest.fixture(scope="session")
def tiny_mlp():
    return M.mlp((32, 16, 10))
