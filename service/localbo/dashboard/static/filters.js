// The trials table's filters (issue 27, item 7): by state, source, a value range (on a study with several
// objectives, the range of the objective named by value_of), one parameter's range (or choice), and a note's text,
// all at once (AND) and with the charts' brushed selection. They live in the page's URL
// (#/study/NAME?state=complete&value_min=0.5&param=temp&param_min=600&note=contaminated), so a link restores
// them. Pure functions: no DOM.

import { fromUnit } from "./format.js";

// the URL's keys, in the order they are written
export const FILTER_KEYS = ["state", "source", "value_of", "value_min", "value_max", "param", "param_min", "param_max", "param_is", "note"];
export const STATES = ["complete", "running", "failed", "stale"];

// a bound as a number, or null (empty, or not a number)
function bound(text) {
  if (text === null || text === undefined || String(text).trim() === "") return null;
  const v = Number(text);
  return Number.isFinite(v) ? v : null;
}

// The filters a query (the hash's text after "?") names; unknown keys and values that cannot apply are dropped.
// objectives: the study's when it has several (value_of names one of them; the first when it names none).
export function parseFilters(query, names = [], objectives = []) {
  const q = new URLSearchParams(query || "");
  const text = (k) => (q.get(k) ?? "").trim();
  const f = Object.fromEntries(FILTER_KEYS.map((k) => [k, text(k)]));
  if (!STATES.includes(f.state)) f.state = "";
  if (f.param && !names.includes(f.param)) f.param = "";
  const metrics = objectives.map((o) => o.metric);
  if (!metrics.includes(f.value_of)) f.value_of = metrics[0] ?? "";
  for (const k of ["value_min", "value_max", "param_min", "param_max"]) if (bound(f[k]) === null) f[k] = "";
  if (!f.param) f.param_min = f.param_max = f.param_is = "";
  return f;
}

// {key: value} for the URL: every filter key, empty where unset (the router drops those)
// (the objective of the value range only with a bound: a link without one reads the first objective anyway)
export const filtersQuery = (f) =>
  Object.fromEntries(FILTER_KEYS.map((k) => [k, k === "value_of" && !f.value_min && !f.value_max ? "" : f[k] ?? ""]));

export const isFiltered = (f) => FILTER_KEYS.some((k) => k !== "param" && k !== "value_of" && f[k]);

// (i) => boolean over the study's trials (by number - 1), or null when no filter is set
export function filterTrials(study, f) {
  if (!isFiltered(f)) return null;
  const { data } = study;
  const vmin = bound(f.value_min);
  const vmax = bound(f.value_max);
  const j = f.param ? study.names.indexOf(f.param) : -1;
  const spec = j >= 0 ? study.specs[j] : null;
  const numeric = spec && spec.type !== "categorical";
  const pmin = numeric ? bound(f.param_min) : null;
  const pmax = numeric ? bound(f.param_max) : null;
  const choice = spec?.type === "categorical" ? f.param_is : "";
  const needle = f.note.toLowerCase();
  const notes = study.notes ?? {};
  return (i) => {
    if (f.state && data.state[i] !== f.state) return false;
    if (f.source && data.source[i] !== f.source) return false;
    if (vmin !== null || vmax !== null) {
      const v = f.value_of ? data.metrics?.[i]?.[f.value_of] : data.value[i];
      if (v === null || v === undefined || (vmin !== null && v < vmin) || (vmax !== null && v > vmax)) return false;
    }
    if (spec && (pmin !== null || pmax !== null || choice)) {
      const x = data.x[i];
      if (!x) return false;
      const p = fromUnit(spec, x[j]);
      if (choice) {
        if (String(p) !== choice) return false;
      } else if ((pmin !== null && p < pmin) || (pmax !== null && p > pmax)) return false;
    }
    if (needle) {
      const note = notes[String(i + 1)];
      if (!note || !note.toLowerCase().includes(needle)) return false;
    }
    return true;
  };
}

// the filters in words, for the count above the table ("state complete, value ≥ 0.5, note contains 'x'")
export function describeFilters(f) {
  const out = [];
  if (f.state) out.push(`state ${f.state}`);
  if (f.source) out.push(`source ${f.source}`);
  const range = (what, lo, hi) => {
    if (lo && hi) out.push(`${lo} ≤ ${what} ≤ ${hi}`);
    else if (lo) out.push(`${what} ≥ ${lo}`);
    else if (hi) out.push(`${what} ≤ ${hi}`);
  };
  range(f.value_of || "value", f.value_min, f.value_max);
  if (f.param && f.param_is) out.push(`${f.param} = ${f.param_is}`);
  else if (f.param) range(f.param, f.param_min, f.param_max);
  if (f.note) out.push(`note contains “${f.note}”`);
  return out.join(", ");
}
