"""Shared fixtures: seeded random generators and planted topic models."""

from __future__ import annotations

import numpy as np
import pytest
from kafka_broker import kafka_broker  # noqa: F401 - the session-wide real broker


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)
