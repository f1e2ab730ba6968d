// The dashboard: the studies list (#/) and a study's page (#/study/NAME), live through /events.

import { API, AuthError, clearToken, get, getToken, setToken, subscribe } from "./api.js";
import { drawHistory, drawParallel, drawPath, fmt } from "./charts.js";

const main = document.getElementById("main");
const liveBadge = document.getElementById("live");
let leave = () => {}; // undoes the current view's timers and streams

const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const ago = (iso) => {
  if (!iso) return "never";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
};

// a parameter's value in user units from its coordinate (as localbo.space.Param.from_unit; a categorical's
// coordinate is its choice's position in the list, from perParameter)
function fromUnit(spec, u) {
  u = Math.min(Math.max(u, 0), 1);
  if (spec.type === "categorical") return spec.choices[Math.round(u * (spec.choices.length - 1))];
  if (spec.type === "int") {
    const n = spec.high - spec.low + 1;
    return spec.low + Math.min(Math.floor(u * n), n - 1);
  }
  const v = spec.log
    ? Math.exp(Math.log(spec.low) + u * (Math.log(spec.high) - Math.log(spec.low)))
    : spec.low + u * (spec.high - spec.low);
  return Math.min(Math.max(v, spec.low), spec.high);
}

// a value for a table cell: numbers formatted, choices (strings, booleans) as text
const cell = (v) => (typeof v === "number" ? fmt(v) : esc(String(v)));

// a point's unit coordinates, one per parameter: a categorical's one-hot block (argmax, the first on ties)
// becomes its choice's position in [0, 1], so charts and the table index points by parameter
function perParameter(specs) {
  if (!specs.some((s) => s.type === "categorical")) return (x) => x;
  return (x) => {
    if (!x) return x;
    const out = [];
    let at = 0;
    for (const s of specs) {
      if (s.type !== "categorical") {
        out.push(x[at]);
        at += 1;
        continue;
      }
      const k = s.choices.length;
      let best = 0;
      for (let j = 1; j < k; j++) if (x[at + j] > x[at + best]) best = j;
      out.push(k > 1 ? best / (k - 1) : 0);
      at += k;
    }
    return out;
  };
}

function setLive(state, why = "") {
  liveBadge.className = `live ${state}`;
  liveBadge.textContent = { live: "● live", retrying: "○ reconnecting…", closed: "○ not live", "": "" }[state] ?? "";
  liveBadge.title = why;
}

// marks the view ready once its first frame is painted (canvas strokes rasterise at paint time)
function ready(view) {
  document.body.dataset.view = view;
  requestAnimationFrame(() =>
    setTimeout(() => {
      document.body.dataset.ready = "1";
      performance.mark(`localbo:${view}-interactive`);
    }),
  );
}

// -- the token ---------------------------------------------------------------------------------

function askForToken(error) {
  leave();
  setLive("");
  const refused = getToken() && error.status === 401;
  main.innerHTML = `
    <section class="auth" role="alert" data-testid="auth">
      <h1>${error.status === 403 ? "This token may not see this" : "A token is needed"}</h1>
      <p>${
        error.status === 403
          ? esc(error.message)
          : refused
            ? "The server refused the token. Enter another one."
            : "This server asks for a bearer token. A token with read scope is enough to watch studies."
      }</p>
      <form id="token-form">
        <label>Bearer token <input name="token" type="password" autocomplete="off" required autofocus></label>
        <label class="check"><input name="remember" type="checkbox"> remember on this computer</label>
        <button type="submit">Use token</button>
        ${error.status === 403 ? '<a href="#/">back to the studies</a>' : ""}
      </form>
    </section>`;
  document.getElementById("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    setToken(String(form.get("token")).trim(), form.get("remember") === "on");
    route();
  });
  ready("auth");
}

document.getElementById("token-button").addEventListener("click", () => {
  clearToken();
  askForToken({ status: 401, message: "" });
});

// -- the studies list --------------------------------------------------------------------------

