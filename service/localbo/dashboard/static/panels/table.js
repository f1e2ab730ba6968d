// The trials, sortable and paged: number (a link to the trial's page), state and failure reason (in
// full, expandable when long), value (several objectives: each objective's), candidate id (finite studies), on
// a study with outcome constraints whether each trial was feasible and each constrained metric (a value past its
// bound marked), parameters in user units, source, finished (date and time) and, once a trial has one, its note (issue 27, item 6).
// Filters (issue 27, item 7; filters.js): state, source, a value range (several objectives: of the one chosen), one
// parameter's range or choice and a
// note's text, all at once and with the study's brushed selection; they live in the page's URL (router.setQuery).

import { API, get, server } from "../api.js";
import { html, render, renderChanged } from "../html.js";
import { cell, constraintText, dateTime, fmt, fromUnit, meets } from "../format.js";
import { sourceBadge, sourceText } from "../source.js";
import { FALLBACKS } from "../charts.js";
import { STATES, describeFilters, filterTrials, filtersQuery, isFiltered, parseFilters } from "../filters.js";
import { setQuery } from "../router.js";

const PAGE = 50;
const SHORT_REASON = 60;
const COLUMNS = 8; // parameters shown; all are in the export

// the pager's words for the current sort: [towards the top, towards the bottom] of the order shown
function pagerWords(key, desc, names) {
  const pair =
    key === "number" ? ["newer", "older"]
      : key === "value" ? ["higher values", "lower values"]
        : key === "completed" ? ["later", "earlier"]
          : names.includes(key) ? [`higher ${key}`, `lower ${key}`]
            : key.startsWith("objective:") || key.startsWith("constraint:") ? ["higher values", "lower values"]
              : ["previous", "next"];
  if (key === "state" || pair[0] === "previous") return pair;
  return desc ? pair : [pair[1], pair[0]];
}

function reasonCell(reason, number) {
  if (!reason) return "";
  if (reason.length <= SHORT_REASON) return html`<div class="reason" data-testid="reason">${reason}</div>`;
  return html`<details class="reason" data-testid="reason" data-number="${number}"><summary>${reason.slice(
    0,
    SHORT_REASON,
  )}…</summary><div class="reason-full">${reason}</div></details>`;
}

// a trial's note in its row: in full when short, else the start of it, expandable (as a long failure reason)
function noteCell(note, number) {
  if (!note) return html`<td data-testid="note-cell"></td>`;
  if (note.length <= SHORT_REASON) return html`<td data-testid="note-cell"><div class="note-text">${note}</div></td>`;
  return html`<td data-testid="note-cell"><details class="note" data-note="${number}"><summary>${note.slice(
    0,
    SHORT_REASON,
  )}…</summary><div class="note-text">${note}</div></details></td>`;
}

// The filter controls: each a labelled field; the parameter's bounds are in user units (a categorical: a choice)
function filterForm(study) {
  const field = (name, label, type = "number") =>
    html`<label>${label} <input name="${name}" type="${type}"${type === "number" ? html` step="any" inputmode="decimal"` : ""} size="7"></label>`;
  return html`<form class="filters" role="search" aria-label="Filter the trials" data-testid="filters">
    <label>state <select id="filter" name="state"><option value="">all</option>${STATES.map((s) => html`<option>${s}</option>`)}</select></label>
    <label>source <select name="source"><option value="">all</option></select></label>
    <span class="filter-range">${
      study.several
        ? html`<label>value of <select name="value_of">${study.objectives.map((o) => html`<option>${o.metric}</option>`)}</select></label> ${field("value_min", "from")}`
        : field("value_min", "value from")
    } ${field("value_max", "to")}</span>
    <span class="filter-range"><label>parameter <select name="param"><option value="">none</option>${study.names.map(
      (n) => html`<option>${n}</option>`,
    )}</select></label>
      <span data-bounds>${field("param_min", "from")} ${field("param_max", "to")}</span>
      <label data-choice hidden>is <select name="param_is"><option value="">any</option></select></label></span>
    ${field("note", "note contains", "search")}
    <button type="button" data-clear>clear filters</button>
  </form>`;
}

