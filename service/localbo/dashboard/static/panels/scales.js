// Shared by the analysis panels: a parameter's axis in user units (ticks, log, choices), a value colour
// scale that stays readable on white, canvas set-up, and the trials a chart draws when there are many.

import { fmt, lerp, niceTicks, padRange, prepare, unit } from "../charts.js";
import { INK, VALUE_SCALE, dark } from "../theme.js";

export { lerp, niceTicks, padRange, prepare, unit }; // the panels import their canvas helpers from here

// Plasma from its dark end up to 0.6 of its range: its light yellow end is cut, so every colour has a
// contrast of at least 3.3:1 on white (WCAG's 3:1 for graphics). Index 0 is the best value.
// The stops come from style.css' --value-scale (theme.js): on the dark scheme plasma's light end instead,
// the best value lightest.
const PLASMA = VALUE_SCALE;

// t in [0, 1]: 0 the best value, 1 the worst
export function valueColour(t) {
  if (Number.isNaN(t)) t = 1; // never an undefined colour (a value past the double range's arithmetic)
  const i = Math.max(0, Math.min(PLASMA.length - 1, Math.round(t * (PLASMA.length - 1))));
  return PLASMA[i];
}
export const VALUE_STOPS = PLASMA.length;

// the same scale, interpolated between its stops (for shading, where the stops would show as bands)
export function valueColourSmooth(t) {
  if (Number.isNaN(t)) t = 1;
  const f = Math.max(0, Math.min(1, t)) * (PLASMA.length - 1);
  const k = Math.min(Math.floor(f), PLASMA.length - 2);
  const [a, b] = [PLASMA[k], PLASMA[k + 1]].map((hex) => [1, 3, 5].map((j) => parseInt(hex.slice(j, j + 2), 16)));
  const mix = a.map((v, j) => Math.round(v + (f - k) * (b[j] - v)));
  return `#${mix.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

export { INK }; // the analysis panels' ink (theme.js: from style.css)

// a tick's label: short ("1e-4", "0.001", "2.5", "1e+5"), never a string of zeros
export function tickLabel(t) {
  if (t === 0) return "0";
  const a = Math.abs(t);
  if (a >= 1e5 || a < 1e-3) return t.toExponential().replace(/\.?0+e/, "e");
  return String(Number(t.toPrecision(6)));
}

// A light tint of a colour (mixed with white: 0 the colour, 1 white), so a shaded map needs no alpha
// (cells drawn with alpha show seams where they meet).
export function tint(hex, white) {
  const c = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
  const base = dark() ? [28, 31, 36] : [255, 255, 255]; // towards the panel's colour (style.css --panel)
  return `rgb(${c.map((v, k) => Math.round(v + (base[k] - v) * white)).join(",")})`;
}

// Ticks of a log axis over [lo, hi] (lo > 0): decades, with 2 and 5 between them when the range is short.
export function logTicks(lo, hi) {
  const out = [];
  const a = Math.floor(Math.log10(lo));
  const b = Math.ceil(Math.log10(hi));
  const mults = b - a <= 2 ? [1, 2, 5] : [1];
  for (let e = a; e <= b; e++) for (const m of mults) {
    const t = Number((m * 10 ** e).toPrecision(12));
    if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push(t);
  }
  if (out.length >= 2) return out;
  return niceTicks(lo, hi, 3).filter((t) => t > 0);
}

// A parameter's axis: where a unit coordinate u sits (0..1 along the axis), its value in user units,
// and ticks [{pos, label}]. A categorical's u is its choice's position (k - 1) steps apart (as the
// dashboard's perParameter writes it); an int's u maps to low + floor(u n), as localbo.space does.
export function paramAxis(spec) {
  if (spec.type === "categorical") {
    const k = spec.choices.length;
    const index = (u) => Math.round(Math.min(Math.max(u, 0), 1) * (k - 1));
    const pos = (u) => (k > 1 ? index(u) / (k - 1) : 0.5);
    return {
      kind: "categorical",
      pos,
      value: (u) => spec.choices[index(u)],
      ticks: spec.choices.map((c, j) => ({ pos: k > 1 ? j / (k - 1) : 0.5, label: String(c) })),
      log: false,
    };
  }
  const { low, high } = spec;
  if (spec.type === "int") {
    const n = high - low + 1;
    const value = (u) => low + Math.min(Math.floor(Math.min(Math.max(u, 0), 1) * n), n - 1);
    const at = (v) => unit(v, low, high);
    const ticks = niceTicks(low, high, 5).filter(Number.isInteger).map((t) => ({ pos: at(t), label: tickLabel(t) }));
    return { kind: "int", pos: (u) => at(value(u)), value, ticks, log: false, at, fromPos: (p) => lerp(low, high, p) };
  }
  if (spec.log) {
    const [a, b] = [Math.log(low), Math.log(high)];
    const at = (v) => (Math.log(v) - a) / (b - a);
    const value = (u) => Math.exp(a + Math.min(Math.max(u, 0), 1) * (b - a));
    return { kind: "log", pos: (u) => Math.min(Math.max(u, 0), 1), value, ticks: logTicks(low, high).map((t) => ({ pos: at(t), label: tickLabel(t) })), log: true, at, fromPos: value };
  }
  const at = (v) => unit(v, low, high);
  const value = (u) => lerp(low, high, Math.min(Math.max(u, 0), 1));
  return { kind: "float", pos: (u) => Math.min(Math.max(u, 0), 1), value, ticks: niceTicks(low, high, 5).map((t) => ({ pos: at(t), label: tickLabel(t) })), log: false, at, fromPos: value };
}

// The value axis over [lo, hi]: ticks [{pos, label}], pos in 0..1 from lo to hi.
export function valueAxis(lo, hi) {
  if (!(hi > lo)) return { pos: () => 0.5, ticks: [{ pos: 0.5, label: fmt(lo) }] };
  const pos = (v) => unit(v, lo, hi);
  return { pos, ticks: niceTicks(lo, hi, 5).map((t) => ({ pos: pos(t), label: tickLabel(t) })) };
}

// The completed trials with a value and coordinates, best first; past `limit`, the best quarter of
// `limit` and an even sample of the rest (ranks stay in order). {idx, total, lo, hi}
// The ranking is kept per columns object until a trial is added or completes (the panels of one redraw
// share one sort: 50,000 trials take tens of milliseconds to sort).
const ranked = new WeakMap();

export function completedByRank(data, direction, limit = Infinity) {
  let complete = 0;
  for (let i = 0; i < data.state.length; i++) if (data.state[i] === "complete") complete++;
  const key = `${data.value.length}:${complete}:${direction}`;
  let memo = ranked.get(data);
  if (!memo || memo.key !== key) {
    const idx = [];
    for (let i = 0; i < data.value.length; i++) {
      const v = data.value[i];
      if (v !== null && v !== undefined && data.state[i] === "complete" && data.x[i]) idx.push(i);
    }
    const sign = direction === "minimize" ? 1 : -1;
    idx.sort((a, b) => sign * (data.value[a] - data.value[b]));
    let lo = Infinity;
    let hi = -Infinity;
    for (const i of idx) {
      if (data.value[i] < lo) lo = data.value[i];
      if (data.value[i] > hi) hi = data.value[i];
    }
    memo = { key, idx, lo, hi };
    ranked.set(data, memo);
  }
  const { lo, hi } = memo;
  const idx = memo.idx;
  const total = idx.length;
  if (total > limit) {
    const best = Math.floor(limit / 4);
    const rest = total - best;
    const step = rest / (limit - best);
    const sample = idx.slice(0, best);
    for (let k = 0; k < limit - best; k++) sample.push(idx[best + Math.floor(k * step)]);
    return { idx: sample, total, lo, hi };
  }
  return { idx: idx.slice(), total, lo, hi };
}

// Labels along a horizontal axis, shortened so neighbours never overlap (a label keeps at least 3 characters).
export function fitLabel(ctx, text, room) {
  if (ctx.measureText(text).width <= room) return text;
  let t = text;
  while (t.length > 3 && ctx.measureText(`${t}…`).width > room) t = t.slice(0, -1);
  return `${t}…`;
}