function studyRow(s) {
  const m = s.summary;
  const state = m.n_running > 0 ? "running" : "idle";
  const extra = [m.n_running && `${m.n_running} running`, m.n_failed && `${m.n_failed} failed`, m.n_stale && `${m.n_stale} stale`]
    .filter(Boolean)
    .join(", ");
  return `<tr>
    <td><a href="#/study/${encodeURIComponent(s.name)}">${esc(s.name)}</a></td>
    <td>${esc(s.policy)}</td>
    <td>${esc(s.direction)}</td>
    <td class="num">${m.n_complete}${extra ? ` <span class="dim">(${esc(extra)})</span>` : ""}</td>
    <td class="num">${fmt(m.best_value)}</td>
    <td><span class="badge ${state}">${state}</span>${s.last_policy_error ? ' <span class="badge error" title="' + esc(s.last_policy_error) + '">policy fell back</span>' : ""}</td>
    <td title="${esc(m.last_activity || "")}">${ago(m.last_activity)}</td>
  </tr>`;
}

async function listView() {
  main.innerHTML = `<h1>Studies</h1><p class="dim" id="list-note"></p><div id="studies"></div>`;
  const show = (studies) => {
    document.getElementById("studies").innerHTML = studies.length
      ? `<table class="grid" data-testid="studies"><thead><tr><th>name</th><th>policy</th><th>direction</th>
           <th class="num">trials</th><th class="num">best value</th><th>state</th><th>last activity</th></tr></thead>
           <tbody>${studies.map(studyRow).join("")}</tbody></table>`
      : `<p>No studies yet. Create one with the Python client or <code>POST /api/v1/studies</code>.</p>`;
    document.getElementById("list-note").textContent = `${studies.length} studies`;
  };
  let current = (await get("studies")).studies;
  show(current);
  // the stream sends the list again whenever a summary changes; "last activity" ages locally
  const unsubscribe = subscribe(
    "events",
    () => ({}),
    (event, payload) => event === "studies" && show((current = payload.studies)),
    setLive,
  );
  const ageing = setInterval(() => show(current), 10000);
  leave = () => {
    unsubscribe();
    clearInterval(ageing);
    setLive("");
  };
  ready("list");
}

// -- a study -----------------------------------------------------------------------------------

function emptyColumns() {
  return { number: [], state: [], value: [], x: [], source: [], created: [], completed: [], reasons: {} };
}

// trials of an event or the series, by number - 1 (numbers are dense within a study)
function merge(into, cols, toParams = (x) => x) {
  for (let k = 0; k < cols.number.length; k++) {
    const i = cols.number[k] - 1;
    into.number[i] = cols.number[k];
    into.state[i] = cols.state[k];
    into.value[i] = cols.value[k];
    into.x[i] = toParams(cols.x[k]);
    into.source[i] = cols.source[k];
    into.created[i] = cols.created[k];
    into.completed[i] = cols.completed[k];
  }
  Object.assign(into.reasons, cols.reasons);
}

function studySkeleton(name) {
  return `
  <h1>${esc(name)}</h1>
  <p class="meta" id="meta"></p>
  <div class="cards" id="cards"></div>
  <div id="policy-alert"></div>
  <section class="panel">
    <div class="panel-head"><h2>Values by trial</h2>
      <label class="check"><input id="log" type="checkbox"> log scale</label>
      <span class="legend"><i class="sw point"></i>value <i class="sw best"></i>best so far <i class="sw running"></i>running <i class="sw failed"></i>failed</span>
    </div>
    <div class="chart-wrap"><canvas id="history" class="chart" role="img" aria-label="Values by trial number"></canvas><div id="tip" class="tip" hidden></div></div>
  </section>
  <div class="two">
    <section class="panel" id="path-panel" hidden>
      <h2>Where the policy's centre has been</h2>
      <canvas id="path" class="chart" role="img" aria-label="The policy's centre, oldest first"></canvas>
    </section>
    <section class="panel" id="policy"><h2>Policy</h2><div id="policy-body" class="dim">loading…</div></section>
  </div>
  <section class="panel">
    <div class="panel-head"><h2>Parameters of the completed trials<span id="parallel-note" class="dim"></span></h2>
      <span class="dim">coloured by value<span id="parallel-centre" hidden>; the dashed black line is the policy's centre</span><span id="parallel-box" hidden>, the grey bands its box</span></span></div>
    <canvas id="parallel" class="chart tall" role="img" aria-label="Parallel coordinates of the trials"></canvas>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>Trials</h2>
      <label>state <select id="filter"><option value="">all</option><option>complete</option><option>running</option><option>failed</option><option>stale</option></select></label>
      <span class="exports">export <a data-export="csv" href="#">CSV</a> · <a data-export="json" href="#">JSON</a></span>
    </div>
    <div id="table"></div>
  </section>`;
}

