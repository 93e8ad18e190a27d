"""The topic browser (``daemon/static``) in real headless Chromium against a real API server.

Chromium is driven by ``chromedriver`` over the W3C WebDriver HTTP protocol, spoken here with
the standard library (``urllib`` + ``json``). Why not selenium: the test needs six WebDriver
endpoints (new session, navigate, execute script, screenshot, delete session, status), which is
about forty lines; selenium would be a dependency of the dev install for that, and its
Selenium Manager tries to download drivers from the internet, which this project's machines
cannot reach.

The browser and its driver are Debian packages (``apt-get install chromium chromium-driver``,
which ``make test`` runs through ``.ci/system-deps`` when it can); without them the test is
skipped with that hint.

The screenshot is written to ``build/test-artifacts/topic-browser.png`` (ignored by git; its
path is printed), or to the file ``$ANCHORSTREAM_SCREENSHOT`` names, so a person can look at
it after any run. The test decodes it (:func:`decode_png`, standard library + numpy) and checks
that the page was painted: enough pixels off the background, many colours, and the topics'
own bar colours on screen — a blank or half-rendered page fails.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import zlib
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from daemon.http.api import ApiServer
from daemon.metrics import Metrics
from daemon.publish import Publisher

REPO = Path(__file__).resolve().parents[1]
#: Where the screenshot lands for a person to look at (build/ is ignored by git).
SCREENSHOT = REPO / "build" / "test-artifacts" / "topic-browser.png"

#: Bound on anything the browser should do in about a second: it turns a hung browser into a
#: failure, and is long enough for Chromium on a busy two-core machine.
PATIENCE = 120.0

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


#: A theme of words none of THEMES has: a topic on it is new, not an old one re-cut.
NEW_THEME = ["internet", "broadband", "online", "digital", "technology", "web", "cyber",
             "data", "networks", "computers", "software", "innovation"]


def snapshot_kwargs(prevalence, ids=None, seed=0, themes=None) -> dict:
    """A published model whose topic k puts most mass on theme k's words, in theme order
    (``themes``: a list of word lists, default THEMES' values)."""
    rng = np.random.default_rng(seed)
    themes = list(THEMES.values()) if themes is None else themes
    vocab = sorted({w for words in themes for w in words})
    index = {w: i for i, w in enumerate(vocab)}
    tw = np.full((K, len(vocab)), 1e-3)
    for k, words in enumerate(themes):
        for rank, w in enumerate(words):
            tw[k, index[w]] += (len(words) - rank) * (1.0 + 0.05 * rng.random())
    prevalence = np.asarray(prevalence, dtype=np.float64)
    prevalence = prevalence / prevalence.sum()
    return dict(
        vocabulary=vocab, topic_word=tw, topic_topic=np.diag(prevalence),
        anchors=[words[0] for words in themes],
        topic_ids=ids if ids is not None else list(range(K)),
        prevalence=prevalence, num_docs=10_000 + 2_500 * seed,
        settings={"num_topics": K}, source={"offsets": {}},
    )


# ----------------------------------------------------------------------------------------------
# reading the screenshot


def decode_png(data: bytes) -> np.ndarray:
    """Pixels of an 8-bit, non-interlaced PNG (what Chromium's screenshots are).

    Parameters
    ----------
    data : bytes
        The PNG file.

    Returns
    -------
    ndarray of shape (height, width, channels), dtype uint8
        Channels: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA (the PNG's colour type).

    Raises
    ------
    AssertionError
        For a file that is not a PNG, or a bit depth, palette or interlacing this does not read.
    """
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length  # length, type, body, CRC
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    assert header is not None, "PNG without IHDR"
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (0, 2, 4, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = {0: 1, 4: 2, 2: 3, 6: 4}[color]  # bytes per pixel = channels at depth 8
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    assert len(raw) == height * (stride + 1), "truncated image data"
    rows = np.zeros((height + 1, stride), dtype=np.uint8)  # row 0: the zeros above the image
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1:start + 1 + stride]
        prev = rows[y]
        if kind == 0:  # None
            rows[y + 1] = np.frombuffer(line, np.uint8)
        elif kind == 2:  # Up: independent of the left neighbour, so vectorised
            rows[y + 1] = np.frombuffer(line, np.uint8) + prev
        else:  # Sub, Average, Paeth predict from the reconstructed left byte: one at a time
            cur, up = bytearray(line), prev.tobytes()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + up[i]) >> 1
                elif kind == 4:
                    b, c = up[i], (up[i - bpp] if i >= bpp else 0)
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                else:
                    raise AssertionError(f"unknown PNG filter type {kind} in row {y}")
                cur[i] = (cur[i] + pred) & 0xFF
            rows[y + 1] = np.frombuffer(bytes(cur), np.uint8)
    return rows[1:].reshape(height, width, bpp)


