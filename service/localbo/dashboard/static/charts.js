// Canvas charts: values by trial and the iterate path, and the canvas helpers the panels share. No library:
// each chart draws tens of thousands of marks in a few milliseconds by batching them into a few paths.

// Okabe-Ito hues (distinguishable with the common colour-vision deficiencies), darkened where needed so
// every mark has a contrast of at least 3:1 on white (WCAG 1.4.11), lightened on the dark scheme's panels:
// Okabe-Ito's orange is 2.25:1 on white, its yellow 1.32:1. The colours live in style.css (--chart-*) and
// theme.js reads them; tests/test_dashboard_v2.py and tests/test_dashboard_operators.py check the ratios.
import { COLORS, syncTheme } from "./theme.js";

export { COLORS };

// the sources of the points the policy did not make (vocabulary.py's FALLBACK_SOURCES)
export const FALLBACKS = new Set(["fallback", "fallback-safe"]);

export const fmt = (v) => {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(3);
  return Number(v.toPrecision(5)).toString();
};

// A canvas sized to its box at the device's pixel ratio (the fallback size while it has none); returns the
// 2-D context in CSS pixels.
export function prepare(canvas, fallbackW = 600, fallbackH = 260) {
  syncTheme();
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || fallbackW;
  const h = canvas.clientHeight || fallbackH;
  if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(h * ratio)) {
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = "12px system-ui, sans-serif";
  return { ctx, w, h };
}

// text cut to maxWidth pixels with an ellipsis, so neighbouring labels never overlap
export function fit(ctx, text, maxWidth) {
  text = String(text);
  if (ctx.measureText(text).width <= maxWidth) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= maxWidth) lo = mid;
    else hi = mid - 1;
  }
  return lo ? `${text.slice(0, lo)}…` : "";
}

// Scales that survive any finite value: spans are taken on halves (1e308 - (-1e308) is Infinity, 1e308 / 2 -
// (-1e308) / 2 is not), positions are clamped, ticks are integer multiples of a step (never an accumulating
// sum that a step below the values' precision would never move: a hung page).
export const MAX = Number.MAX_VALUE;

// where v sits between lo and hi: 0 at lo, 1 at hi (0.5 when lo = hi; never NaN for finite arguments)
export function unit(v, lo, hi) {
  const half = hi / 2 - lo / 2;
  if (!(half > 0)) return 0.5;
  const p = (v / 2 - lo / 2) / half;
  return Number.isFinite(p) ? p : Number.isNaN(p) ? 0.5 : p > 0 ? 1e6 : -1e6;
}

// the value at position p between lo and hi (p = 0: lo, 1: hi), finite wherever lo and hi are
export const lerp = (lo, hi, p) => lo * (1 - p) + hi * p;

// [lo, hi] widened by `frac` of its span on each side (a point: by a unit, or a twentieth of its size), kept finite
export function padRange(lo, hi, frac = 0.04) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || lo > hi) return [0, 1];
  if (hi === lo) {
    const m = Math.max(Math.abs(lo) / 20, 0.5);
    return [Math.max(-MAX, lo - m), Math.min(MAX, hi + m)];
  }
  const pad = (hi / 2 - lo / 2) * 2 * frac; // frac <= 0.5: finite
  return [Math.max(-MAX, lo - pad), Math.min(MAX, hi + pad)];
}

export function niceTicks(lo, hi, count = 5) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (!(hi > lo)) return [lo];
  const step0 = hi / count - lo / count;
  if (!(step0 > 0) || !Number.isFinite(step0)) return [lo, hi];
  const mag = 10 ** Math.floor(Math.log10(step0));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  if (!Number.isFinite(step) || step <= 0) step = step0;
  const first = Math.ceil(lo / step - 1e-9);
  const last = Math.floor(hi / step + 1e-9);
  if (!(last - first <= 4 * count + 4) || !Number.isFinite(first)) return [lo, hi];
  const ticks = [];
  for (let k = first; k <= last; k++) {
    const t = Number((k * step).toPrecision(12));
    if (Number.isFinite(t) && t !== ticks[ticks.length - 1]) ticks.push(t);
  }
  return ticks.length ? ticks : [lo, hi];
}