async function studyView(name) {
  main.innerHTML = studySkeleton(name);
  const path = `studies/${encodeURIComponent(name)}`;
  const data = emptyColumns();
  const series = await get(`${path}/series`);
  const names = Object.keys(series.space);
  const specs = names.map((n) => series.space[n]);
  const toParams = perParameter(specs);
  merge(data, series.trials, toParams);
  const view = { sort: "number", desc: true, page: 0, filter: "", log: false, policy: null, display: null };
  let last = series.last;
  let since = series.as_of;
  let frame = 0;
  let stopped = false;

  document.getElementById("meta").textContent = `policy ${series.policy} · ${series.direction} · ${names.length} parameters (${names.join(", ")})`;

  const render = () => {
    frame = 0;
    if (stopped) return;
    const started = performance.now();
    renderCards(data, series.direction);
    const history = drawHistory(document.getElementById("history"), data, { direction: series.direction, log: view.log });
    document.getElementById("history").dataset.drawn = history.drawn;
    view.history = history;
    const shown = view.display || {};
    const labels = specs.map((s) => (s.type === "categorical" ? [String(s.choices[0]), String(s.choices.at(-1))] : [fmt(s.low), fmt(s.high)]));
    const parallel = drawParallel(document.getElementById("parallel"), data, names, {
      direction: series.direction,
      centre: shown.centre ?? null,
      box: shown.box ?? null,
      axisLabels: labels,
    });
    document.getElementById("parallel-centre").hidden = !shown.centre;
    document.getElementById("parallel-box").hidden = !shown.box;
    document.getElementById("parallel").dataset.drawn = parallel.drawn;
    document.getElementById("parallel-note").textContent =
      parallel.drawn < parallel.total ? `: ${parallel.drawn.toLocaleString()} of ${parallel.total.toLocaleString()} (the best and an even sample of the rest)` : "";
    renderPath();
    renderPolicy(view.policy, view.display, data, names, specs);
    renderTable(data, names, specs, view, rerender);
    lastEnd = performance.now();
    cost = lastEnd - started;
    document.body.dataset.renderMs = cost.toFixed(1);
  };
  // at most one redraw per frame, and on big studies a pause of a few redraw times between them,
  // so a stream of tells never keeps the page busy
  let lastEnd = 0;
  let cost = 0;
  const rerender = () => {
    if (frame) return;
    const wait = Math.max(0, lastEnd + 4 * cost - performance.now());
    frame = setTimeout(() => requestAnimationFrame(render), wait);
  };
  const renderPath = () => {
    const trail = view.display?.path;
    const panel = document.getElementById("path-panel");
    panel.hidden = !(trail && trail.length);
    if (!panel.hidden) document.getElementById("path").dataset.drawn = drawPath(document.getElementById("path"), trail, names);
  };
  const loadPolicy = async (redraw = true) => {
    try {
      view.policy = await get(`${path}/policy`);
    } catch (error) {
      view.policy = { error: String(error.message || error) };
    }
    view.display = displayOf(view.policy?.display, specs, toParams);
    if (redraw) rerender();
  };

  document.getElementById("log").addEventListener("change", (e) => {
    view.log = e.target.checked;
    rerender();
  });
  document.getElementById("filter").addEventListener("change", (e) => {
    view.filter = e.target.value;
    view.page = 0;
    rerender();
  });
  for (const a of document.querySelectorAll("[data-export]")) {
    a.href = `${API}${path}/export?format=${a.dataset.export}`; // works as a plain link without tokens
    a.addEventListener("click", async (event) => {
      event.preventDefault();
      const blob = await get(`${path}/export?format=${a.dataset.export}`, { as: "blob" });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = `${name}.${a.dataset.export}`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 10000);
    });
  }
  hoverTip(document.getElementById("history"), data, view);
  window.addEventListener("resize", rerender);

  await loadPolicy(false);
  render();
  const unsubscribe = subscribe(
    `${path}/events`,
    () => ({ after: String(last), since }),
    (event, payload) => {
      if (event === "trials") {
        merge(data, payload, toParams);
        for (const n of payload.number) if (n > last) last = n;
        since = payload.as_of; // the server's clock: a reconnect resends what finished after it
        rerender();
      } else if (event === "study" && payload.policy_state_version !== view.policy?.policy_state_version) {
        loadPolicy();
      }
    },
    setLive,
  );
  leave = () => {
    stopped = true;
    unsubscribe();
    window.removeEventListener("resize", rerender);
    setLive("");
  };
  ready("study");
}