def encode_png(pixels: np.ndarray, filters) -> bytes:
    """An RGB PNG of ``pixels`` (height, width, 3) with row ``y`` filtered by ``filters[y]``.

    Only for testing :func:`decode_png`: the filters are computed from the known image, so they
    vectorise (decoding cannot), and every filter type can be exercised on purpose.
    """
    h, w, _ = pixels.shape
    img = pixels.reshape(h, w * 3).astype(np.int16)
    up = np.vstack([np.zeros((1, w * 3), np.int16), img[:-1]])
    left = np.hstack([np.zeros((h, 3), np.int16), img[:, :-3]])
    upleft = np.hstack([np.zeros((h, 3), np.int16), up[:, :-3]])
    p = left + up - upleft
    pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
    preds = [np.zeros_like(img), left, up, (left + up) >> 1, paeth]
    lines = b"".join(bytes([f]) + ((img[y] - preds[f][y]) % 256).astype(np.uint8).tobytes()
                     for y, f in enumerate(filters))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(lines)) + chunk(b"IEND", b""))


def blank_page_problems(pixels: np.ndarray, expected_colors=()) -> list[str]:
    """Why a screenshot does not show a painted page (empty when it does).

    Parameters
    ----------
    pixels : ndarray of shape (height, width, channels)
        With at least three channels (RGB first).
    expected_colors : iterable of (r, g, b)
        Colours that must each cover at least 100 pixels (within 3 per channel).
    """
    rgb = pixels[..., :3].reshape(-1, 3).astype(np.int32)
    codes = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    values, counts = np.unique(codes, return_counts=True)
    problems = []
    off_background = 1.0 - counts.max() / codes.size
    if off_background < 0.05:  # the page here: ~18 %; a blank one 0
        problems.append(f"only {off_background:.1%} of the pixels differ from the background "
                        f"#{values[counts.argmax()]:06x}")
    common = int((counts >= 50).sum())
    if common < 10:  # the page here: ~200 (text, chart, bars, swatches)
        problems.append(f"only {common} colours cover 50 pixels or more")
    for color in expected_colors:
        near = int((np.abs(rgb - np.asarray(color)).max(axis=1) <= 3).sum())
        if near < 100:
            problems.append(f"colour rgb{tuple(color)} covers only {near} pixels")
    return problems


# ----------------------------------------------------------------------------------------------
# a minimal W3C WebDriver client


