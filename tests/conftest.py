"""Shared fixtures (seeded random generators, the session's broker, a separable corpus's
document statistics), the suite's Hypothesis profile and its ``integration`` marker."""

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


@pytest.fixture(scope="session")
def separable_patterns():
    """A separable planted model (200 words, 5 topics), 3000 documents drawn from it and their
    split statistic and RP sketch (Ding et al. 2014's statistics): ``(truth, split, sketch)``."""
    from anchorstream.stats import wordpatterns as wp
    from anchorstream.synthetic import planted_model, sample_documents

    truth = planted_model(200, 5, alpha=0.1, random_state=2)
    X, _ = sample_documents(truth, 3000, random_state=12)
    ids = np.arange(3000)
    return truth, wp.split_statistic(X, ids, seed=3), wp.rp_sketch(X, ids, 50 * 5, seed=3)


#: Modules whose every test starts processes: a broker, a daemon, crash-test writers.
INTEGRATION_MODULES = {"test_broker.py", "test_crash.py", "test_daemon.py",
                       "test_daemon_methods.py", "test_demo.py"}
#: Fixtures that start a broker or a browser: any test that uses them (directly or through
#: another fixture, like test_deploy.py's scrape of a running daemon) is an integration test.
INTEGRATION_FIXTURES = {"kafka_broker", "browser"}


def pytest_collection_modifyitems(config, items):
    """Mark the integration tests (``make test-fast`` leaves them out: ``-m "not integration
    and not slow"``)."""
    for item in items:
        if (item.path.name in INTEGRATION_MODULES
                or INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.integration)