function renderCards(data, direction) {
  let complete = 0;
  let running = 0;
  let failed = 0;
  let best = null;
  let bestAt = null;
  for (let i = 0; i < data.state.length; i++) {
    const s = data.state[i];
    if (s === "complete") {
      complete++;
      const v = data.value[i];
      if (best === null || (direction === "minimize" ? v < best : v > best)) {
        best = v;
        bestAt = i + 1;
      }
    } else if (s === "running") running++;
    else if (s === "failed") failed++;
  }
  const card = (label, value, id, note = "") =>
    `<div class="card"><div class="label">${label}</div><div class="value" data-testid="${id}">${value}</div>${note ? `<div class="dim">${note}</div>` : ""}</div>`;
  document.getElementById("cards").innerHTML = [
    card("trials", data.number.filter(Boolean).length, "n-trials"),
    card("complete", complete, "n-complete"),
    card("running", running, "n-running"),
    card("failed", failed, "n-failed"),
    card(`best (${direction === "minimize" ? "lowest" : "highest"})`, fmt(best), "best-value", bestAt ? `trial #${bestAt}` : ""),
  ].join("");
}

function hoverTip(canvas, data, view) {
  const tip = document.getElementById("tip");
  canvas.addEventListener("mousemove", (event) => {
    const h = view.history;
    if (!h) return;
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const n = data.value.length;
    const k = Math.round(((x - h.box.l) / (h.box.r - h.box.l)) * n + 0.5);
    if (k < 1 || k > n || !data.state[k - 1]) return (tip.hidden = true);
    tip.hidden = false;
    tip.style.left = `${Math.min(x + 12, rect.width - 160)}px`;
    tip.style.top = `${event.clientY - rect.top + 12}px`;
    tip.textContent = `#${k} ${data.state[k - 1]} ${data.value[k - 1] === null ? "" : fmt(data.value[k - 1])}`;
  });
  canvas.addEventListener("mouseleave", () => (tip.hidden = true));
}