class WebDriver:
    """Just enough of the W3C WebDriver protocol to load a page, read it and screenshot it."""

    def __init__(self, url: str, session: str):
        self.base = f"{url}/session/{session}"

    @staticmethod
    def call(method: str, url: str, payload: dict | None = None,
             timeout: float = PATIENCE) -> dict:
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

    def wait_for(self, script: str, what: str, timeout: float = PATIENCE):
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
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                if WebDriver.call("GET", f"{url}/status", timeout=10)["value"]["ready"]:
                    break
            except (OSError, AssertionError):
                pass
            if time.monotonic() > deadline or driver.poll() is not None:
                raise AssertionError("chromedriver did not start; see chromedriver.log")
            time.sleep(0.1)
        args = ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu",
                "--no-first-run", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,1150",
                f"--user-data-dir={tmp_path / 'chromium-profile'}"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}}
        session = WebDriver.call("POST", f"{url}/session", caps,
                                 timeout=2 * PATIENCE)["value"]["sessionId"]
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
def test_page_shows_topics_and_follows_new_snapshots(server, publisher, browser, capsys):
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
    # The chart shows the top rising topics until told to show them all.
    browser.wait_for("return document.querySelector('#picks button.link:last-of-type');",
                     "the chart's picks")
    browser.js("Array.from(document.querySelectorAll('#picks button.link'))"
               ".find(b => b.innerText === 'all topics').click();")
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

    # The bar colours of the topic rows that are fully on screen: each must be painted. The
    # table comes after the rising panel, the chart and the infer box.
    browser.js("document.getElementById('topics-card').scrollIntoView();")
    bar_colors = browser.js("""
        return Array.from(document.querySelectorAll('#topics tr[data-topic-id] .bar-fill'))
          .filter(el => { const r = el.getBoundingClientRect();
                          return r.width >= 20 && r.top >= 0 && r.bottom <= innerHeight; })
          .map(el => getComputedStyle(el).backgroundColor);""")
    assert len(bar_colors) >= 3, bar_colors
    bar_rgb = [tuple(int(v) for v in re.findall(r"\d+", c)[:3]) for c in bar_colors]

    png = browser.screenshot()
    # Saved before it is judged, so a failing screenshot can be looked at.
    path = Path(os.environ.get("ANCHORSTREAM_SCREENSHOT") or SCREENSHOT)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    with capsys.disabled():
        print(f"\ntopic browser screenshot: {path}")
    pixels = decode_png(png)
    assert pixels.shape[2] >= 3 and pixels.shape[0] >= 400 and pixels.shape[1] >= 800, \
        pixels.shape
    assert blank_page_problems(pixels, bar_rgb) == [], path


def coupled(kwargs: dict, a: int, b: int, hierarchy: dict | None = None) -> dict:
    """``kwargs`` with a topic-topic matrix where the topics in rows ``a`` and ``b`` share
    documents 1.5 times as often as chance and every other pair less than chance (lift 0.5),
    and optionally a supertopic hierarchy in ``extra``."""
    p = np.asarray(kwargs["prevalence"])
    A = 0.5 * np.diag(p) + 0.5 * np.outer(p, p)
    c = p[a] * p[b]
    A[a, b] += c
    A[b, a] += c
    A[a, a] -= c
    A[b, b] -= c
    out = {**kwargs, "topic_topic": A}
    if hierarchy is not None:
        out["extra"] = {"hierarchy": hierarchy}
    return out


def save_screenshot(browser, name: str, capsys) -> Path:
    """Screenshot the window into ``build/test-artifacts/NAME`` and check it was painted."""
    png = browser.screenshot()
    path = SCREENSHOT.parent / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    with capsys.disabled():
        print(f"\nscreenshot: {path}")
    assert blank_page_problems(decode_png(png)) == [], path
    return path


TRENDS_SHOWN = """
const out = {};
for (const kind of ['new', 'rising', 'falling']) {
  out[kind] = Array.from(document.querySelectorAll(`#${kind}-list li.trend`))
    .map(li => Number(li.dataset.topicId));
}
out.source = document.getElementById('trends').dataset.source;
return out.source && out.rising.length ? out : null;
"""
SERIES = ("return Array.from(document.querySelectorAll('#chart .lines [data-series]'))"
          ".map(g => Number(g.dataset.series)).sort((a, b) => a - b);")
CHIPS = ("return Array.from(document.querySelectorAll('#picks .chip'))"
         ".map(c => Number(c.dataset.topicId)).sort((a, b) => a - b);")


