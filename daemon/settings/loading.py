"""The whole configuration (:class:`Config`) and how it is read: the YAML file, then the
environment on top, through pydantic-settings' sources.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, model_validator
from pydantic_settings import (BaseSettings, EnvSettingsSource, InitSettingsSource,
                               SettingsConfigDict)

from daemon.settings import rules
from daemon.settings.checks import ConfigError, FromEnv, Secret, UniqueKeyLoader
from daemon.settings.report import report
from daemon.settings.sections import (HealthConfig, HttpConfig, KafkaConfig, LoggingConfig,
                                      MessageConfig, MetricsConfig, ModelConfig, RefreshConfig,
                                      SnapshotsConfig, StoreConfig, TrendsConfig,
                                      VocabConfig)

ENV_PREFIX = "ANCHORSTREAM_"


class Config(BaseSettings):
    """The whole validated configuration; one frozen model per section.

    ``Config()`` is the shipped defaults: the environment is read only by :func:`parse_config`
    and :func:`load_config`, which are given it.
    """

    model_config = SettingsConfigDict(
        extra="forbid", frozen=True, env_prefix=ENV_PREFIX, env_nested_delimiter="__",
        env_nested_max_split=1, case_sensitive=False)

    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    message: MessageConfig = Field(default_factory=MessageConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    vocab: VocabConfig = Field(default_factory=VocabConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    refresh: RefreshConfig = Field(default_factory=RefreshConfig)
    snapshots: SnapshotsConfig = Field(default_factory=SnapshotsConfig)
    trends: TrendsConfig = Field(default_factory=TrendsConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                   dotenv_settings, file_secret_settings):
        return (init_settings,)  # the environment only where parse_config is given it

    @model_validator(mode="after")
    def _check_rules(self):
        rules.check(rules.CONFIG, self)
        return self

    @property
    def max_batch_bytes(self) -> int:
        """``kafka.max_batch_bytes``, or its default: 32 x ``message.max_bytes``.

        A producer's batch holds many messages (librdkafka batches up to 1 MB of them, Java
        producers' batches inflate to several MB at text's compression ratios): 32 messages of
        the largest accepted size leave room for those and bound the memory one batch takes.
        """
        k = self.kafka.max_batch_bytes
        return int(k) if k is not None else 32 * self.message.max_bytes

    def to_dict(self, *, redact: bool = True) -> dict[str, dict[str, Any]]:
        """Plain JSON-able dict of every value; secrets become ``"***"`` unless ``redact=False``.

        The redacted form is what goes into logs and snapshot manifests.
        """
        return {name: {key: _plain(getattr(section, key), redact)
                       for key in type(section).model_fields}
                for name, section in ((name, getattr(self, name)) for name in SECTIONS)}


SECTIONS: dict[str, type] = {name: f.annotation for name, f in Config.model_fields.items()}


def _plain(v: Any, redact: bool) -> Any:
    """A JSON value for ``v`` (secrets redacted unless ``redact`` is false)."""
    if isinstance(v, Secret):
        return "***" if redact else v.reveal()
    if isinstance(v, tuple):
        return list(v)
    if isinstance(v, Mapping):
        return {k: _plain(x, redact) for k, x in v.items()}
    return v


def describe_keys() -> dict[str, dict[str, str]]:
    """``{section: {key: one-line doc}}`` for every key; used to keep config.yaml complete."""
    return {name: {key: f.description for key, f in cls.model_fields.items()}
            for name, cls in SECTIONS.items()}


class _Overrides(EnvSettingsSource):
    """``ANCHORSTREAM_<SECTION>__<KEY>`` variables of ``environ`` as :class:`FromEnv` values.

    pydantic-settings finds the variables (prefix, ``__`` between section and key, any case)
    and nests them under their section; every value arrives at its check as :class:`FromEnv`,
    whose YAML reading and variable name the check and the error message use. A variable
    without ``__`` after the prefix (``ANCHORSTREAM_CONFIG``) is not an override; one naming an
    unknown section is kept, so that it is refused like an unknown section in the file.
    """

    def __init__(self, environ: Mapping[str, str]):
        self._environ = environ
        super().__init__(Config)

    def _load_env_vars(self) -> Mapping[str, Any]:
        return {var.lower(): FromEnv.parse(var, text) for var, text in sorted(self._environ.items())
                if var.startswith(ENV_PREFIX) and "__" in var[len(ENV_PREFIX):]}

    def decode_complex_value(self, field_name, field, value):
        return value  # FromEnv: read as YAML already

    def _coerce_env_val_strict(self, field, value):
        return value

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        for name, value in self.env_vars.items():
            section, _, key = name[len(ENV_PREFIX):].partition("__")
            if section not in Config.model_fields:
                data.setdefault(section, {})[key] = value
        return data


def _sections(data: Any) -> dict[str, Any]:
    """The YAML document's sections; an empty section (``model:``) means its defaults."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"the configuration must be a mapping of sections, got {type(data).__name__}")
    return {str(name): values for name, values in data.items() if values is not None}


def parse_config(data: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> Config:
    """Validate a parsed YAML mapping plus environment overrides into a :class:`Config`.

    Parameters
    ----------
    data : mapping or None
        The YAML document (``None`` or empty means all defaults).
    env : mapping, optional
        Environment; only ``ANCHORSTREAM_<SECTION>__<KEY>`` entries are read.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        Naming, for every problem found, the dotted key, the value received and what is allowed.
    """
    sections = _sections(data)
    # Environment first: pydantic-settings gives the first source precedence.
    sources = (_Overrides(env or {}), InitSettingsSource(Config, sections))
    try:
        return Config(_build_sources=(sources, sections))
    except ValidationError as exc:
        raise report(exc, SECTIONS) from None


def load_config(path: str | os.PathLike | None, env: Mapping[str, str] | None = os.environ
                ) -> Config:
    """Read ``path`` (YAML), apply ``ANCHORSTREAM_SECTION__KEY`` overrides from ``env``, validate.

    ``path`` None means the defaults (plus ``env``); ``env`` defaults to ``os.environ`` (pass
    ``{}`` to ignore it). Returns the :class:`Config` of :func:`parse_config`, or raises
    :class:`ConfigError` for a missing or unreadable file, invalid YAML or a duplicate key, and
    as :func:`parse_config` does for unknown keys, bad values and inconsistent settings.
    """
    data = None
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"configuration file {str(path)!r} does not exist; pass --config with the path "
                "of a config.yaml (the repository root has a commented example)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read configuration file {str(path)!r}: {exc}") from None
        try:
            data = yaml.load(text, Loader=UniqueKeyLoader)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, env)


__all__ = ["Config", "ENV_PREFIX", "SECTIONS", "describe_keys", "load_config", "parse_config"]
