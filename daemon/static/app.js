// anchorstream topic browser: long-polls the latest snapshot, shows its topics and a line chart
// of each topic's prevalence across the retained snapshots.
//
// Plain browser JavaScript, no framework and no build step, so the page works offline and the
// daemon serves it as a static file. Everything that comes from the stream (words, anchors) is
// put into the page with textContent, never innerHTML: documents are untrusted input.
"use strict";

(() => {
  const WAIT_SECONDS = 25;          // long-poll length; the server caps it (http.max_wait_seconds)
  const TOP_WORDS = 10;             // words shown per topic
  const HISTORY_CONCURRENCY = 6;    // parallel /v1/topics/{id} requests after each snapshot
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

  async function api(path, headers = {}) {
    const h = { Accept: "application/json", ...headers };
    if (state.token) h.Authorization = `Bearer ${state.token}`;
    // no-store: the ETag logic is ours; the browser cache must neither answer nor revalidate.
    const resp = await fetch(path, { headers: h, cache: "no-store" });
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

  function showEmpty() {
    $("empty").hidden = false;
    $("topics-card").hidden = true;
    $("chart-card").hidden = true;
  }

  function onSnapshot(snap) {
    state.snapshot = snap;
    $("empty").hidden = true;
    $("topics-card").hidden = false;
    $("chart-card").hidden = false;
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
      if (gen !== state.generation) return;  // a newer snapshot arrived meanwhile
      state.listing = listing;
      state.history = history;
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
      const tr = el("tr", {
        "data-topic-id": t.id, tabindex: 0,
        class: state.highlight === t.id ? "topic picked" : "topic",
      },
      el("th", { scope: "row", class: "c-id" },
        el("span", { class: "swatch", style: `background:${color}`, "aria-hidden": "true" }),
        `#${t.id}`),
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
    box.classList.toggle("has-pick", id != null);
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
    const series = snap.topics.map((t) => {
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
    $("chart-caption").textContent = `Line chart: prevalence of ${series.length} topics across ` +
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
    setInterval(tickAge, 1000);
    pollForever();
  }

  start();
})();