@needs_chromium
def test_rising_panel_topic_detail_chart_picks_and_infer(server, publisher, browser, capsys):
    """The rising / new panel, a topic's detail view (words with probabilities, history,
    related topics from the topic-topic matrix, supertopic), the chart limited to the picked
    topics (default: the top rising), and the infer box, each screenshotted."""
    hierarchy = {"supertopics": [
        {"id": 0, "prevalence": 0.55, "topics": [[4, 0.6], [3, 0.4]]},
        {"id": 1, "prevalence": 0.45, "topics": [[0, 0.5], [1, 0.3], [5, 0.2]]}]}
    # Eight refreshes: topic 4 ("terrorists") rises throughout and 0 ("tariff") falls; 2 dies
    # at v4, where 5 is born on words no topic had ("internet") and rises from then on; 3
    # and 4 share documents (the topic-topic matrix).
    old = list(THEMES.values())
    new = [*old[:2], NEW_THEME, *old[3:]]
    plan = [([8, 4, 3, 2, 1], None), ([7, 4, 3, 2, 1.4], None), ([6, 4, 3, 2, 2], None),
            ([5, 4, 1, 2, 2.8], new), ([4.3, 4, 1.5, 2, 3.9], new),
            ([3.7, 4, 2.2, 2, 5.4], new), ([3.2, 4, 3.3, 2, 7.5], new),
            ([2.8, 4, 5, 2, 10], new)]
    for seed, (prevalence, themes) in enumerate(plan):
        kw = snapshot_kwargs(prevalence, ids=None if themes is None else [0, 1, 5, 3, 4],
                             seed=seed, themes=themes)
        publisher.publish(**coupled(kw, 3, 4, hierarchy if seed == len(plan) - 1 else None))
    browser.get(server.url + "/")
    shown = browser.wait_for(TRENDS_SHOWN, "the rising / new panel")
    assert shown["source"] == "api", shown  # /v1/trends, not the page's own fallback
    assert shown["rising"][0] == 4, shown
    assert 5 in shown["new"] and 0 in shown["falling"], shown
    # The panel comes first on the page.
    order = browser.js("return Array.from(document.querySelectorAll('main > section.card'))"
                       ".filter(s => !s.hidden).map(s => s.id);")
    assert order[0] == "trends-card", order
    browser.js("window.scrollTo(0, 0);")
    save_screenshot(browser, "rising-panel.png", capsys)

    # The chart shows the picked topics only, by default the top rising (new first).
    chips = browser.wait_for(f"const c = (function(){{{CHIPS}}})(); return c.length ? c : null;",
                             "the chart's picks")
    assert 4 in chips and 5 in chips and len(chips) <= 5, chips
    assert browser.wait_for(f"const s = (function(){{{SERIES}}})(); "
                            f"return s.length === {len(chips)} ? s : null;",
                            "the picked series") == chips
    browser.js("document.querySelector('#topics tr[data-topic-id=\"4\"] input.pick').click();")
    after = browser.wait_for(f"const s = (function(){{{SERIES}}})(); "
                             "return s.includes(4) ? null : s;", "topic 4 leaving the chart")
    assert sorted(after) == sorted(set(chips) - {4})

    # A rising topic opens its detail view.
    browser.js("document.querySelector('#rising-list li[data-topic-id=\"4\"] .trend-open')"
               ".click();")
    browser.wait_for("return document.getElementById('detail-card').dataset.loaded === '4';",
                     "the detail view of topic 4")
    detail = browser.js("""
        const card = document.getElementById('detail-card');
        return {
          heading: document.getElementById('detail-heading').innerText,
          words: Array.from(card.querySelectorAll('#detail-words li')).map(li =>
            [li.querySelector('.wb-word').innerText, li.querySelector('.wb-p').innerText]),
          points: card.querySelectorAll('#detail-chart circle').length,
          related: Array.from(card.querySelectorAll('#detail-related li[data-topic-id]'))
            .map(li => Number(li.dataset.topicId)),
          superVisible: !document.getElementById('detail-super-box').hidden,
          superText: document.getElementById('detail-super').innerText,
          hash: location.hash,
        };""")
    assert "terrorists" in detail["heading"], detail
    assert detail["words"][0][0] == "terrorists" and len(detail["words"]) >= 10, detail
    probs = [float(p) for _, p in detail["words"]]
    assert probs == sorted(probs, reverse=True) and 0 < probs[0] < 1, probs
    assert detail["points"] == len(plan), detail  # in every snapshot
    assert detail["related"] == [3], detail  # the only pair above chance
    assert detail["superVisible"] and "#3" in detail["superText"], detail
    assert detail["hash"] == "#topic-4"
    browser.js("document.getElementById('detail-card').scrollIntoView();")
    save_screenshot(browser, "topic-detail.png", capsys)

    # The infer box: a text about the navy gets the navy topic first.
    browser.js("""
        const t = document.getElementById('infer-text');
        t.value = 'The navy must have more vessels: the fleet, its squadron and its seamen '
                + 'guard the coast and every harbor, and naval officers ask for a new dock.';
        document.getElementById('infer-run').click();""")
    result = browser.wait_for("""
        const ol = document.getElementById('infer-result');
        if (ol.dataset.state !== 'done') return null;
        return {ids: Array.from(ol.children).map(li => Number(li.dataset.topicId)),
                status: document.getElementById('infer-status').innerText};""",
                              "the topics of the pasted text")
    assert result["ids"][0] == 1, result
    assert f"words known to snapshot v{len(plan)}" in result["status"], result
    browser.js("document.getElementById('infer-card').scrollIntoView();")
    save_screenshot(browser, "infer-box.png", capsys)


