"""Shared fixtures (seeded random generators, the session's broker) and the suite's
Hypothesis profile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from kafka_broker import kafka_broker  # noqa: F401 - the session-wide real broker

# A busy machine (CI's two cores, shared) can take longer than Hypothesis's default 200 ms
# deadline for one example, or trip its too_slow health check while generating data: neither
# says anything about correctness, so the suite turns both off for every property test. Each
# test still sets its own max_examples.
settings.register_profile("anchorstream", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("anchorstream")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)
