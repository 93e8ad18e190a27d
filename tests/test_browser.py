"""The topic browser (``daemon/static``) in real headless Chromium against a real API server.

Chromium is driven by ``chromedriver`` over the W3C WebDriver HTTP protocol, spoken here with
the standard library (``urllib`` + ``json``). Why not selenium: the test needs six WebDriver
endpoints (new session, navigate, execute script, screenshot, delete session, status), which is
about forty lines; selenium would be a dependency of the dev install for that, and its
Selenium Manager tries to download drivers from the internet, which this project's machines
cannot reach.

The browser and its driver are Debian packages (``apt-get install chromium chromium-driver``);
without them the test is skipped with that hint. The screenshot is written to the test's
``tmp_path`` and, when ``ANCHORSTREAM_SCREENSHOT`` names a file, there as well.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from daemon.api import ApiServer
from daemon.metrics import Metrics
from daemon.publisher import Publisher

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="headless Chromium is not installed: apt-get install -y chromium chromium-driver",
)

# Five themes with real words, so that the screenshot looks like what an operator would see.
THEMES = {
    "tariff": ["tariff", "duties", "revenue", "imports", "trade", "customs", "goods",
               "manufactures", "protection", "treasury", "taxation", "commerce"],
    "navy": ["navy", "vessels", "naval", "ships", "squadron", "seamen", "harbor", "coast",
             "fleet", "officers", "construction", "dock"],
    "railroad": ["railroad", "pacific", "lands", "territory", "settlers", "grants",
                 "construction", "routes", "mail", "western", "miles", "companies"],
    "health": ["health", "care", "insurance", "medicare", "families", "costs", "hospitals",
               "coverage", "children", "medical", "doctors", "patients"],
    "terrorists": ["terrorists", "security", "iraq", "afghanistan", "attacks", "troops",
                  "intelligence", "allies", "weapons", "qaeda", "homeland", "freedom"],
}
VOCAB = sorted({w for words in THEMES.values() for w in words})
K = len(THEMES)


def snapshot_kwargs(prevalence, ids=None, seed=0) -> dict:
    """A published model whose topic k puts most mass on theme k's words, in theme order."""
    rng = np.random.default_rng(seed)
    index = {w: i for i, w in enumerate(VOCAB)}
    tw = np.full((K, len(VOCAB)), 1e-3)
    for k, words in enumerate(THEMES.values()):
        for rank, w in enumerate(words):
            tw[k, index[w]] += (len(words) - rank) * (1.0 + 0.05 * rng.random())
    prevalence = np.asarray(prevalence, dtype=np.float64)
    prevalence = prevalence / prevalence.sum()
    return dict(
        vocabulary=VOCAB, topic_word=tw, topic_topic=np.diag(prevalence),
        anchors=list(THEMES), topic_ids=ids if ids is not None else list(range(K)),
        prevalence=prevalence, num_docs=10_000 + 2_500 * seed,
        settings={"num_topics": K}, source={"offsets": {}},
    )


# ----------------------------------------------------------------------------------------------
# a minimal W3C WebDriver client


