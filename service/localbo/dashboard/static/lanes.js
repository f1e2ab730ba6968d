// The timeline's layout (panels/timeline.js draws it): the trials as intervals from asked to told, one lane
// per client_id ("no client" for trials asked without one), overlapping trials of a lane on rows of their
// own (its parallelism). Pure: no DOM.

import { toMs } from "./format.js";

export const NO_CLIENT = "no client";
export const MAX_LANES = 24; // the most recently active; the rest are counted, not drawn
export const MAX_ROWS = 6; // a lane's rows; more overlapping trials share its last row

// data: the study's columns; clients[i]: trial i + 1's client_id (undefined: not read); now: ms
export function layout(data, clients, now) {
  const lanes = new Map();
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < data.number.length; i++) {
    if (!data.number[i] || clients[i] === undefined) continue;
    const start = toMs(data.created[i]);
    if (start === null) continue;
    const told = toMs(data.completed[i]);
    const end = told ?? Math.max(start, now); // open: up to now
    const key = clients[i] ?? NO_CLIENT;
    if (!lanes.has(key)) lanes.set(key, { client: key, bars: [], last: -Infinity, failed: 0, open: 0, done: 0 });
    const lane = lanes.get(key);
    const state = data.state[i];
    lane.bars.push({ number: i + 1, start, end, state, open: told === null });
    lane.last = Math.max(lane.last, told ?? start);
    if (state === "failed") lane.failed++;
    else if (told === null) lane.open++;
    else lane.done++;
    lo = Math.min(lo, start);
    hi = Math.max(hi, end);
  }
  const all = [...lanes.values()].sort((a, b) => b.last - a.last);
  const shown = all.slice(0, MAX_LANES).sort((a, b) => (a.client === NO_CLIENT) - (b.client === NO_CLIENT) || String(a.client).localeCompare(String(b.client)));
  for (const lane of shown) lane.rows = packRows(lane.bars);
  return { lanes: shown, hidden: all.length - shown.length, lo, hi };
}

// greedy interval packing: each bar on the first row free at its start; returns the number of rows
function packRows(bars) {
  bars.sort((a, b) => a.start - b.start || a.number - b.number);
  const ends = [];
  for (const bar of bars) {
    let row = ends.findIndex((end) => end <= bar.start);
    if (row < 0) row = ends.length < MAX_ROWS ? ends.length : MAX_ROWS - 1;
    bar.row = row;
    ends[row] = Math.max(ends[row] ?? -Infinity, bar.end);
  }
  return Math.max(1, ends.length);
}

// time ticks at a round step (1 s ... 1 week) over [lo, hi] ms
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1000);
export function timeTicks(lo, hi, count = 6) {
  if (!(hi > lo)) return { ticks: [lo], step: 1000 };
  const step = STEPS.find((s) => (hi - lo) / s <= count) ?? Math.ceil((hi - lo) / count / 864e5) * 864e5;
  const ticks = [];
  for (let k = Math.ceil(lo / step); k * step <= hi && ticks.length < 50; k++) ticks.push(k * step);
  return { ticks, step };
}

export function timeLabel(ms, step) {
  const d = new Date(ms);
  if (step >= 86400000) return d.toLocaleDateString([], { month: "short", day: "numeric" });
  return d.toLocaleTimeString([], step >= 60000 ? { hour: "2-digit", minute: "2-digit" } : { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}
