"""What a store creation interrupted on an object store left, found and removed.

An object store has no rename, so Icechunk creates a repository in place: it writes the first
snapshot, then the branch that makes the repository exist. A process killed between the two
(a SIGKILL while a partition's store is first opened) leaves objects and no repository, and
Icechunk creates only in a clean prefix: every later creation there would fail. A local store
has no such window (it is built beside its place and renamed in, see
:func:`anchorstream.store.repository.create_repository`).

:func:`clear_creation_debris` lists the prefix with `obstore <https://developmentseed.org/obstore/>`_
(Icechunk's Python API neither lists nor deletes) and removes what is there only if it cannot
be a repository or a creation under way: no branch or tag (nothing under ``refs/``) and every
object older than ``min_age`` seconds, where a live creation writes its branch a few
milliseconds after its snapshot. The storage options are the store's own
(:data:`anchorstream.store.location.STORAGE_OPTIONS`), translated to obstore's names.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
from collections.abc import Mapping
from typing import Any

from anchorstream.store.location import check_storage_options

__all__ = ["clear_creation_debris", "object_store"]

log = logging.getLogger("anchorstream.store")

#: Where a repository keeps its branches and tags: an object there means it is no debris.
_REFS = "refs/"


#: Storage kind -> (our option, obstore's config key) for the options passed on as they are.
_RENAMED = {
    "s3": (("region", "region"), ("endpoint_url", "endpoint"),
           ("access_key_id", "access_key_id"), ("secret_access_key", "secret_access_key"),
           ("session_token", "session_token")),
    "gcs": (("service_account_file", "service_account"),
            ("service_account_key", "service_account_key"),
            ("application_credentials", "application_credentials")),
    "azure": (("account", "account_name"), ("access_key", "account_key"),
              ("sas_token", "sas_key"), ("bearer_token", "bearer_token")),
}


def _config(kind: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """obstore's config for ``options`` of a store of ``kind``: its ``config`` mapping, the
    renamed options given, and ``anonymous`` as ``skip_signature``."""
    config = dict(options.get("config") or {})
    config.update({theirs: options[ours] for ours, theirs in _RENAMED[kind]
                   if options.get(ours) is not None})
    if options.get("anonymous"):
        config["skip_signature"] = True
    return config


def _s3(where, options: Mapping[str, Any]):
    from obstore.store import S3Store

    config = _config("s3", options)
    if options.get("force_path_style"):
        config["virtual_hosted_style_request"] = False
    if options.get("requester_pays"):
        config["request_payer"] = True
    client = {"allow_http": True} if options.get("allow_http") else None
    return S3Store(where.bucket, prefix=where.prefix, client_options=client, **config)


def _gcs(where, options: Mapping[str, Any]):
    from obstore.store import GCSStore

    return GCSStore(where.bucket, prefix=where.prefix, **_config("gcs", options))


def _azure(where, options: Mapping[str, Any]):
    from obstore.store import AzureStore

    config = _config("azure", options)
    if where.account and "account_name" not in config:
        config["account_name"] = where.account
    return AzureStore(where.bucket, prefix=where.prefix, **config)


def object_store(url: str | os.PathLike, storage_options: Mapping[str, Any] | None = None):
    """An obstore store over the prefix of an object-store ``url``; None for a local or
    in-memory store, or where obstore cannot be set up from the options."""
    where, options = check_storage_options(url, storage_options)
    build = {"s3": _s3, "gcs": _gcs, "azure": _azure}.get(where.scheme)
    if build is None:
        return None
    try:
        return build(where, options)
    except Exception as exc:  # noqa: BLE001 - an inspection that cannot be set up is skipped
        log.warning("cannot inspect %s for an interrupted creation: %s", os.fspath(url), exc)
        return None


def clear_creation_debris(url: str | os.PathLike,
                          storage_options: Mapping[str, Any] | None = None, *,
                          min_age: float, now: _dt.datetime | None = None) -> int | None:
    """Remove what an interrupted creation left at ``url``; how many objects were removed.

    Returns 0 where nothing may be removed (an empty prefix; something under ``refs/``; an
    object younger than ``min_age`` seconds: a creation may be under way) and None where the
    prefix cannot be inspected (a local store, or no object-store client for these options).
    """
    import obstore

    store = object_store(url, storage_options)
    if store is None:
        return None
    try:
        objects = [meta for batch in obstore.list(store) for meta in batch]
    except Exception as exc:  # noqa: BLE001 - reported; the caller's error stands
        log.warning("cannot list %s: %s", os.fspath(url), exc)
        return None
    now = now or _dt.datetime.now(_dt.timezone.utc)
    young = [m for m in objects if (now - m["last_modified"]).total_seconds() < min_age]
    if not objects or young or any(m["path"].startswith(_REFS) for m in objects):
        return 0
    paths = [m["path"] for m in objects]
    obstore.delete(store, paths)
    log.warning("removed %d objects that a store creation interrupted at %s left (%s): no "
                "repository was made there", len(paths), os.fspath(url),
                ", ".join(sorted(paths)[:5]) + (", ..." if len(paths) > 5 else ""))
    return len(paths)
