"""Where a store lives: a local path or an fsspec-style URL, mapped onto Icechunk's storage.

The store is an Icechunk repository, and Icechunk talks to object stores through its own Rust
clients, not through fsspec; so a URL is not handed to fsspec but parsed here into the matching
Icechunk constructor. The URL forms are the ones fsspec users already write:

============================================  ===============================================
URL                                           Icechunk storage
============================================  ===============================================
``/data/store``, ``store``, ``file:///data``  ``local_filesystem_storage`` (a directory)
``s3://bucket/prefix``, ``s3a://...``         ``s3_storage`` (AWS S3 or S3-compatible:
                                              MinIO, Ceph, ... with ``endpoint_url``)
``gs://bucket/prefix``, ``gcs://...``         ``gcs_storage``
``az://container/prefix``, ``abfs://``,       ``azure_storage``; the account comes from
``abfss://``, ``azure://``                    ``container@ACCOUNT.dfs.core.windows.net`` in
                                              the URL or the ``account`` option
``memory://name``                             ``in_memory_storage`` (this process only, tests)
============================================  ===============================================

``storage_options`` are keyword arguments of that constructor (``region``, ``endpoint_url``,
``allow_http``, ``anonymous``, ``from_env``, ...; :data:`STORAGE_OPTIONS` lists them per
scheme). Credentials are taken from the environment by default (Icechunk's ``from_env``: the
usual ``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_*`` variables), so a
configuration file needs no secret. This module imports Icechunk only when it builds a
storage, so the daemon's configuration can check options without loading it.

>>> parse_store_url("s3a://bucket/deep/prefix")
StoreURL(scheme='s3', bucket='bucket', prefix='deep/prefix', account=None, path=None)
>>> parse_store_url("gcs://bucket").prefix is None
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anchorstream.errors import InputError

__all__ = ["STORAGE_OPTIONS", "SCHEMES", "StoreURL", "check_storage_options",
           "icechunk_storage", "parse_store_url"]

#: URL scheme -> storage kind. The aliases are the schemes fsspec's s3fs, gcsfs and adlfs take.
SCHEMES: dict[str, str] = {
    "file": "local",
    "s3": "s3", "s3a": "s3",
    "gs": "gcs", "gcs": "gcs",
    "az": "azure", "abfs": "azure", "abfss": "azure", "azure": "azure",
    "memory": "memory",
}

_STR, _BOOL, _INT, _MAP = "a string", "true or false", "an integer >= 0", "a mapping of strings"

#: Storage kind -> the Icechunk constructor's keyword arguments a store accepts, with their
#: type. Bucket, container and prefix come from the URL; callables (refreshable credentials)
#: cannot come from a configuration file.
STORAGE_OPTIONS: dict[str, dict[str, str]] = {
    "local": {},
    "memory": {},
    "s3": {
        "region": _STR, "endpoint_url": _STR, "allow_http": _BOOL, "anonymous": _BOOL,
        "from_env": _BOOL, "access_key_id": _STR, "secret_access_key": _STR,
        "session_token": _STR, "force_path_style": _BOOL,
        "network_stream_timeout_seconds": _INT, "requester_pays": _BOOL,
    },
    "gcs": {
        "anonymous": _BOOL, "from_env": _BOOL, "service_account_file": _STR,
        "service_account_key": _STR, "application_credentials": _STR, "bearer_token": _STR,
        "config": _MAP,
    },
    "azure": {
        "account": _STR, "access_key": _STR, "sas_token": _STR, "bearer_token": _STR,
        "from_env": _BOOL, "config": _MAP,
    },
}

#: Options whose values are credentials (never shown in messages or logs).
SECRET_OPTIONS = frozenset({
    "secret_access_key", "session_token", "service_account_key", "bearer_token", "access_key",
    "sas_token", "application_credentials",
})


@dataclass(frozen=True)
class StoreURL:
    """A parsed store location.

    Attributes
    ----------
    scheme : str
        The storage kind: ``"local"``, ``"s3"``, ``"gcs"``, ``"azure"`` or ``"memory"``.
    bucket : str or None
        Bucket (S3, GCS), container (Azure) or in-memory name.
    prefix : str or None
        Key prefix inside the bucket (None: the bucket's root).
    account : str or None
        Azure storage account, when the URL names it.
    path : str or None
        Absolute local directory (scheme ``"local"``).
    """

    scheme: str
    bucket: str | None = None
    prefix: str | None = None
    account: str | None = None
    path: str | None = None


def _supported() -> str:
    return ", ".join(f"{s}://" for s in SCHEMES) + " or a local path"


def parse_store_url(url: str | os.PathLike) -> StoreURL:
    """Split a store location into the parts an Icechunk storage constructor takes.

    Parameters
    ----------
    url : str or path-like
        A local path, or ``SCHEME://bucket[/prefix]`` with a scheme of :data:`SCHEMES`.

    Returns
    -------
    StoreURL

    Raises
    ------
    InputError
        For an unknown scheme (the message lists the supported ones) or a URL without a bucket.
    """
    text = os.fspath(url)
    if not isinstance(text, str) or not text:
        raise InputError(f"a store location must be a non-empty path or URL, got {url!r}")
    scheme, sep, rest = text.partition("://")
    if not sep:
        return StoreURL("local", path=os.path.abspath(text))
    kind = SCHEMES.get(scheme.lower())
    if kind is None:
        raise InputError(f"unsupported store URL {text!r}: scheme {scheme!r} is not one of "
                         f"{_supported()}")
    if kind == "local":
        if not rest:
            raise InputError(f"store URL {text!r} has no path")
        return StoreURL("local", path=os.path.abspath(rest))
    if kind == "memory":
        return StoreURL("memory", bucket=rest)
    authority, _, prefix = rest.partition("/")
    prefix = prefix.strip("/") or None
    account = None
    if kind == "azure" and "@" in authority:
        # adlfs's abfs://container@account.dfs.core.windows.net/path
        authority, _, host = authority.partition("@")
        account = host.split(".", 1)[0] or None
    if not authority:
        raise InputError(f"store URL {text!r} has no bucket: write {scheme}://BUCKET/PREFIX")
    return StoreURL(kind, bucket=authority, prefix=prefix, account=account)


def _shown(key: str, value: Any) -> str:
    return "<redacted>" if key in SECRET_OPTIONS else repr(value)


def check_storage_options(url: str | os.PathLike,
                          options: Mapping[str, Any] | None) -> tuple[StoreURL, dict]:
    """Check ``options`` against what the storage of ``url`` accepts.

    Returns
    -------
    (StoreURL, dict)
        The parsed URL and the options as a plain dict (the Azure account moved out).

    Raises
    ------
    InputError
        Naming the option, the value received (credentials redacted) and what is allowed.
    """
    where = parse_store_url(url)
    options = dict(options or {})
    allowed = STORAGE_OPTIONS[where.scheme]
    for key, value in options.items():
        if key not in allowed:
            kinds = "none (options apply to object-store URLs)" if not allowed else \
                ", ".join(sorted(allowed))
            raise InputError(f"storage option {key!r} is not accepted for a {where.scheme} "
                             f"store ({os.fspath(url)!r}); allowed: {kinds}")
        kind = allowed[key]
        if kind == _BOOL:
            ok = isinstance(value, bool)
        elif kind == _INT:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        elif kind == _MAP:
            ok = isinstance(value, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        else:
            ok = isinstance(value, str) and bool(value)
        if not ok:
            raise InputError(f"storage option {key!r}: got {_shown(key, value)}; allowed: "
                             f"{'a non-empty string' if kind == _STR else kind}")
    if where.scheme == "azure":
        account = options.pop("account", None)
        if where.account and account and account != where.account:
            raise InputError(f"store URL {os.fspath(url)!r} names account {where.account!r} "
                             f"but storage option 'account' is {account!r}; give one of them")
        account = where.account or account
        if not account:
            raise InputError(f"an Azure store needs its storage account: write "
                             f"abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX or set the "
                             f"storage option 'account' (store {os.fspath(url)!r})")
        where = StoreURL("azure", where.bucket, where.prefix, account)
    return where, options


def icechunk_storage(url: str | os.PathLike, options: Mapping[str, Any] | None = None,
                     *, memory: dict | None = None):
    """The Icechunk ``Storage`` of a store location, and its local directory if it has one.

    Parameters
    ----------
    url : str or path-like
    options : mapping, optional
        Keyword arguments of the Icechunk constructor (see :data:`STORAGE_OPTIONS`).
    memory : dict, optional
        The registry of in-memory storages by name (``memory://name`` is looked up there and
        added when missing), so that one process can reopen an in-memory store.

    Returns
    -------
    (icechunk.Storage, str or None)

    Raises
    ------
    InputError
        For an unsupported URL, bad options, or options Icechunk refuses as conflicting (e.g.
        ``anonymous`` together with keys).
    """
    import icechunk  # here, so that checking a configuration does not load it

    where, options = check_storage_options(url, options)
    if where.scheme == "local":
        return icechunk.local_filesystem_storage(where.path), where.path
    if where.scheme == "memory":
        registry = memory if memory is not None else {}
        if where.bucket not in registry:
            registry[where.bucket] = icechunk.in_memory_storage()
        return registry[where.bucket], None
    try:
        if where.scheme == "s3":
            storage = icechunk.s3_storage(bucket=where.bucket, prefix=where.prefix, **options)
        elif where.scheme == "gcs":
            storage = icechunk.gcs_storage(bucket=where.bucket, prefix=where.prefix, **options)
        else:
            storage = icechunk.azure_storage(account=where.account, container=where.bucket,
                                             prefix=where.prefix or "", **options)
    except (ValueError, TypeError) as exc:
        shown = {k: _shown(k, v) for k, v in options.items()}
        raise InputError(f"cannot build {where.scheme} storage for {os.fspath(url)!r} from "
                         f"storage options {shown}: {exc}") from exc
    return storage, None