@needs_chromium
def test_page_waits_out_a_full_waiting_room(publisher, browser):
    """Past ``http.max_waiters`` the page's long poll is answered 503 with Retry-After: the page
    stays live, comes back when told, and still follows the next snapshot."""
    publisher.publish(**snapshot_kwargs([5, 3, 2, 1, 1], seed=0))
    metrics = Metrics()
    refused = {"route": "/v1/snapshots/latest", "code": "503"}
    # The holder's long poll outlasts everything below, however slow the browser: the room
    # stays full until snapshot 2 releases it.
    hold = 10 * PATIENCE
    with ApiServer(publisher, metrics=metrics, max_wait_seconds=hold, max_waiters=1) as srv:
        def hold_the_only_place():
            req = urllib.request.Request(f"{srv.url}/v1/snapshots/latest?wait={hold:g}",
                                         headers={"If-None-Match": '"1"'})
            with urllib.request.urlopen(req, timeout=2 * hold) as resp:
                resp.read()

        holder = threading.Thread(target=hold_the_only_place)
        holder.start()
        deadline = time.monotonic() + PATIENCE
        while srv.waiting < 1:
            assert time.monotonic() < deadline, "the holder's long poll is not waiting"
            time.sleep(0.05)
        browser.get(srv.url + "/")
        browser.wait_for(f"return {VERSION} === '1';", "snapshot 1")
        # Two refusals: the page has handled the first one and come back.
        deadline = time.monotonic() + PATIENCE
        while (metrics.registry.get_sample_value("anchorstream_http_requests_total", refused)
               or 0) < 2:
            assert time.monotonic() < deadline, "the page's long polls were not refused"
            time.sleep(0.1)
        assert browser.js("return document.getElementById('conn').dataset.state;") == "live"
        publisher.publish(**snapshot_kwargs([4, 3, 2, 2, 2], seed=1))
        browser.wait_for(f"return {VERSION} === '2';", "snapshot 2")
        holder.join(PATIENCE)
        assert not holder.is_alive()


def test_png_decoder_reads_every_filter_type():
    """decode_png against images whose rows use each PNG filter, and a blank one."""
    rng = np.random.default_rng(7)
    # Random pixels, plus flat runs and gradients (where the filters' predictions matter).
    img = rng.integers(0, 256, size=(12, 9, 3), dtype=np.uint8)
    img[3] = 200
    img[6] = np.arange(9 * 3, dtype=np.uint8).reshape(9, 3) * 9
    filters = [0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 4, 1]
    assert np.array_equal(decode_png(encode_png(img, filters)), img)
    assert blank_page_problems(img.repeat(40, axis=0).repeat(40, axis=1)) == []

    blank = np.full((400, 800, 3), 246, dtype=np.uint8)
    assert np.array_equal(decode_png(encode_png(blank, [4] * 400)), blank)
    problems = blank_page_problems(blank, [(89, 161, 79)])
    assert len(problems) == 3, problems


def test_static_files_are_served(server):
    """The page's own files come from the daemon with sensible types (no CDN, no build step)."""
    for name, ctype in (("", "text/html"), ("static/app.js", "javascript"),
                        ("static/app.css", "text/css")):
        with urllib.request.urlopen(f"{server.url}/{name}", timeout=PATIENCE) as resp:
            assert resp.status == 200 and ctype in resp.headers["Content-Type"]
            body = resp.read().decode("utf-8")
        # Offline: nothing is loaded from another origin.
        assert "http://" not in body.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in body
