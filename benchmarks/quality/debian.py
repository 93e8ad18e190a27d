"""Text from the Debian archive, fetched with apt into a private directory.

Two things come from Debian's package registry:

- the ``main/i18n/Translation-en`` index (every package's English ``Description-en``),
  ``Translation-ja``, ``-it``, ``-fr``, ``-pt_BR`` and ``-ru`` (the Japanese, Italian, French,
  Brazilian Portuguese and Russian translations of the Debian Description Translation Project), which ``apt-get update`` downloads for the
  languages ``Acquire::Languages`` names;
- documentation packages (``.deb``), which ``apt-get download`` fetches and ``dpkg-deb -x``
  unpacks.

Why apt and not an HTTP client: apt is the ordinary client of that registry, it verifies the
index against the archive's signed ``InRelease``, and it already knows the mirror. Everything
runs against a private state directory (``-o Dir::State::Lists``, ``Dir::Cache``, a private
sources list built from the machine's first Debian ``main`` source), so the machine's own apt
state is neither read for stale lists nor changed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_SOURCES = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list"))
#: The package descriptions' languages ``apt-get update`` fetches (``tech``: en; ``ja``: ja;
#: ``it``: it; ``fr``: fr; ``pt``: pt_BR; ``ru``: ru).
LANGUAGES = ("en", "ja", "it", "fr", "pt_BR", "ru")
_DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


@dataclass(frozen=True)
class Source:
    """One Debian archive: ``deb [signed-by=keyring] uri suite main``."""

    uri: str
    suite: str
    keyring: str | None

    def line(self) -> str:
        opts = f" [signed-by={self.keyring}]" if self.keyring else ""
        return f"deb{opts} {self.uri} {self.suite} main\n"


def machine_source() -> Source:
    """The machine's first apt source that serves a Debian ``main`` component.

    Reads deb822 ``*.sources`` files and one-line ``sources.list`` entries; the first suite of
    the first matching stanza is used (``bookworm`` rather than ``bookworm-updates``).

    Raises
    ------
    RuntimeError
        If no such source is configured (not a Debian machine).
    """
    files: list[Path] = []
    for place in _SOURCES:
        if place.is_dir():
            files += sorted(place.glob("*.sources")) + sorted(place.glob("*.list"))
        elif place.is_file():
            files.append(place)
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        if f.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(
                    (m.group(1).lower(), m.group(2).strip())
                    for m in re.finditer(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M)
                )
                if ("deb" in fields.get("types", "").split()
                        and "main" in fields.get("components", "").split()
                        and "/debian" in fields.get("uris", "")
                        and "security" not in fields.get("uris", "")):
                    return Source(fields["uris"].split()[0], fields["suites"].split()[0],
                                  fields.get("signed-by") or _keyring())
        else:
            for line in text.splitlines():
                m = re.match(r"^deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s+(.*)$", line.strip())
                if m and "main" in m.group(4).split() and "security" not in m.group(2):
                    opts = dict(o.split("=", 1) for o in (m.group(1) or "").split() if "=" in o)
                    return Source(m.group(2), m.group(3), opts.get("signed-by") or _keyring())
    raise RuntimeError(
        "no Debian 'main' apt source is configured on this machine (looked in "
        f"{', '.join(map(str, _SOURCES))}); the tech and long corpora need one"
    )


def _keyring() -> str | None:
    return str(_DEFAULT_KEYRING) if _DEFAULT_KEYRING.is_file() else None


class Apt:
    """apt-get and apt-cache over a private state directory ``root``.

    Parameters
    ----------
    root : Path
        Holds ``lists/``, ``cache/`` and ``sources.list``; created on first use.
    source : Source, optional
        Default: :func:`machine_source`.
    """

    def __init__(self, root: Path, source: Source | None = None):
        self.root = Path(root)
        self.source = source or machine_source()
        self._updated = False

    def _options(self) -> list[str]:
        return [
            "-o", f"Dir::State::Lists={self.root / 'lists'}",
            "-o", f"Dir::Cache={self.root / 'cache'}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::Etc::SourceList={self.root / 'sources.list'}",
            "-o", f"Acquire::Languages={','.join(LANGUAGES)}",
            "-o", "APT::Sandbox::User=root",  # the private directories are ours, not _apt's
        ]

    def _run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found: the Debian corpora need apt (a Debian machine)")
        proc = subprocess.run([tool, *self._options(), *args], cwd=cwd, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed (exit {proc.returncode}):\n"
                               f"{proc.stderr.strip()[-2000:]}")
        return proc.stdout

    def update(self) -> None:
        """``apt-get update`` of the private lists (index files + the :data:`LANGUAGES`'
        translations)."""
        if self._updated:
            return
        for sub in ("lists/partial", "cache/archives/partial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "sources.list").write_text(self.source.line())
        self._run("apt-get", "update")
        self._updated = True

    def list_file(self, pattern: str) -> Path:
        """The (possibly compressed) index file of the private lists matching ``pattern``."""
        self.update()
        found = sorted((self.root / "lists").glob(pattern))
        if not found:
            raise RuntimeError(f"apt-get update left no {pattern} in {self.root / 'lists'}")
        return found[0]

    def cat(self, path: Path) -> str:
        """An index file's text; apt's helper undoes whatever compression apt stored it with."""
        proc = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(path)],
                              capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"apt-helper cat-file {path} failed: {proc.stderr!r}")
        return proc.stdout.decode("utf-8", errors="replace")

    def release_date(self) -> str:
        """The ``Date:`` of the suite's InRelease (which version of the archive was read)."""
        text = self.list_file("*_InRelease").read_text(errors="replace")
        m = re.search(r"^Date:\s*(.*)$", text, re.M)
        return m.group(1).strip() if m else "unknown"

    def dependencies(self, package: str) -> list[str]:
        """Names ``package`` depends on (e.g. ``python3-doc`` -> ``python3.11-doc``)."""
        self.update()
        out = self._run("apt-cache", "depends", "--no-recommends", "--no-suggests", package)
        return [m.group(1) for m in re.finditer(r"^\s*Depends:\s*(\S+)", out, re.M)]

    def version(self, package: str) -> str:
        self.update()
        out = self._run("apt-cache", "show", "--no-all-versions", package)
        m = re.search(r"^Version:\s*(\S+)", out, re.M)
        return m.group(1) if m else "unknown"

    def archive_version(self, package: str) -> str:
        """The newest version of ``package`` the private source offers (``apt-cache madison``:
        the archive's versions alone, where :meth:`version` takes the machine's installed one
        when it is newer, as a security update is)."""
        self.update()
        out = self._run("apt-cache", "madison", package)
        versions = [line.split("|")[1].strip() for line in out.splitlines() if "|" in line]
        if not versions:
            raise RuntimeError(f"the archive {self.source.uri} {self.source.suite} offers no "
                               f"{package}")
        return versions[0]

    def download_and_unpack(self, package: str, into: Path, version: str | None = None) -> Path:
        """``apt-get download`` (of ``version``, where given) then ``dpkg-deb -x`` into
        ``into``; returns ``into``."""
        self.update()
        debs = self.root / "debs"
        debs.mkdir(exist_ok=True)
        for old in debs.glob(f"{package}_*.deb"):
            old.unlink()
        self._run("apt-get", "download", package if version is None else f"{package}={version}",
                  cwd=debs)
        (deb,) = debs.glob(f"{package}_*.deb")
        into.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], check=True)
        return into