class WebDriver:
    """Just enough of the W3C WebDriver protocol to load a page, read it and screenshot it."""

    def __init__(self, url: str, session: str):
        self.base = f"{url}/session/{session}"

    @staticmethod
    def call(method: str, url: str, payload: dict | None = None, timeout: float = 60) -> dict:
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:  # WebDriver errors are JSON bodies: show them
            body = exc.read().decode("utf-8", "replace")
            exc.close()
            raise AssertionError(f"WebDriver {method} {url} -> {exc.code}: {body}") from None

    def get(self, url: str) -> None:
        self.call("POST", f"{self.base}/url", {"url": url})

    def js(self, script: str, *args):
        """Run ``script`` (a function body; ``arguments`` holds ``args``) and return its value."""
        return self.call("POST", f"{self.base}/execute/sync",
                         {"script": script, "args": list(args)})["value"]

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("GET", f"{self.base}/screenshot")["value"])

    def wait_for(self, script: str, what: str, timeout: float = 30.0):
        """Poll ``script`` until it returns something truthy; fail saying ``what`` never came.

        The deadline only bounds a hung browser; nothing asserts on how fast the page is.
        """
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.js(script)
            if value:
                return value
            time.sleep(0.1)
        page = self.js("return document.body.innerText.slice(0, 2000);")
        raise AssertionError(f"timed out waiting for {what}; last value {value!r}; page:\n{page}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def browser(tmp_path):
    port = _free_port()
    log = open(tmp_path / "chromedriver.log", "wb")  # noqa: SIM115 - closed below
    driver = subprocess.Popen(
        [CHROMEDRIVER, f"--port={port}", "--allowed-ips=127.0.0.1"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    session = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if WebDriver.call("GET", f"{url}/status", timeout=2)["value"]["ready"]:
                    break
            except (OSError, AssertionError):
                pass
            if time.monotonic() > deadline or driver.poll() is not None:
                raise AssertionError("chromedriver did not start; see chromedriver.log")
            time.sleep(0.1)
        args = ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu",
                "--no-first-run", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,1000",
                f"--user-data-dir={tmp_path / 'chromium-profile'}"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}}
        session = WebDriver.call("POST", f"{url}/session", caps, timeout=120)["value"]["sessionId"]
        yield WebDriver(url, session)
    finally:
        if session is not None:
            try:
                WebDriver.call("DELETE", f"{url}/session/{session}", timeout=30)
            except (OSError, AssertionError):
                pass
        driver.terminate()
        try:
            driver.wait(10)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
        log.close()


@pytest.fixture
def publisher(tmp_path):
    pub = Publisher(tmp_path / "snapshots", keep=10)
    yield pub
    pub.close()


@pytest.fixture
def server(publisher):
    metrics = Metrics()
    metrics.bind_publisher(publisher)
    with ApiServer(publisher, metrics=metrics, max_wait_seconds=30) as srv:
        yield srv


ROWS = "return document.querySelectorAll('#topics tr[data-topic-id]').length;"
VERSION = "document.getElementById('version').dataset.version"
# Number of drawn points of every line, once the chart reflects the topic history.
POINTS = """
return Array.from(document.querySelectorAll('#chart .lines [data-series]'))
            .map(g => g.querySelectorAll('circle').length);
"""


@needs_chromium
def test_page_shows_topics_and_follows_new_snapshots(server, publisher, browser, tmp_path):
    browser.get(server.url + "/")
    # Before the first snapshot the page says so (its long poll is waiting on the publisher).
    browser.wait_for("return document.getElementById('conn').dataset.state === 'waiting' "
                     "&& !document.getElementById('empty').hidden;", "the empty state")

    publisher.publish(**snapshot_kwargs([5, 3, 2, 1, 1], seed=0))
    assert browser.wait_for(ROWS, f"{K} topic rows") == K
    assert browser.js(f"return {VERSION};") == "1"
    rows = browser.js("""
        return Array.from(document.querySelectorAll('#topics tr[data-topic-id]')).map(tr => ({
          id: Number(tr.dataset.topicId),
          anchor: tr.querySelector('.c-anchor').innerText.trim(),
          words: Array.from(tr.querySelectorAll('.words li')).map(li => li.innerText.trim()),
          bar: parseFloat(tr.querySelector('.bar-fill').style.width),
          prevalence: tr.querySelector('.prev-num').innerText.trim(),
        }));""")
    assert [r["id"] for r in rows] == [0, 1, 2, 3, 4]  # sorted by prevalence, largest first
    assert [r["anchor"] for r in rows] == list(THEMES)
    for r, words in zip(rows, THEMES.values(), strict=True):
        assert r["words"][0] == words[0] and set(r["words"]) < set(words)
        assert len(r["words"]) == 10
    assert rows[0]["prevalence"] == "41.7%" and rows[0]["bar"] == pytest.approx(100)
    assert rows[4]["bar"] == pytest.approx(20)

    # Two more refreshes: topic 0 fades, "terrorists" rises, topic 2 dies and topic 5 is born.
    publisher.publish(**snapshot_kwargs([4, 3, 2, 2, 2], seed=1))
    browser.wait_for(f"return {VERSION} === '2';", "snapshot 2")
    publisher.publish(**snapshot_kwargs([3, 3, 1, 2, 4], ids=[0, 1, 5, 3, 4], seed=2))
    browser.wait_for(f"return {VERSION} === '3';", "snapshot 3")
    points = browser.wait_for(
        "const p = (function(){" + POINTS + "})(); "
        "return p.length === 5 && p.filter(n => n === 3).length === 4 ? p : null;",
        "a chart with the history of every topic")
    assert sorted(points) == [1, 3, 3, 3, 3]  # the newborn topic has one point
    assert browser.js(ROWS) == K
    ids = browser.js("return Array.from(document.querySelectorAll('#topics tr'))"
                     ".map(tr => Number(tr.dataset.topicId));")
    assert ids[0] == 4  # the rising topic leads now
    # The rows learn each topic's change from its history, which can arrive after the chart's
    # (seen on a loaded CI machine): wait for the markers rather than reading them once.
    changes = browser.wait_for("""
        const out = {};
        for (const tr of document.querySelectorAll('#topics tr')) {
          out[tr.dataset.topicId] = tr.querySelector('.delta').className;
        }
        return Object.values(out).some(c => c.includes('muted')) ? null : out;""",
        "the change markers of every topic")
    assert "up" in changes["4"] and "down" in changes["0"] and "new" in changes["5"]
    assert browser.js("return document.getElementById('conn').dataset.state;") == "live"
    assert browser.js("return document.getElementById('docs').innerText;") == "15,000"
    assert browser.js("return document.getElementById('age').innerText;").endswith(
        ("ago", "now"))

    png = browser.screenshot()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "topics.png").write_bytes(png)
    extra = os.environ.get("ANCHORSTREAM_SCREENSHOT")
    if extra:
        Path(extra).write_bytes(png)


def test_static_files_are_served(server):
    """The page's own files come from the daemon with sensible types (no CDN, no build step)."""
    for name, ctype in (("", "text/html"), ("static/app.js", "javascript"),
                        ("static/app.css", "text/css")):
        with urllib.request.urlopen(f"{server.url}/{name}", timeout=10) as resp:
            assert resp.status == 200 and ctype in resp.headers["Content-Type"]
            body = resp.read().decode("utf-8")
        # Offline: nothing is loaded from another origin.
        assert "http://" not in body.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in body