export function mount(el, study) {
  const mo = () => (study.several ? study.objectives : []); // the value filter's choice of objective
  const view = { sort: "number", desc: true, page: 0, filters: parseFilters(study.query, study.names, mo()) };
  const opened = new Set(); // trial numbers whose long failure reason the viewer expanded (kept over redraws)
  const openedNotes = new Set(); // and whose long note
  let drawnKey = "";
  let sourcesRead = -1; // the trials' version the source options were read at
  const exportLink = (format, label) => html`<a data-export="${format}" href="#">${label}</a>`;
  render(
    el,
    html`<div class="panel-head"><h2 id="table-title">Trials</h2>
      <span class="exports">export ${exportLink("csv", "CSV")} · ${exportLink("json", "JSON")}</span>
      <span class="dim" id="brush-note"></span>
    </div>
    ${filterForm(study)}
    <p class="dim filter-note" id="filter-note" data-testid="filter-note" role="status"></p>
    <div id="table"></div>`,
  );
  const form = el.querySelector("form.filters");
  const input = (name) => form.elements.namedItem(name);
  // the parameter's bounds or choice, as its type asks
  const paramFields = () => {
    const j = study.names.indexOf(view.filters.param);
    const spec = j >= 0 ? study.specs[j] : null;
    const categorical = spec?.type === "categorical";
    form.querySelector("[data-bounds]").hidden = !spec || categorical;
    form.querySelector("[data-choice]").hidden = !categorical;
    if (categorical) {
      render(input("param_is"), html`<option value="">any</option>${spec.choices.map((c) => html`<option>${String(c)}</option>`)}`);
    }
  };
  const showFilters = () => {
    for (const [k, v] of Object.entries(view.filters)) if (k !== "source" && input(k)) input(k).value = v;
    paramFields();
    if (input("param_is")) input("param_is").value = view.filters.param_is;
  };
  showFilters();
  const changed = () => {
    const f = Object.fromEntries([...new FormData(form)].map(([k, v]) => [k, String(v).trim()]));
    const another = f.param !== view.filters.param; // another parameter: its bounds start empty
    if (another) f.param_min = f.param_max = f.param_is = "";
    view.filters = parseFilters(new URLSearchParams(filtersQuery(f)).toString(), study.names, mo());
    if (another) showFilters();
    view.page = 0;
    setQuery(filtersQuery(view.filters));
    study.rerender();
  };
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", (event) => event.preventDefault());
  form.querySelector("[data-clear]").addEventListener("click", () => {
    view.filters = parseFilters("", study.names, mo());
    showFilters();
    input("source").value = "";
    view.page = 0;
    setQuery(filtersQuery(view.filters));
    study.rerender();
  });

  // Export: with no token a plain link the browser downloads; with a token the link fetches the file
  // with the Authorization header and saves it as a blob (a plain href would be refused: no dead link).
  const exportUrl = (format) => `${API}${study.path}/export?format=${format}`;
  const exports = [...el.querySelectorAll("[data-export]")];
  const setExportLinks = () => {
    for (const a of exports) {
      if (server.auth === "open") {
        a.href = exportUrl(a.dataset.export);
        a.setAttribute("download", `${study.name}.${a.dataset.export}`);
        a.removeAttribute("role");
        a.removeAttribute("tabindex");
      } else {
        a.removeAttribute("href");
        a.removeAttribute("download");
        a.setAttribute("role", "link");
        a.setAttribute("tabindex", "0");
      }
    }
  };
  const download = async (a) => {
    const blob = await get(`${study.path}/export?format=${a.dataset.export}`, { as: "blob", signal: study.signal });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = `${study.name}.${a.dataset.export}`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  };
  for (const a of exports) {
    a.addEventListener("click", (event) => {
      if (a.hasAttribute("href")) return; // the browser downloads it
      event.preventDefault();
      download(a);
    });
    a.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !a.hasAttribute("href")) {
        event.preventDefault();
        download(a);
      }
    });
  }

  const table = el.querySelector("#table");
  table.addEventListener("click", (event) => {
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
    study.rerender();
  });

  return {
    render() {
      setExportLinks();
      const { data, names, specs } = study;
      // the sources seen so far, as options (the chosen one kept even before a trial of it shows up)
      if (data.version !== sourcesRead) {
        sourcesRead = data.version;
        const seen = [...new Set([...data.source, view.filters.source])].filter(Boolean).sort();
        const options = html`<option value="">all</option>${seen.map((s) => html`<option value="${s}">${sourceText(s)}</option>`)}`;
        if (renderChanged(input("source"), options)) input("source").value = view.filters.source;
      }
      // nothing to redraw when neither the trials nor the order changed (keeps focus, selection, scroll)
      const filters = JSON.stringify(view.filters);
      const key = [data.version, view.sort, view.desc, view.page, filters, study.notesVersion, study.brushed ? "brushed" : ""].join("|");
      if (key === drawnKey && !study.brushed) return;
      drawnKey = key;
      for (const d of table.querySelectorAll("details[data-number]")) {
        if (d.open) opened.add(Number(d.dataset.number));
        else opened.delete(Number(d.dataset.number));
      }
      for (const d of table.querySelectorAll("details[data-note]")) {
        if (d.open) openedNotes.add(Number(d.dataset.note));
        else openedNotes.delete(Number(d.dataset.note));
      }
      const shown = names.slice(0, COLUMNS);
      const finite = study.finite;
      const notes = study.notes ?? {};
      const noted = Object.keys(notes).length > 0; // a note column once any trial has a note
      const rows = [];
      const brushed = study.brushed;
      const kept = filterTrials(study, view.filters);
      let total = 0;
      for (let i = 0; i < data.state.length; i++) {
        if (!data.state[i]) continue;
        total++;
        if (kept && !kept(i)) continue;
        if (brushed && !brushed(i)) continue;
        rows.push(i);
      }
      el.querySelector("#brush-note").textContent = brushed ? "filtered by the selection on the chart" : "";
      const filtered = isFiltered(view.filters);
      el.querySelector("#filter-note").textContent =
        filtered || brushed
          ? `${rows.length} of ${total} trials match${filtered ? ` ${describeFilters(view.filters)}` : ""}${filtered && brushed ? " and" : ""}${
              brushed ? " the selection on the chart" : ""
            }`
          : "";
      const sortKey = view.sort;
      const constraints = study.constraints ?? []; // a column each: the metric, a value past the bound marked
      const objectives = study.several ? study.objectives : []; // several objectives: a column each, not one value
      const value = (i) => {
        const key = sortKey;
        if (key === "number") return i;
        if (key === "value") return data.value[i] ?? (view.desc ? -Infinity : Infinity);
        if (key === "state") return data.state[i];
        if (key === "completed") return data.completed[i] ?? 0;
        if (key === "candidate") return String(data.candidate[i] ?? "");
        if (key === "note") return notes[String(i + 1)] ?? "";
        if (key === "feasible") return data.feasible[i] === true ? 1 : data.feasible[i] === false ? 0 : -1;
        if (key.startsWith("objective:")) {
          const metric = objectives[Number(key.slice(10))]?.metric;
          return data.metrics[i]?.[metric] ?? (view.desc ? -Infinity : Infinity);
        }
        if (key.startsWith("constraint:")) {
          const metric = constraints[Number(key.slice(11))]?.metric;
          return data.metrics[i]?.[metric] ?? (view.desc ? -Infinity : Infinity);
        }
        return data.x[i]?.[names.indexOf(key)] ?? 0;
      };
      rows.sort((a, b) => {
        const va = value(a);
        const vb = value(b);
        return (va < vb ? -1 : va > vb ? 1 : a - b) * (view.desc ? -1 : 1);
      });
      const pages = Math.max(1, Math.ceil(rows.length / PAGE));
      view.page = Math.min(view.page, pages - 1);
      const numeric = (k) =>
        ["number", "value", "completed"].includes(k) || k.startsWith("constraint:") || k.startsWith("objective:") || names.includes(k);
      const metricCell = (i, c) => {
        const v = data.metrics[i]?.[c.metric];
        if (v === undefined || v === null) return html`<td class="num"></td>`;
        const ok = meets(c, v);
        return ok === false
          ? html`<td class="num violates" title="violates ${constraintText(c)}">${fmt(v)} ✗</td>`
          : html`<td class="num">${fmt(v)}</td>`;
      };
      const head = (k, label) => {
        const sorted = view.sort === k ? (view.desc ? "descending" : "ascending") : null;
        return html`<th scope="col" class="${numeric(k) ? "num" : ""}"${sorted ? html` aria-sort="${sorted}"` : ""}><button type="button" class="sort" data-sort="${k}">${label}${
          sorted ? (view.desc ? " ▾" : " ▴") : ""
        }</button></th>`;
      };
      const link = (n) => `#/study/${encodeURIComponent(study.name)}/trial/${n}`;
      const body = rows.slice(view.page * PAGE, (view.page + 1) * PAGE).map((i) => {
        const done = data.completed[i];
        const candidate = data.candidate[i];
        const rowClass = [data.state[i] === "stale" && "is-stale", FALLBACKS.has(data.source[i]) && "is-fallback"].filter(Boolean).join(" ");
        return html`<tr data-number="${i + 1}" class="${rowClass}"${FALLBACKS.has(data.source[i]) ? html` data-fallback="1"` : ""}><td class="num"><a href="${link(i + 1)}">${i + 1}</a></td><td class="state-cell"><span class="badge ${data.state[i]}">${data.state[i]}</span>${reasonCell(
          data.reasons[String(i + 1)],
          i + 1,
        )}</td>${
          objectives.length
            ? objectives.map((o) => html`<td class="num" data-testid="objective-cell">${fmt(data.metrics[i]?.[o.metric])}</td>`)
            : html`<td class="num">${fmt(data.value[i])}</td>`
        }${
          constraints.length
            ? html`<td data-testid="feasible">${
                data.feasible[i] === true || data.feasible[i] === false
                  ? html`<span class="badge ${data.feasible[i] ? "feasible" : "infeasible"}">${data.feasible[i] ? "yes" : "no"}</span>`
                  : ""
              }</td>${constraints.map((c) => metricCell(i, c))}`
            : ""
        }${finite ? html`<td data-testid="candidate">${candidate ?? ""}</td>` : ""}${shown.map(
          (_, j) => html`<td class="num">${data.x[i] ? cell(fromUnit(specs[j], data.x[i][j])) : ""}</td>`,
        )}<td>${sourceBadge(data.source[i])}</td><td class="nowrap">${done ? dateTime(done) : ""}</td>${
          noted ? noteCell(notes[String(i + 1)], i + 1) : ""
        }</tr>`;
      });
      const [up, down] = pagerWords(sortKey, view.desc, names);
      // keep the keyboard where it was: the sort button or pager button the viewer pressed
      const focused = document.activeElement;
      const refocus = focused && table.contains(focused) ? (focused.dataset.sort ? `[data-sort="${focused.dataset.sort}"]` : focused.dataset.page ? `[data-page="${focused.dataset.page}"]` : null) : null;
      const markup = html`<div class="scroll"><table class="grid" data-testid="trials"><thead><tr>${head("number", "#")}${head("state", "state")}${
          objectives.length
            ? objectives.map((o, k) => head(`objective:${k}`, `${o.metric} (${o.direction === "maximize" ? "max" : "min"})`))
            : head("value", "value")
        }${
          constraints.length ? html`${head("feasible", "feasible")}${constraints.map((c, k) => head(`constraint:${k}`, constraintText(c)))}` : ""
        }${
          finite ? head("candidate", "candidate") : ""
        }${shown.map((n) => head(n, n))}<th scope="col">source</th>${head("completed", "finished")}${noted ? head("note", "note") : ""}</tr></thead><tbody>${body}</tbody></table></div>
        ${rows.length ? "" : html`<p class="empty" data-testid="table-empty">${total ? "No trials match." : "No trials yet."}</p>`}
        <div class="pager"><button type="button" data-page="-1" ${view.page === 0 ? "disabled" : ""}>‹ ${up}</button>
        <span>page ${view.page + 1} of ${pages} · ${rows.length} trials${names.length > shown.length ? ` · first ${shown.length} of ${names.length} parameters shown (all in the export)` : ""}</span>
        <button type="button" data-page="1" ${view.page >= pages - 1 ? "disabled" : ""}>${down} ›</button></div>`;
      // the stream resends what finished at its cursor: the same rows are not redrawn; what the viewer opened is
      // their state, not the markup's, and is reopened after a redraw
      if (!renderChanged(table, markup)) return;
      for (const d of table.querySelectorAll("details[data-number]")) d.open = opened.has(Number(d.dataset.number));
      for (const d of table.querySelectorAll("details[data-note]")) d.open = openedNotes.has(Number(d.dataset.note));
      if (refocus) {
        const again = table.querySelector(refocus);
        if (again && !again.disabled) again.focus();
        else table.querySelector("[data-page]:not([disabled])")?.focus();
      }
    },
  };
}