function frame(ctx, box, xTicks, yTicks, sx, sy, xLabel, yLabelOf) {
  frameAxes(ctx, box, box.b, xTicks, yTicks, sx, sy, xLabel, yLabelOf);
}

// horizontal grid lines across the plot at the y ticks (crisp: on the half pixel)
export function horizontalGrid(ctx, box, yTicks, sy, colour = COLORS.grid) {
  ctx.strokeStyle = colour;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of yTicks) {
    const y = Math.round(sy(t)) + 0.5;
    ctx.moveTo(box.l, y);
    ctx.lineTo(box.r, y);
  }
  ctx.stroke();
}

// the grid, the y labels, the x labels from `labelsAt` down, the plot's outline (every chart's frame)
export function frameAxes(ctx, box, labelsAt, xTicks, yTicks, sx, sy, xLabel, yLabelOf, xLabelOf = fmt) {
  horizontalGrid(ctx, box, yTicks, sy);
  ctx.fillStyle = COLORS.axis;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of yTicks) ctx.fillText(yLabelOf(t), box.l - 6, sy(t));
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of xTicks) ctx.fillText(xLabelOf(t), sx(t), labelsAt + 6);
  ctx.fillText(xLabel, (box.l + box.r) / 2, labelsAt + 22);
  ctx.strokeStyle = COLORS.axis;
  ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);
}