// The policy's `display` block (GET .../policy) with its unit-cube points per parameter (as the trials'
// `x`, through perParameter); anything malformed is left out, so a policy's picture never breaks the page.
// A categorical's one-hot block has no box of its own: its bounds are null.
function displayOf(raw, specs, toParams) {
  if (!raw || typeof raw !== "object") return null;
  const width = specs.reduce((n, s) => n + (s.type === "categorical" ? s.choices.length : 1), 0);
  const point = (u) => (Array.isArray(u) && u.length === width && u.every(Number.isFinite) ? toParams(u) : null);
  const centre = point(raw.centre);
  let box = null;
  const lower = point(raw.box?.lower);
  const upper = point(raw.box?.upper);
  if (lower && upper) {
    const bound = (b) => b.map((v, j) => (specs[j].type === "categorical" ? null : v));
    box = { lower: bound(lower), upper: bound(upper) };
  }
  const path = (Array.isArray(raw.path) ? raw.path : []).map(point).filter(Boolean).map((x, t) => ({ t, x }));
  const p = raw.progress;
  const progress = p && Number.isFinite(p.done) && Number.isFinite(p.total) ? { done: p.done, total: p.total, label: p.label ?? "" } : null;
  const numbers = raw.numbers && typeof raw.numbers === "object" ? Object.entries(raw.numbers) : [];
  return { phase: typeof raw.phase === "string" ? raw.phase : null, progress, centre, box, path, numbers };
}

