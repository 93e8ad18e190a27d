// anchorstream topic browser: long-polls the latest snapshot and shows, in this order, what is
// rising and new (/v1/trends), a topic's detail view (words, history, related topics,
// supertopic), a line chart of the prevalence of the topics the user picks (default: the top
// rising), a box that runs /v1/infer on pasted text, and the table of all topics.
//
// Plain browser JavaScript, no framework and no build step, so the page works offline and the
// daemon serves it as a static file. Everything that comes from the stream (words, anchors) is
// put into the page with textContent, never innerHTML: documents are untrusted input.
"use strict";

(() => {
  const WAIT_SECONDS = 25;          // long-poll length; the server caps it (http.max_wait_seconds)
  const TOP_WORDS = 10;             // words shown per topic
  const HISTORY_CONCURRENCY = 6;    // parallel /v1/topics/{id} requests after each snapshot
  const TREND_ITEMS = 5;            // topics per list of the rising / new panel
  const DEFAULT_PICKS = 5;          // topics the chart shows until the user picks
  const SVG = "http://www.w3.org/2000/svg";
  // Tableau-like qualitative palette: distinguishable in light and dark mode. A topic keeps its
  // colour for as long as it keeps its id, because ids are stable across snapshots.
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6", "#2f6db5", "#d37295", "#8cd17d", "#b6992d",
    "#499894", "#e17b2b", "#a0cbe8", "#f1ce63", "#79706e", "#d4a6c8"];

  const $ = (id) => document.getElementById(id);
  const state = {
    etag: null,
    snapshot: null,      // the latest /v1/snapshots/latest body
    listing: [],         // /v1/snapshots "snapshots": [{version, created_at, ...}], oldest first
    history: new Map(),  // topic id -> [{version, prevalence, ...}] oldest first
    generation: 0,       // guards against an older history fetch finishing after a newer one
    skewMs: 0,           // server clock minus browser clock, from the Date header
    token: sessionStorage.getItem("anchorstream.token"),
    tokenWaiter: null,
    sort: localStorage.getItem("anchorstream.sort") || "prevalence",
    highlight: null,     // topic id picked out in the chart
    trends: null,        // the /v1/trends body, or one computed here from the history
    trendsSource: null,  // "api" (/v1/trends) or "page" (this daemon has none)
    picked: null,        // Set of topic ids in the chart; null = the default (top rising)
    detailId: null,      // topic id of the open detail view
    detailGen: 0,
  };

  const colorOf = (id) => PALETTE[((id % PALETTE.length) + PALETTE.length) % PALETTE.length];
  const pct = (p) => (p == null ? "–" : `${(100 * p).toFixed(1)}%`);
  const fmtInt = (n) => (n == null ? "–" : Number(n).toLocaleString("en-US"));
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c != null) node.append(c);
    return node;
  }

  function svg(tag, attrs = {}) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) if (v != null) node.setAttribute(k, String(v));
    return node;
  }

  // ------------------------------------------------------------------------------------------
  // talking to the API

  async function api(path, headers = {}, body = undefined) {
    const h = { Accept: "application/json", ...headers };
    if (state.token) h.Authorization = `Bearer ${state.token}`;
    const init = { headers: h, cache: "no-store" };
    if (body !== undefined) {
      init.method = "POST";
      init.body = JSON.stringify(body);
      h["Content-Type"] = "application/json";
    }
    // no-store: the ETag logic is ours; the browser cache must neither answer nor revalidate.
    const resp = await fetch(path, init);
    const date = Date.parse(resp.headers.get("Date") || "");
    if (!Number.isNaN(date)) {
      // The Date header has a one-second resolution: ignore differences that small.
      const skew = date - Date.now();
      state.skewMs = Math.abs(skew) > 2000 ? skew : 0;
    }
    return resp;
  }

  function setConn(kind, text) {
    const p = $("conn");
    if (p.dataset.state !== kind || $("conn-text").textContent !== text) {
      p.dataset.state = kind;
      $("conn-text").textContent = text;
    }
  }

  function askForToken() {
    const form = $("token-form");
    form.hidden = false;
    $("token-input").focus();
    setConn("error", "the API needs a bearer token");
    return new Promise((resolve) => { state.tokenWaiter = resolve; });
  }

  async function pollForever() {
    let backoff = 1000;
    let answered = false;
    for (;;) {
      const started = Date.now();
      try {
        const headers = state.etag ? { "If-None-Match": state.etag } : {};
        // The first request does not wait, so that an empty daemon says so at once.
        const wait = answered ? WAIT_SECONDS : 0;
        const resp = await api(`v1/snapshots/latest?wait=${wait}`, headers);
        answered = true;
        if (resp.status === 200) {
          state.etag = resp.headers.get("ETag");
          const body = await resp.json();
          setConn("live", "live");
          onSnapshot(body);
        } else if (resp.status === 304) {
          setConn("live", "live");
        } else if (resp.status === 404) {
          setConn("waiting", "waiting for the first snapshot");
          showEmpty();
        } else if (resp.status === 401) {
          await askForToken();
          continue;
        } else if (resp.status === 503 && resp.headers.get("Retry-After")) {
          // Too many long polls open at once: the server says when to come back. Not an
          // error: the page stays as it is.
          const seconds = Number(resp.headers.get("Retry-After"));
          await sleep(1000 * Math.min(Math.max(Number.isFinite(seconds) ? seconds : 1, 1), 60));
          continue;
        } else {
          throw new Error(`HTTP ${resp.status}`);
        }
        backoff = 1000;
        // A server that answers at once (too many long polls, or an old daemon without
        // ?wait) must not make this loop spin.
        if (resp.status !== 200 && Date.now() - started < 1000) await sleep(1000);
      } catch (err) {
        setConn("error", `reconnecting… (${err.message || err})`);
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 30000);
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // a new snapshot

  const CARDS = ["trends-card", "chart-card", "infer-card", "topics-card"];

  function showEmpty() {
    $("empty").hidden = false;
    for (const id of CARDS) $(id).hidden = true;
  }

  function onSnapshot(snap) {
    state.snapshot = snap;
    $("empty").hidden = true;
    for (const id of CARDS) $(id).hidden = false;
    const v = $("version");
    v.textContent = `v${snap.version}`;
    v.dataset.version = String(snap.version);
    document.body.dataset.version = String(snap.version);
    $("docs").textContent = fmtInt(snap.num_docs);
    $("ntopics").textContent = fmtInt(snap.num_topics ?? snap.topics.length);
    $("vocab").textContent = fmtInt(snap.vocab_size);
    document.title = `anchorstream · v${snap.version} · ${snap.topics.length} topics`;
    tickAge();
    renderTopics();
    refreshHistory(snap.version);
    if (state.detailId != null) openTopic(state.detailId, { scroll: false });
  }

  async function refreshHistory(version) {
    const gen = ++state.generation;
    try {
      const listResp = await api("v1/snapshots");
      if (!listResp.ok) throw new Error(`HTTP ${listResp.status}`);
      const listing = (await listResp.json()).snapshots || [];
      const ids = state.snapshot.topics.map((t) => t.id);
      const history = new Map();
      let next = 0;
      const worker = async () => {
        while (next < ids.length) {
          const id = ids[next++];
          const resp = await api(`v1/topics/${id}`);
          if (resp.ok) history.set(id, (await resp.json()).history || []);
        }
      };
      await Promise.all(Array.from({ length: HISTORY_CONCURRENCY }, worker));
      const trends = await fetchTrends();
      if (gen !== state.generation) return;  // a newer snapshot arrived meanwhile
      state.listing = listing;
      state.history = history;
      state.trendsSource = trends ? "api" : "page";
      state.trends = trends || trendsFromHistory();
      renderTrends();
      renderTopics();
      renderChart();
    } catch (err) {
      if (gen === state.generation) {
        setConn("error", `could not load the topic history (${err.message || err})`);
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // topics table

  // Change of a topic's prevalence since the snapshot before the current one, from its history.
  function changeOf(topic) {
    const hist = state.history.get(topic.id);
    const current = state.snapshot.version;
    if (!hist) return { known: false };
    const before = hist.filter((h) => h.version < current);
    if (before.length === 0) {
      const older = state.listing.some((s) => s.version < current);
      return { known: true, isNew: older };
    }
    const prev = before[before.length - 1];
    return { known: true, delta: topic.prevalence - prev.prevalence, since: prev.version };
  }

  function sortedTopics() {
    const topics = [...state.snapshot.topics];
    const by = {
      id: (a, b) => a.id - b.id,
      prevalence: (a, b) => b.prevalence - a.prevalence || a.id - b.id,
      change: (a, b) => {
        const da = changeOf(a).delta ?? 0;
        const db = changeOf(b).delta ?? 0;
        return db - da || b.prevalence - a.prevalence;
      },
    }[state.sort] || ((a, b) => b.prevalence - a.prevalence);
    return topics.sort(by);
  }

  function renderTopics() {
    const snap = state.snapshot;
    const maxPrev = Math.max(...snap.topics.map((t) => t.prevalence), 1e-9);
    const births = new Set(((snap.extra || {}).churn || {}).births || []);
    const picked = new Set(pickedIds());
    const rows = sortedTopics().map((t) => {
      const color = colorOf(t.id);
      const words = (t.top_words || []).slice(0, TOP_WORDS);
      const wordList = el("ol", { class: "words", "aria-label": `top words of topic ${t.id}` });
      words.forEach(([w, p]) => {
        wordList.append(el("li", {
          class: w === t.anchor ? "word anchor-word" : "word",
          title: `p(${w} | topic ${t.id}) = ${Number(p).toPrecision(3)}`,
          text: w,
        }));
      });
      const width = Math.max(0.5, (100 * t.prevalence) / maxPrev);
      const bar = el("div", {
        class: "bar-track", role: "img",
        "aria-label": `prevalence ${pct(t.prevalence)}`,
      }, el("div", { class: "bar-fill", style: `width:${width.toFixed(2)}%;background:${color}` }));
      const ch = changeOf(t);
      let change;
      if (!ch.known) change = el("span", { class: "delta muted", text: "…" });
      else if (births.has(t.id) || ch.isNew) change = el("span", { class: "delta new", text: "new" });
      else {
        const pts = 100 * ch.delta;
        const dir = pts > 0.05 ? "up" : pts < -0.05 ? "down" : "flat";
        const arrow = { up: "▲", down: "▼", flat: "▬" }[dir];
        const words = { up: "rose", down: "fell", flat: "steady" }[dir];
        change = el("span", {
          class: `delta ${dir}`,
          title: `${words} by ${Math.abs(pts).toFixed(2)} percentage points since v${ch.since}`,
        }, el("span", { "aria-hidden": "true", text: `${arrow} ` }),
        el("span", { class: "visually-hidden", text: `${words} ` }),
        `${dir === "flat" ? "±" : pts > 0 ? "+" : "−"}${Math.abs(pts).toFixed(1)} pts`);
      }
      const box = el("input", { type: "checkbox", class: "pick",
        "aria-label": `show topic #${t.id} in the chart`, checked: picked.has(t.id) });
      box.addEventListener("change", () => togglePick(t.id, box.checked));
      const open = el("button", { type: "button", class: "link id-link",
        title: `open topic #${t.id}` },
      el("span", { class: "swatch", style: `background:${color}`, "aria-hidden": "true" }),
      `#${t.id}`);
      open.addEventListener("click", () => openTopic(t.id));
      const tr = el("tr", {
        "data-topic-id": t.id, tabindex: 0,
        class: state.highlight === t.id ? "topic picked" : "topic",
      },
      el("td", { class: "c-pick" }, box),
      el("th", { scope: "row", class: "c-id" }, open),
      el("td", { class: "c-anchor" },
        t.anchor == null ? el("span", { class: "muted", text: "none" })
          : el("strong", { class: "anchor", text: t.anchor })),
      el("td", { class: "c-words" }, wordList),
      el("td", { class: "c-prev" }, el("div", { class: "prev" }, bar,
        el("span", { class: "prev-num", text: pct(t.prevalence) }))),
      el("td", { class: "c-delta" }, change));
      tr.addEventListener("mouseenter", () => pick(t.id));
      tr.addEventListener("mouseleave", () => pick(null));
      tr.addEventListener("focus", () => pick(t.id));
      tr.addEventListener("blur", () => pick(null));
      return tr;
    });
    $("topics").replaceChildren(...rows);
  }

  function pick(id) {
    state.highlight = id;
    for (const tr of $("topics").children) {
      tr.classList.toggle("picked", Number(tr.dataset.topicId) === id);
    }
    const box = $("chart");
    const inChart = [...box.querySelectorAll("[data-series]")]
      .some((g) => Number(g.dataset.series) === id);
    box.classList.toggle("has-pick", id != null && inChart);
    for (const g of box.querySelectorAll("[data-series]")) {
      g.classList.toggle("picked", Number(g.dataset.series) === id);
    }
  }

  // ------------------------------------------------------------------------------------------
  // line chart (hand-written SVG)

  function niceStep(max, ticks) {
    const raw = max / ticks;
    const mag = 10 ** Math.floor(Math.log10(raw));
    const n = raw / mag;
    return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 2.5 ? 2.5 : n <= 5 ? 5 : 10) * mag;
  }

  function renderChart() {
    const box = $("chart");
    const snap = state.snapshot;
    const versions = state.listing.map((s) => s.version);
    if (!versions.includes(snap.version)) versions.push(snap.version);
    versions.sort((a, b) => a - b);
    const col = new Map(versions.map((v, i) => [v, i]));
    const ids = pickedIds();
    renderPicks(ids);
    const series = snap.topics.filter((t) => ids.includes(t.id)).map((t) => {
      const points = new Array(versions.length).fill(null);
      for (const h of state.history.get(t.id) || []) {
        if (col.has(h.version) && h.prevalence != null) points[col.get(h.version)] = h.prevalence;
      }
      points[col.get(snap.version)] = t.prevalence;
      return { id: t.id, anchor: t.anchor, color: colorOf(t.id), points };
    });

    const width = Math.max(box.clientWidth, 280);
    const height = Math.round(Math.min(320, Math.max(200, width * 0.32)));
    // Direct labels at the right end of the lines replace a legend, up to a number that fits.
    const labelled = series.length <= Math.floor((height - 46) / 13);
    const m = { top: 12, right: labelled ? 130 : 16, bottom: 34, left: 48 };
    const iw = width - m.left - m.right;
    const ih = height - m.top - m.bottom;
    const ymaxData = Math.max(...series.flatMap((s) => s.points.filter((p) => p != null)), 0.01);
    const step = niceStep(ymaxData, 5);
    const ymax = Math.ceil(ymaxData / step) * step;
    const x = (i) => m.left + (versions.length === 1 ? iw / 2 : (i * iw) / (versions.length - 1));
    const y = (p) => m.top + ih - (p / ymax) * ih;

    const root = svg("svg", {
      width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-labelledby": "chart-caption",
    });
    const grid = svg("g", { class: "grid" });
    for (let v = 0; v <= ymax + step / 2; v += step) {
      grid.append(svg("line", { x1: m.left, x2: width - m.right, y1: y(v), y2: y(v) }));
      const label = svg("text", { x: m.left - 8, y: y(v), "text-anchor": "end",
        "dominant-baseline": "middle" });
      label.textContent = `${+(100 * v).toFixed(1)}%`;
      grid.append(label);
    }
    // At most ~8 version labels, always the first and the last.
    const every = Math.max(1, Math.ceil(versions.length / Math.max(2, Math.floor(iw / 70))));
    versions.forEach((v, i) => {
      if (i % every !== 0 && i !== versions.length - 1) return;
      if (i !== versions.length - 1 && versions.length - 1 - i < every / 2) return;
      const label = svg("text", { x: x(i), y: height - m.bottom + 18, "text-anchor": "middle" });
      label.textContent = `v${v}`;
      grid.append(label);
    });
    const axisTitle = svg("text", { x: width - m.right, y: height - 2, "text-anchor": "end",
      class: "axis-title" });
    axisTitle.textContent = "snapshot version →";
    grid.append(axisTitle);
    root.append(grid);

    const lines = svg("g", { class: "lines" });
    for (const s of series) {
      const g = svg("g", { "data-series": s.id, class: state.highlight === s.id ? "picked" : null,
        style: `--c:${s.color}` });
      let d = "";
      let pen = false;
      s.points.forEach((p, i) => {
        if (p == null) { pen = false; return; }
        d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(p).toFixed(1)}`;
        pen = true;
      });
      const path = svg("path", { d, class: "line" });
      const title = svg("title");
      const known = s.points.filter((p) => p != null);
      title.textContent = `topic #${s.id}${s.anchor ? ` (${s.anchor})` : ""}: ` +
        `${pct(known[0])} → ${pct(known[known.length - 1])}`;
      path.append(title);
      g.append(path);
      if (versions.length <= 40) {
        s.points.forEach((p, i) => {
          if (p != null) g.append(svg("circle", { cx: x(i), cy: y(p), r: 2.6, class: "pt" }));
        });
      }
      g.addEventListener("mouseenter", () => pick(s.id));
      g.addEventListener("mouseleave", () => pick(null));
      lines.append(g);
    }
    root.append(lines);
    if (labelled) root.append(endLabels(series, x(versions.length - 1) + 8, y, m.top,
      height - m.bottom));
    box.replaceChildren(root);
    box.classList.toggle("has-pick", state.highlight != null);
    $("chart-caption").textContent = `Line chart: prevalence of ${series.length} picked topics across ` +
      `${versions.length} retained snapshot${versions.length === 1 ? "" : "s"} ` +
      `(v${versions[0]} to v${versions[versions.length - 1]}).`;
    renderChartTable(versions, series);
  }

  // "#id anchor" beside the last point of each line, nudged apart so that none overlap.
  function endLabels(series, x0, y, top, bottom) {
    const gap = 13;
    const items = series
      .filter((s) => s.points[s.points.length - 1] != null)
      .map((s) => ({ s, want: y(s.points[s.points.length - 1]) }))
      .sort((a, b) => a.want - b.want);
    let prev = -Infinity;
    for (const it of items) { it.at = Math.max(it.want, prev + gap); prev = it.at; }
    // Pushed past the bottom: shift the whole stack up, keeping the spacing.
    const overflow = items.length ? items[items.length - 1].at - bottom : 0;
    if (overflow > 0) {
      let next = Infinity;
      for (let i = items.length - 1; i >= 0; i--) {
        items[i].at = Math.min(items[i].at - overflow, next - gap);
        next = items[i].at;
      }
      for (const it of items) it.at = Math.max(it.at, top);
    }
    const g = svg("g", { class: "end-labels" });
    for (const it of items) {
      const lab = svg("g", { "data-series": it.s.id, style: `--c:${it.s.color}`,
        class: state.highlight === it.s.id ? "picked" : null });
      const text = svg("text", { x: x0, y: it.at });
      const id = svg("tspan", { class: "lab-id" });
      id.textContent = `#${it.s.id}`;
      text.append(id, it.s.anchor ? ` ${it.s.anchor}` : "");
      lab.append(text);
      lab.addEventListener("mouseenter", () => pick(it.s.id));
      lab.addEventListener("mouseleave", () => pick(null));
      g.append(lab);
    }
    return g;
  }

  function renderChartTable(versions, series) {
    const head = el("tr", {}, el("th", { scope: "col", text: "Topic" }),
      ...versions.map((v) => el("th", { scope: "col", text: `v${v}` })));
    const rows = series.map((s) => el("tr", {},
      el("th", { scope: "row", text: `#${s.id}${s.anchor ? ` ${s.anchor}` : ""}` }),
      ...s.points.map((p) => el("td", { text: pct(p) }))));
    $("chart-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
  }

  // ------------------------------------------------------------------------------------------
  // rising and new (/v1/trends)

  // The trends from the daemon, or null when it has no /v1/trends (an older daemon): then the
  // page computes a simpler version from the retained snapshots (trendsFromHistory).
  async function fetchTrends() {
    try {
      const resp = await api(`v1/trends?limit=${TREND_ITEMS * 2}`);
      if (resp.ok) return await resp.json();
    } catch (err) {
      // the page's own trends below
    }
    return null;
  }

  // What /v1/trends says, from the histories the page has: the change of each live topic's
  // prevalence across the retained snapshots (score), born = first seen after the oldest one.
  function trendsFromHistory() {
    const snap = state.snapshot;
    const oldest = Math.min(...state.listing.map((s) => s.version), snap.version);
    const items = snap.topics.map((t) => {
      const series = (state.history.get(t.id) || []).map((h) => ({
        version: h.version, created_at: h.created_at, prevalence: h.prevalence,
      }));
      if (!series.length || series[series.length - 1].version !== snap.version) {
        series.push({ version: snap.version, created_at: snap.created_at,
          prevalence: t.prevalence });
      }
      // A topic born in the window rose from nothing.
      const born = series[0].version > oldest ? series[0].version : null;
      const score = t.prevalence - (born != null ? 0 : series[0].prevalence);
      return { id: t.id, anchor: t.anchor, top_words: (t.top_words || []).map(([w]) => w),
        score, prevalence: t.prevalence, born_version: born, series };
    });
    return {
      version: snap.version, created_at: snap.created_at,
      window: { snapshots: state.listing.length, from_version: oldest, to_version: snap.version },
      rising: items.filter((t) => t.score > 0).sort((a, b) => b.score - a.score),
      falling: items.filter((t) => t.score < 0).sort((a, b) => a.score - b.score),
      new: items.filter((t) => t.born_version != null && t.score > 0)
        .sort((a, b) => b.score - a.score),
      gone: [],
    };
  }

  // Change of a trend's prevalence across its series, in percentage points.
  const seriesChange = (tr) => {
    const s = tr.series || [];
    return s.length ? 100 * (s[s.length - 1].prevalence - s[0].prevalence) : 0;
  };

  function sparkline(series, color) {
    const w = 96;
    const h = 26;
    const root = svg("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`,
      class: "spark", "aria-hidden": "true" });
    const pts = (series || []).filter((p) => p.prevalence != null);
    if (!pts.length) return root;
    const max = Math.max(...pts.map((p) => p.prevalence), 1e-9);
    const x = (i) => (pts.length === 1 ? w / 2 : 2 + (i * (w - 4)) / (pts.length - 1));
    const y = (p) => h - 3 - (p / max) * (h - 6);
    const d = pts.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.prevalence).toFixed(1)}`)
      .join("");
    root.append(svg("path", { d, class: "spark-line", style: `stroke:${color}` }));
    const last = pts[pts.length - 1];
    root.append(svg("circle", { cx: x(pts.length - 1), cy: y(last.prevalence), r: 2.4,
      style: `fill:${color}` }));
    return root;
  }

  function trendItem(tr, kind) {
    const color = colorOf(tr.id);
    const pts = seriesChange(tr);
    const open = el("button", { type: "button", class: "trend-open",
      title: `open topic #${tr.id}` },
    el("span", { class: "swatch", style: `background:${color}`, "aria-hidden": "true" }),
    el("span", { class: "trend-id", text: `#${tr.id}` }),
    el("strong", { class: "anchor", text: tr.anchor || "–" }));
    open.addEventListener("click", () => openTopic(tr.id));
    const change = el("span", {
      class: `trend-num ${pts >= 0 ? "up" : "down"}`,
      title: `trend score ${Number(tr.score).toPrecision(3)}; prevalence ${pct(tr.prevalence)}`,
      text: `${pts >= 0 ? "+" : "−"}${Math.abs(pts).toFixed(1)} pts`,
    });
    const badge = kind === "new" && tr.born_version != null
      ? el("span", { class: "delta new", text: `new in v${tr.born_version}` }) : null;
    return el("li", { class: "trend", "data-topic-id": tr.id, "data-kind": kind },
      el("div", { class: "trend-head" }, open, badge),
      el("div", { class: "trend-body" },
        el("span", { class: "trend-words", text: (tr.top_words || []).slice(0, 5).join(" ") }),
        sparkline(tr.series, color), change));
  }

  function renderTrends() {
    const tr = state.trends;
    const lists = { "new-list": tr.new || [], "rising-list": tr.rising || [],
      "falling-list": tr.falling || [] };
    const kinds = { "new-list": "new", "rising-list": "rising", "falling-list": "falling" };
    for (const [id, items] of Object.entries(lists)) {
      const shown = items.slice(0, TREND_ITEMS).map((t) => trendItem(t, kinds[id]));
      if (!shown.length) {
        shown.push(el("li", { class: "trend-none muted",
          text: id === "new-list" ? "no new topic in the window" : "none" }));
      }
      $(id).replaceChildren(...shown);
    }
    $("trends").dataset.source = state.trendsSource;
    const w = tr.window || {};
    const span = w.from_version != null && w.from_version !== w.to_version
      ? `from v${w.from_version} to v${w.to_version}` : "over the latest snapshot only";
    $("trends-hint").textContent = state.trendsSource === "api"
      ? `Prevalence trends ${span} (/v1/trends).`
      : `Change of prevalence ${span}, computed in the page (this daemon has no /v1/trends).`;
  }

  // ------------------------------------------------------------------------------------------
  // which topics the chart shows

  function pickedIds() {
    const alive = new Set(state.snapshot.topics.map((t) => t.id));
    if (state.picked) return [...state.picked].filter((id) => alive.has(id));
    // Default: the top rising topics (new ones first), then the ones whose prevalence moved
    // most (either way) across the retained snapshots, so that a quiet window still shows
    // what changes.
    const ids = [];
    const tr = state.trends || {};
    for (const t of [...(tr.new || []), ...(tr.rising || [])]) {
      if (alive.has(t.id) && !ids.includes(t.id)) ids.push(t.id);
    }
    const moved = (t) => {
      const h = state.history.get(t.id) || [];
      return h.length ? Math.abs(t.prevalence - h[0].prevalence) : 0;
    };
    const rest = state.snapshot.topics.filter((t) => !ids.includes(t.id))
      .sort((a, b) => moved(b) - moved(a) || b.prevalence - a.prevalence);
    for (const t of rest) ids.push(t.id);
    return ids.slice(0, DEFAULT_PICKS);
  }

  function setPicked(ids) {
    state.picked = ids == null ? null : new Set(ids);
    renderTopics();
    renderChart();
  }

  function togglePick(id, on) {
    const ids = new Set(pickedIds());
    if (on) ids.add(id); else ids.delete(id);
    setPicked([...ids]);
  }

  function renderPicks(ids) {
    const byId = new Map(state.snapshot.topics.map((t) => [t.id, t]));
    const chips = ids.map((id) => {
      const t = byId.get(id);
      const remove = el("button", { type: "button", class: "chip-x",
        "aria-label": `remove topic #${id} from the chart`, text: "×" });
      remove.addEventListener("click", () => togglePick(id, false));
      return el("span", { class: "chip", "data-topic-id": id, style: `--c:${colorOf(id)}` },
        el("span", { class: "swatch", style: `background:${colorOf(id)}`, "aria-hidden": "true" }),
        `#${id} ${t && t.anchor ? t.anchor : ""}`, remove);
    });
    const reset = el("button", { type: "button", class: "link", text: "top rising" });
    reset.addEventListener("click", () => setPicked(null));
    const all = el("button", { type: "button", class: "link", text: "all topics" });
    all.addEventListener("click", () => setPicked(state.snapshot.topics.map((t) => t.id)));
    $("picks").replaceChildren(...chips, el("span", { class: "hint" },
      state.picked ? "picked by you · show " : "the top rising, then those that moved most · show ",
      reset, " or ", all));
  }

  // ------------------------------------------------------------------------------------------
  // a topic's detail view

  function openTopic(id, { scroll = true } = {}) {
    state.detailId = id;
    const gen = ++state.detailGen;
    if (location.hash !== `#topic-${id}`) history.replaceState(null, "", `#topic-${id}`);
    const card = $("detail-card");
    card.hidden = false;
    card.dataset.topicId = String(id);
    card.dataset.loaded = "";
    $("detail-heading").textContent = `Topic #${id}`;
    if (scroll) {
      card.scrollIntoView({ block: "start" });
      card.focus({ preventScroll: true });
    }
    api(`v1/topics/${id}`).then(async (resp) => {
      if (gen !== state.detailGen) return;
      if (!resp.ok) {
        $("detail-words").replaceChildren(el("li", { class: "muted",
          text: resp.status === 404 ? "this topic is in no retained snapshot" : `HTTP ${resp.status}` }));
        return;
      }
      const body = await resp.json();
      if (gen === state.detailGen) renderDetail(body);
    }).catch((err) => setConn("error", `could not load topic ${id} (${err.message || err})`));
  }

  function closeTopic() {
    state.detailId = null;
    state.detailGen++;
    $("detail-card").hidden = true;
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  }

  function renderDetail(body) {
    const id = body.id;
    const topic = body.topic;
    const hist = body.history || [];
    const last = hist[hist.length - 1];
    const anchor = topic ? topic.anchor : last && last.anchor;
    $("detail-heading").replaceChildren(
      el("span", { class: "swatch", style: `background:${colorOf(id)}`, "aria-hidden": "true" }),
      `Topic #${id} `, el("strong", { class: "anchor", text: anchor || "(no anchor)" }),
      topic ? "" : el("span", { class: "delta down", text: " gone" }));
    const words = topic ? topic.top_words : (last ? last.top_words.map((w) => [w, null]) : []);
    const pmax = Math.max(...words.map(([, p]) => p || 0), 1e-12);
    $("detail-words").replaceChildren(...words.map(([w, p]) => el("li", {
      class: w === anchor ? "anchor-word" : null },
    el("span", { class: "wb-word", text: w }),
    el("span", { class: "wb-track" }, el("span", { class: "wb-fill",
      style: `width:${(100 * (p || 0) / pmax).toFixed(1)}%;background:${colorOf(id)}` })),
    el("span", { class: "wb-p", text: p == null ? "–" : Number(p).toFixed(4) }))));

    const trend = ["new", "rising", "falling"].map((k) => ((state.trends || {})[k] || [])
      .find((t) => t.id === id)).find((t) => t);
    const facts = [["Prevalence", topic ? pct(topic.prevalence) : "gone"],
      ["First seen", hist.length ? `v${hist[0].version}` : "–"],
      ["Snapshots", String(hist.length)]];
    if (trend) facts.push(["Trend score", Number(trend.score).toPrecision(3)]);
    $("detail-facts").replaceChildren(...facts.map(([k, v]) => el("div", {},
      el("dt", { text: k }), el("dd", { text: v }))));
    $("detail-chart").replaceChildren(miniChart(hist, colorOf(id)));

    const related = body.related || [];
    $("detail-related").replaceChildren(...(related.length ? related.map((r) => {
      const b = el("button", { type: "button", class: "link" },
        el("span", { class: "swatch", style: `background:${colorOf(r.id)}`, "aria-hidden": "true" }),
        `#${r.id} ${r.anchor || ""}`);
      b.addEventListener("click", () => openTopic(r.id));
      return el("li", { "data-topic-id": r.id }, b,
        el("span", { class: "muted", text: ` ×${Number(r.lift).toFixed(2)}` }));
    }) : [el("li", { class: "muted", text: "none above chance" })]));
    renderSuper(id);
    $("detail-card").dataset.loaded = String(id);
  }

  // The supertopic (snapshot extra.hierarchy, model.supertopics) that weighs this topic most.
  function renderSuper(id) {
    const sup = (((state.snapshot || {}).extra || {}).hierarchy || {}).supertopics || [];
    let best = null;
    for (const s of sup) {
      const hit = (s.topics || []).find(([tid]) => tid === id);
      if (hit && (!best || hit[1] > best.w)) best = { s, w: hit[1] };
    }
    $("detail-super-box").hidden = !best;
    if (!best) return;
    const anchors = new Map(state.snapshot.topics.map((t) => [t.id, t.anchor]));
    const others = best.s.topics.filter(([tid]) => tid !== id).slice(0, 6)
      .map(([tid]) => `#${tid} ${anchors.get(tid) || ""}`.trim());
    $("detail-super").textContent = `Supertopic ${best.s.id} (${pct(best.s.prevalence)} of ` +
      `documents; this topic's weight in it ${Number(best.w).toFixed(2)})` +
      (others.length ? ` with ${others.join(", ")}` : "");
  }

  function miniChart(hist, color) {
    const w = 360;
    const h = 120;
    const m = { top: 8, right: 8, bottom: 20, left: 40 };
    const root = svg("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img",
      "aria-label": `prevalence in ${hist.length} snapshots` });
    const pts = hist.filter((p) => p.prevalence != null);
    if (!pts.length) return root;
    const ymax = Math.max(...pts.map((p) => p.prevalence), 0.01) * 1.1;
    const x = (i) => m.left + (pts.length === 1 ? (w - m.left - m.right) / 2
      : (i * (w - m.left - m.right)) / (pts.length - 1));
    const y = (p) => m.top + (h - m.top - m.bottom) * (1 - p / ymax);
    const grid = svg("g", { class: "grid" });
    for (const v of [0, ymax / 2, ymax]) {
      grid.append(svg("line", { x1: m.left, x2: w - m.right, y1: y(v), y2: y(v) }));
      const t = svg("text", { x: m.left - 6, y: y(v), "text-anchor": "end",
        "dominant-baseline": "middle" });
      t.textContent = `${(100 * v).toFixed(1)}%`;
      grid.append(t);
    }
    for (const i of new Set([0, pts.length - 1])) {
      const t = svg("text", { x: x(i), y: h - 4, "text-anchor": "middle" });
      t.textContent = `v${pts[i].version}`;
      grid.append(t);
    }
    root.append(grid);
    const d = pts.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.prevalence).toFixed(1)}`)
      .join("");
    root.append(svg("path", { d, class: "mini-line", style: `stroke:${color}` }));
    pts.forEach((p, i) => root.append(svg("circle", { cx: x(i), cy: y(p.prevalence), r: 2.6,
      style: `fill:${color}` })));
    return root;
  }

  // ------------------------------------------------------------------------------------------
  // the topics of a pasted text (POST /v1/infer)

  async function runInfer(ev) {
    ev.preventDefault();
    const text = $("infer-text").value.trim();
    const status = $("infer-status");
    const out = $("infer-result");
    if (!text) { status.textContent = "paste some text first"; return; }
    status.textContent = "…";
    try {
      const resp = await api("v1/infer", {}, { text, top: 5 });
      const body = await resp.json().catch(() => ({}));
      if (!resp.ok) {
        status.textContent = body.message || `HTTP ${resp.status}`;
        out.replaceChildren();
        out.dataset.state = "error";
        return;
      }
      const byId = new Map(state.snapshot.topics.map((t) => [t.id, t]));
      out.replaceChildren(...(body.topics || []).map((r) => {
        const t = byId.get(r.id) || {};
        const open = el("button", { type: "button", class: "link" },
          el("span", { class: "swatch", style: `background:${colorOf(r.id)}`, "aria-hidden": "true" }),
          `#${r.id} `, el("strong", { text: t.anchor || "" }));
        open.addEventListener("click", () => openTopic(r.id));
        return el("li", { "data-topic-id": r.id }, open,
          el("span", { class: "wb-track" }, el("span", { class: "wb-fill",
            style: `width:${(100 * r.weight).toFixed(1)}%;background:${colorOf(r.id)}` })),
          el("span", { class: "wb-p", text: pct(r.weight) }),
          el("span", { class: "trend-words",
            text: (t.top_words || []).slice(0, 6).map(([w]) => w).join(" ") }));
      }));
      out.dataset.state = "done";
      const rest = body.omitted_weight ? `; ${pct(body.omitted_weight)} in other topics` : "";
      status.textContent = `${fmtInt(body.num_known_tokens)} of ${fmtInt(body.num_tokens)} ` +
        `words known to snapshot v${body.version}${rest}`;
    } catch (err) {
      status.textContent = `failed: ${err.message || err}`;
    }
  }

  // ------------------------------------------------------------------------------------------
  // snapshot age, updated every second

  function fmtAge(seconds) {
    if (seconds < 1) return "just now";
    if (seconds < 90) return `${Math.round(seconds)} s ago`;
    if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
    if (seconds < 172800) return `${(seconds / 3600).toFixed(1)} h ago`;
    return `${Math.round(seconds / 86400)} days ago`;
  }

  function tickAge() {
    const snap = state.snapshot;
    if (!snap) return;
    const created = Date.parse(snap.created_at);
    const age = Math.max(0, (Date.now() + state.skewMs - created) / 1000);
    const ageEl = $("age");
    ageEl.textContent = fmtAge(age);
    ageEl.title = `created ${new Date(created).toLocaleString()}`;
  }

  // ------------------------------------------------------------------------------------------
  // wiring

  function start() {
    const sort = $("sort");
    sort.value = state.sort;
    sort.addEventListener("change", () => {
      state.sort = sort.value;
      localStorage.setItem("anchorstream.sort", sort.value);
      if (state.snapshot) renderTopics();
    });
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      state.token = $("token-input").value.trim() || null;
      if (state.token) sessionStorage.setItem("anchorstream.token", state.token);
      $("token-form").hidden = true;
      if (state.tokenWaiter) { state.tokenWaiter(); state.tokenWaiter = null; }
    });
    let resizeTimer = null;
    new ResizeObserver(() => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => { if (state.snapshot && state.listing.length) renderChart(); },
        100);
    }).observe($("chart"));
    $("infer-form").addEventListener("submit", runInfer);
    $("detail-close").addEventListener("click", closeTopic);
    const fromHash = /^#topic-(-?\d+)$/.exec(location.hash);
    if (fromHash) state.detailId = Number(fromHash[1]);
    setInterval(tickAge, 1000);
    pollForever();
  }

  start();
})();