// Every value by trial number, the best so far as a step line; running and failed trials as marks in
// lanes of their own under the plot (a failed trial has no value to place it by). Infeasible trials (those
// of data.feasible that are false: a value that broke an outcome constraint) as hollow marks of their own
// colour, and the best so far over the feasible ones only.
// data: {value, state, feasible?} arrays by number - 1; highlight: null or (i) => boolean (a brushed
// selection: the rest is drawn pale). Returns how many points it drew (infeasible: how many of them
// were infeasible) and the scales, for a tooltip.
export function drawHistory(canvas, data, { direction = "minimize", log = false, highlight = null, expired = null } = {}) {
  const { ctx, w, h } = prepare(canvas);
  const n = data.value.length;
  // open trials in two lanes: running, and stale (its lease ran out: `stale`, or `running` past its lease,
  // which `expired` (a Set of trial numbers) names when the page knows the leases)
  const laneState = (i) => {
    const s = data.state[i];
    if (s === "failed") return "failed";
    if (s === "stale" || (s === "running" && expired?.has(i + 1))) return "stale";
    if (s === "running") return "running";
    return null;
  };
  const counts = { failed: 0, running: 0, stale: 0 };
  for (let i = 0; i < n; i++) {
    const s = laneState(i);
    if (s) counts[s]++;
  }
  const lanes = ["failed", "running", "stale"].filter((s) => counts[s]).map((state) => ({ state, label: state }));
  const LANE = 14;
  const GAP = 8; // between the plot and the lanes: the lowest y label and the first lane's label never touch
  const box = { l: 64, r: w - 12, t: 10, b: h - 40 - lanes.length * LANE - (lanes.length ? GAP : 0) };
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = data.value[i];
    if (v !== null && Number.isFinite(v) && data.state[i] === "complete") {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  const any = lo <= hi;
  if (!any) {
    lo = 0;
    hi = 1;
  }
  // log: log10(v - shift), shifted so the smallest value stays finite when values reach 0 or below; on
  // halves, so a shift of -1e308 under a value of 1e308 stays finite
  const LOG2 = Math.log10(2);
  const shift = log ? (lo > 0 ? 0 : Math.max(-MAX, lo - Math.max((hi / 2 - lo / 2) * 2e-3, Math.abs(lo) * 1e-12, 1e-12))) : 0;
  const tf = log ? (v) => Math.log10(Math.max(v / 2 - shift / 2, Number.MIN_VALUE)) + LOG2 : (v) => v;
  const [tlo, thi] = padRange(tf(lo), tf(hi), 0.04);
  const xmax = Math.max(n, 1);
  const sx = (k) => box.l + ((k - 0.5) / xmax) * (box.r - box.l);
  const sy = (t) => box.b - unit(t, tlo, thi) * (box.b - box.t);
  const yTicks = log ? niceTicks(Math.ceil(tlo), Math.floor(thi), 5).filter(Number.isInteger) : niceTicks(tlo, thi);
  const yLabel = log ? (t) => fmt((10 ** (t - LOG2) + shift / 2) * 2) : fmt;
  const xTicks = niceTicks(1, xmax, Math.max(2, Math.min(6, Math.floor((box.r - box.l) / 70)))).filter((t) => Number.isInteger(t) && t >= 1);
  // the x axis' labels go under the lanes
  frameAxes(ctx, box, h - 40, xTicks, yTicks.length ? yTicks : [tlo, thi], sx, sy, "trial number", yLabel);

  let drawn = 0;
  let infeasible = 0;
  const feasible = data.feasible ?? [];
  const size = n > 5000 ? 1.5 : n > 500 ? 3 : 5;
  // filled squares for the values, hollow ones (a path of their own, stroked) for the infeasible values
  for (const pass of highlight ? ["pale", "chosen"] : ["all"]) {
    const grow = pass === "chosen" ? 2 : 0;
    const side = size + grow;
    ctx.fillStyle = pass === "pale" ? COLORS.pale : COLORS.point;
    ctx.strokeStyle = pass === "pale" ? COLORS.pale : COLORS.infeasible;
    const lw = size > 2 ? 1.5 : 1;
    ctx.lineWidth = lw;
    const hollow = new Path2D();
    ctx.beginPath();
    for (let i = 0; i < n; i++) {
      const v = data.value[i];
      if (v === null || data.state[i] !== "complete") continue;
      if (pass !== "all" && highlight(i) !== (pass === "chosen")) continue;
      const x = sx(i + 1) - side / 2;
      const y = sy(tf(v)) - side / 2;
      if (feasible[i] === false) {
        hollow.rect(x + lw / 2 - 0.5, y + lw / 2 - 0.5, side + 1 - lw, side + 1 - lw); // a pixel bigger: as visible
        infeasible++;
      } else ctx.rect(x, y, side, side);
      drawn++;
    }
    ctx.fill();
    ctx.stroke(hollow);
  }

  // fallback points (the policy failed or was late: a random point, or in safe mode the safest known one
  // again): a ring around the mark
  let fallbacks = 0;
  const source = data.source ?? [];
  ctx.strokeStyle = COLORS.running;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  const ring = size + 3;
  for (let i = 0; i < n; i++) {
    const v = data.value[i];
    if (v === null || data.state[i] !== "complete" || !FALLBACKS.has(source[i])) continue;
    if (highlight && !highlight(i)) continue;
    const [x, y] = [sx(i + 1), sy(tf(v))];
    ctx.moveTo(x + ring, y);
    ctx.arc(x, y, ring, 0, 2 * Math.PI);
    fallbacks++;
  }
  ctx.stroke();

  const better = direction === "minimize" ? (a, b) => a < b : (a, b) => a > b;
  ctx.strokeStyle = COLORS.best;
  ctx.lineWidth = 2;
  ctx.beginPath();
  let best = null;
  for (let i = 0; i < n; i++) {
    const v = data.value[i];
    if (v === null || data.state[i] !== "complete" || feasible[i] === false) continue;
    if (best === null) {
      best = v;
      ctx.moveTo(sx(i + 1), sy(tf(best)));
    } else if (better(v, best)) {
      ctx.lineTo(sx(i + 1), sy(tf(best)));
      best = v;
      ctx.lineTo(sx(i + 1), sy(tf(best)));
    }
  }
  if (best !== null) ctx.lineTo(box.r, sy(tf(best)));
  ctx.stroke();

  // the lanes: failed trials as crosses, running ones as hollow circles, stale ones (or past their lease) as
  // hollow grey squares, each at its number
  const r = n > 2000 ? 2.5 : 4;
  lanes.forEach((lane, k) => {
    const y = box.b + GAP + LANE * k + LANE / 2;
    ctx.fillStyle = COLORS.axis;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillText(lane.label, box.l - 6, y);
    ctx.strokeStyle = { failed: COLORS.failed, running: COLORS.running, stale: COLORS.stale }[lane.state];
    ctx.lineWidth = 2;
    ctx.beginPath();
    for (let i = 0; i < n; i++) {
      if (laneState(i) !== lane.state) continue;
      const x = sx(i + 1);
      if (lane.state === "failed") {
        ctx.moveTo(x - r, y - r);
        ctx.lineTo(x + r, y + r);
        ctx.moveTo(x - r, y + r);
        ctx.lineTo(x + r, y - r);
      } else if (lane.state === "stale") {
        ctx.rect(x - r, y - r, 2 * r, 2 * r);
      } else {
        ctx.moveTo(x + r, y);
        ctx.arc(x, y, r, 0, 2 * Math.PI);
      }
    }
    ctx.stroke();
  });
  const laneOf = (y) => {
    const k = Math.floor((y - box.b - GAP) / LANE);
    return k >= 0 && k < lanes.length ? lanes[k].state : null;
  };
  return { drawn, infeasible, fallbacks, stale: counts.stale, running: counts.running, sx, sy, tf, box, laneOf, laneState };
}

// A policy's centre over time, one line per parameter, in the parameter's [low, high] range (0..1).
// path: [{t, x}] (t: the point's place in the path, oldest first), names: parameter names; shows the
// `limit` parameters that moved most.
export function drawPath(canvas, path, names, limit = 8) {
  const { ctx, w, h } = prepare(canvas);
  const box = { l: 48, r: w - 150, t: 10, b: h - 40 };
  const d = names.length;
  const moved = names.map((_, j) => {
    let a = Infinity;
    let b = -Infinity;
    for (const p of path) {
      a = Math.min(a, p.x[j]);
      b = Math.max(b, p.x[j]);
    }
    return b - a;
  });
  const shown = [...names.keys()].sort((a, b) => moved[b] - moved[a]).slice(0, limit).sort((a, b) => a - b);
  const tmax = Math.max(1, ...path.map((p) => p.t));
  const sx = (t) => box.l + (t / tmax) * (box.r - box.l);
  const sy = (u) => box.b - u * (box.b - box.t);
  frame(ctx, box, niceTicks(0, tmax, 6).filter(Number.isInteger), [0, 0.25, 0.5, 0.75, 1], sx, sy, "path point (oldest first)", (u) => (u === 0 ? "low" : u === 1 ? "high" : fmt(u)));
  ctx.lineWidth = 2;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  shown.forEach((j, k) => {
    const color = COLORS.lines[k % COLORS.lines.length];
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.setLineDash(k >= COLORS.lines.length ? [5, 3] : []);
    ctx.beginPath();
    path.forEach((p, i) => (i ? ctx.lineTo(sx(p.t), sy(p.x[j])) : ctx.moveTo(sx(p.t), sy(p.x[j]))));
    ctx.stroke();
    for (const p of path) ctx.fillRect(sx(p.t) - 2, sy(p.x[j]) - 2, 4, 4);
    ctx.fillText(fit(ctx, names[j], w - box.r - 28), box.r + 24, box.t + 8 + k * 18);
    ctx.beginPath();
    ctx.moveTo(box.r + 6, box.t + 8 + k * 18);
    ctx.lineTo(box.r + 20, box.t + 8 + k * 18);
    ctx.stroke();
  });
  ctx.setLineDash([]);
  if (d > shown.length) {
    ctx.fillStyle = COLORS.axis;
    ctx.fillText(`${shown.length} of ${d} (moved most)`, box.r + 6, box.t + 8 + shown.length * 18);
  }
  return path.length * shown.length;
}
