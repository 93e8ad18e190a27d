"""The daemon's configuration: the only reader of ``config.yaml`` and the environment.

:func:`load_config` reads a YAML file, applies environment overrides, validates every value and
returns a frozen :class:`Config` of per-section frozen pydantic models. The rest of the daemon
receives plain values from it and never looks at YAML or ``os.environ`` itself.

Layout: :mod:`~daemon.settings.checks` (the kinds of value and their wording),
:mod:`~daemon.settings.sections` (one model per section, with defaults and docs),
:mod:`~daemon.settings.rules` (rules between keys), :mod:`~daemon.settings.report` (pydantic's
errors in our wording), :mod:`~daemon.settings.loading` (:class:`Config` on pydantic-settings,
the file and the environment).

Environment overrides
---------------------
``ANCHORSTREAM_<SECTION>__<KEY>=value`` (double underscore between section and key) overrides
``<section>.<key>``. The value is parsed as a YAML scalar or flow sequence, so ``true``, ``42``,
``0.5``, ``null`` and ``[news, posts]`` mean what they mean in the file. Variables that start with
``ANCHORSTREAM_`` but have no ``__`` (for example ``ANCHORSTREAM_CONFIG``) are not overrides and
are ignored; an override naming an unknown section or key is an error, because a typo in a
deployment manifest should not be silently ignored.

Errors
------
Problems raise one :class:`ConfigError` (an ``AnchorstreamError`` and a ``ValueError``) that
lists every problem found, each naming the dotted key, the value received and what is allowed,
e.g.::

    2 problems in the configuration:
      kafka.security_protocol: got 'SASL'; allowed: one of 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT',
      'SASL_SSL'
      model.num_topics: got 0; allowed: an integer >= 1

(a single problem is its line alone). Rules between keys are checked for the sections whose
values are valid, and join the same list.

Secrets
-------
``kafka.sasl_plain_password`` and ``http.bearer_token`` are held in :class:`Secret` (a pydantic
``SecretStr``), whose ``repr``/``str`` is ``'***'``; call :meth:`Secret.reveal` where the value is
really needed (the Kafka client, the token comparison). Error messages about a secret never show
its value and :meth:`Config.to_dict` redacts it by default, so logging the effective
configuration is safe.

Paths
-----
Relative paths (``store.path``, ``snapshots.path``, ``vocab.seed_file``, ``kafka.ssl_*``) are kept
as written and so are relative to the daemon's working directory.

Example
-------
>>> cfg = load_config(None, env={"ANCHORSTREAM_MODEL__NUM_TOPICS": "30"})
>>> cfg.model.num_topics, cfg.http.host
(30, '127.0.0.1')
"""

from daemon.settings.checks import EMBEDDED, ConfigError, FrozenMap, Secret
from daemon.settings.loading import (ENV_PREFIX, SECTIONS, Config, describe_keys, load_config,
                                     parse_config)
from daemon.settings.sections import (HealthConfig, HttpConfig, KafkaConfig, LoggingConfig,
                                      MessageConfig, MetricsConfig, ModelConfig, RefreshConfig,
                                      SnapshotsConfig, StoreConfig, TrendsConfig,
                                      VocabConfig)

__all__ = [
    "Config",
    "ConfigError",
    "HealthConfig",
    "HttpConfig",
    "KafkaConfig",
    "LoggingConfig",
    "MessageConfig",
    "MetricsConfig",
    "ModelConfig",
    "RefreshConfig",
    "Secret",
    "SnapshotsConfig",
    "StoreConfig",
    "TrendsConfig",
    "VocabConfig",
    "FrozenMap",
    "EMBEDDED",
    "ENV_PREFIX",
    "SECTIONS",
    "describe_keys",
    "load_config",
    "parse_config",
]