function renderPolicy(view, display, data, names, specs) {
  const body = document.getElementById("policy-body");
  const alert = document.getElementById("policy-alert");
  if (!view) return;
  if (view.error) {
    body.textContent = `Could not read the policy: ${view.error}`;
    return;
  }
  const fallbacks = data.source.filter((s) => s === "fallback").length;
  alert.innerHTML = view.last_policy_error
    ? `<div class="alert" role="status" data-testid="policy-error"><b>The policy failed and fallback points were handed out</b> (${fallbacks} fallback trials so far). Last error: <code>${esc(view.last_policy_error)}</code></div>`
    : "";
  const shown = display || {};
  const rows = [];
  const row = (k, v, id = "") => rows.push(`<tr><th scope="row">${k}</th><td${id ? ` data-testid="${id}"` : ""}>${v}</td></tr>`);
  row("policy", `${esc(view.policy)} <span class="dim">(state version ${view.policy_state_version})</span>`);
  if (shown.phase) row("phase", esc(shown.phase), "policy-phase");
  const pr = shown.progress;
  if (pr) {
    const done = Math.max(0, Math.min(pr.done, pr.total));
    row(esc(pr.label || "progress"), `<progress max="${Math.max(pr.total, 0)}" value="${done}"></progress> ${pr.done} of ${pr.total}`, "policy-progress");
  }
  row("planned", `${view.planned.length} points queued${view.planned.length ? ` (next: ${esc(view.planned[0].source)})` : ""}`);
  if (fallbacks && !view.last_policy_error) row("fallbacks", `${fallbacks} trials`);
  let html = `<table class="kv">${rows.join("")}</table>`;
  if (shown.numbers?.length) {
    const value = (v) => (v === null || v === undefined ? "–" : typeof v === "number" ? fmt(v) : esc(v));
    html += `<table class="kv" data-testid="policy-numbers">${shown.numbers.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${value(v)}</td></tr>`).join("")}</table>`;
  }
  if (shown.centre) {
    const box = shown.box;
    const range = (j) => (box && box.lower[j] !== null ? `${cell(fromUnit(specs[j], box.lower[j]))} – ${cell(fromUnit(specs[j], box.upper[j]))}` : "–");
    html += `<h3>Centre</h3><table class="grid compact" data-testid="centre"><thead><tr><th>parameter</th><th class="num">value</th><th class="num">position in range</th>${box ? '<th class="num">box</th>' : ""}</tr></thead><tbody>`;
    names.slice(0, 50).forEach((n, j) => {
      html += `<tr><td>${esc(n)}</td><td class="num">${cell(fromUnit(specs[j], shown.centre[j]))}</td><td class="num">${fmt(shown.centre[j])}</td>${box ? `<td class="num">${range(j)}</td>` : ""}</tr>`;
    });
    html += "</tbody></table>";
  }
  body.innerHTML = html;
  body.classList.remove("dim");
}

const PAGE = 50;

function renderTable(data, names, specs, view, rerender) {
  const shown = names.slice(0, 8);
  const rows = [];
  for (let i = 0; i < data.state.length; i++) if (data.state[i] && (!view.filter || data.state[i] === view.filter)) rows.push(i);
  const key = view.sort;
  const value = (i) => {
    if (key === "number") return i;
    if (key === "value") return data.value[i] ?? (view.desc ? -Infinity : Infinity);
    if (key === "state") return data.state[i];
    if (key === "completed") return data.completed[i] ?? 0;
    return data.x[i]?.[names.indexOf(key)] ?? 0;
  };
  rows.sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    return (va < vb ? -1 : va > vb ? 1 : a - b) * (view.desc ? -1 : 1);
  });
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  view.page = Math.min(view.page, pages - 1);
  const head = (k, label) =>
    `<th class="${["number", "value", "completed"].includes(k) || names.includes(k) ? "num" : ""}"><button class="sort" data-sort="${esc(k)}" aria-sort="${view.sort === k ? (view.desc ? "descending" : "ascending") : "none"}">${esc(label)}${view.sort === k ? (view.desc ? " ▾" : " ▴") : ""}</button></th>`;
  let html = `<table class="grid" data-testid="trials"><thead><tr>${head("number", "#")}${head("state", "state")}${head("value", "value")}${shown.map((n) => head(n, n)).join("")}<th>source</th>${head("completed", "finished")}</tr></thead><tbody>`;
  for (const i of rows.slice(view.page * PAGE, (view.page + 1) * PAGE)) {
    const done = data.completed[i];
    const reason = data.reasons[String(i + 1)];
    html += `<tr><td class="num">${i + 1}</td><td><span class="badge ${data.state[i]}">${data.state[i]}</span>${reason ? ` <span class="dim" title="${esc(reason)}">${esc(reason.slice(0, 40))}</span>` : ""}</td><td class="num">${fmt(data.value[i])}</td>${shown
      .map((_, j) => `<td class="num">${data.x[i] ? cell(fromUnit(specs[j], data.x[i][j])) : ""}</td>`)
      .join("")}<td>${esc(data.source[i])}</td><td>${done ? new Date(done * 1000).toLocaleTimeString() : ""}</td></tr>`;
  }
  html += `</tbody></table><div class="pager"><button data-page="-1" ${view.page === 0 ? "disabled" : ""}>‹ newer</button>
    page ${view.page + 1} of ${pages} · ${rows.length} trials${names.length > shown.length ? ` · first ${shown.length} of ${names.length} parameters shown (all in the export)` : ""}
    <button data-page="1" ${view.page >= pages - 1 ? "disabled" : ""}>older ›</button></div>`;
  const table = document.getElementById("table");
  table.innerHTML = html;
  table.onclick = (event) => {
    const sort = event.target.closest("[data-sort]");
    const page = event.target.closest("[data-page]");
    if (sort) {
      const k = sort.dataset.sort;
      view.desc = view.sort === k ? !view.desc : k === "number";
      view.sort = k;
      view.page = 0;
    } else if (page) {
      view.page += Number(page.dataset.page);
    } else return;
    rerender();
  };
}

// -- routing -----------------------------------------------------------------------------------

async function route() {
  leave();
  leave = () => {};
  document.body.dataset.ready = "";
  const match = window.location.hash.match(/^#\/study\/(.+)$/);
  const crumbs = document.getElementById("crumbs");
  try {
    if (match) {
      const name = decodeURIComponent(match[1]);
      crumbs.innerHTML = `<a href="#/">studies</a> / ${esc(name)}`;
      document.title = `${name} · localbo`;
      await studyView(name);
    } else {
      crumbs.innerHTML = "studies";
      document.title = "localbo dashboard";
      await listView();
    }
  } catch (error) {
    if (error instanceof AuthError) return askForToken(error);
    main.innerHTML = `<div class="alert" role="alert">${esc(error.message || error)}</div><p><a href="#/">back to the studies</a></p>`;
    document.body.dataset.view = "error";
  }
}

window.addEventListener("hashchange", route);
route();