def parse_translations(text: str, language: str = "en") -> list[tuple[str, str]]:
    """``(package, description)`` pairs of a ``Translation-<language>`` index, one per
    distinct text.

    The description is the synopsis line followed by the long description, unwrapped: the
    leading space of continuation lines removed and `` .`` (an empty paragraph) turned into a
    line break. Packages sharing a description (``Description-md5``) keep the first, so the same
    text never lands in both the training and the held-out part.
    """
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    field = f"Description-{language}:"
    for stanza in text.split("\n\n"):
        pkg = md5 = None
        desc: list[str] = []
        in_desc = False
        for line in stanza.splitlines():
            if line.startswith("Package:"):
                pkg = line.split(":", 1)[1].strip()
                in_desc = False
            elif line.startswith("Description-md5:"):
                md5 = line.split(":", 1)[1].strip()
                in_desc = False
            elif line.startswith(field):
                desc = [line.split(":", 1)[1].strip()]
                in_desc = True
            elif in_desc and line.startswith(" "):
                body = line[1:]
                desc.append("" if body.strip() == "." else body)
            else:
                in_desc = False
        if pkg and desc:
            key = md5 or "\n".join(desc)
            if key in seen:
                continue
            seen.add(key)
            out.append((pkg, "\n".join(desc).strip()))
    return out
