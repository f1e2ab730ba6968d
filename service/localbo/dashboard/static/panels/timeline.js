// A timeline: each trial a bar from asked to told, one lane per client_id (a rig), so an operator sees which
// rig did what and when, its idle gaps, its parallel trials, and a rig that stopped. The series carries no
// client_id: it is read from GET .../trials (pages of 1000, the latest MAX_READ trials at most), then for new
// trials only. Under the chart, a table per lane: trials, failed, open, last activity.

import { get } from "../api.js";
import { html, render } from "../html.js";
import { COLORS, fit, prepare, unit } from "../charts.js";
import { ago, dateTime } from "../format.js";
import { MAX_ROWS, layout, timeLabel, timeTicks } from "../lanes.js";

export const MAX_READ = 5000;
const PAGE = 1000;
const ROW_H = 9;
const LANE_GAP = 8;

export function mount(el, study) {
  render(
    el,
    html`<div class="panel-head"><h2 id="timeline-title">Timeline by client</h2>
      <span class="legend"><i class="sw point"></i>told <i class="sw failed">×</i>failed <i class="sw running">▭</i>open (asked, not told)</span></div>
    <p class="dim" data-testid="timeline-note">Each trial a bar from asked to told, one lane per client_id (the ask's); overlapping bars in a lane are its trials in parallel.</p>
    <canvas id="timeline" class="chart" role="img" aria-label="Trials as bars from asked to told, one lane per client" data-testid="timeline"></canvas>
    <div class="scroll" id="timeline-lanes"></div>`,
  );
  const canvas = el.querySelector("#timeline");
  const table = el.querySelector("#timeline-lanes");
  const clients = []; // by number - 1; undefined until read
  let readUpTo = null; // the highest number whose client was read
  let reading = null;
  let drawnKey = "";

  const read = async (after) => {
    for (let pages = 0; pages < MAX_READ / PAGE; pages++) {
      const page = await get(`${study.path}/trials?after=${after}&limit=${PAGE}`, { signal: study.signal });
      for (const t of page.trials) clients[t.number - 1] = t.client_id ?? null;
      if (page.trials.length) readUpTo = Math.max(readUpTo ?? 0, page.trials[page.trials.length - 1].number);
      if (page.next_after === null || page.next_after === undefined) break;
      after = page.next_after;
    }
    study.rerender();
  };
  const catchUp = () => {
    if (reading) return;
    const last = study.data.number.length;
    const after = readUpTo ?? Math.max(0, last - MAX_READ);
    if (readUpTo !== null && last <= readUpTo) return;
    reading = read(after)
      .catch((error) => !study.signal.aborted && study.panelFailed?.("timeline-panel", error))
      .finally(() => {
        reading = null;
        if (study.data.number.length > (readUpTo ?? 0) && readUpTo !== null) catchUp();
      });
  };
  catchUp();

  const draw = (force = false) => {
    const now = Math.max(Date.now(), study.asOf || 0);
    const key = `${study.data.version}:${readUpTo}:${canvas.clientWidth}:${Math.floor(now / 10000)}`;
    if (key === drawnKey && !force) return;
    drawnKey = key;
    const { lanes, hidden, lo, hi } = layout(study.data, clients, now);
    el.hidden = false;
    if (!lanes.length) {
      canvas.hidden = true;
      render(table, html`<p class="empty">${readUpTo === null && study.data.number.length ? "reading the clients…" : "No trials yet."}</p>`);
      return;
    }
    canvas.hidden = false;
    const heights = lanes.map((l) => l.rows * ROW_H + LANE_GAP);
    canvas.style.height = `${heights.reduce((s, h) => s + h, 0) + 40}px`;
    const { ctx, w } = prepare(canvas);
    const box = { l: Math.min(110, Math.max(60, w * 0.18)), r: w - 10, t: 6 };
    const sx = (t) => box.l + unit(t, lo, hi) * (box.r - box.l);
    let y = box.t;
    let bars = 0;
    let failedBars = 0;
    ctx.textBaseline = "middle";
    lanes.forEach((lane, k) => {
      const h = heights[k];
      ctx.fillStyle = COLORS.text;
      ctx.textAlign = "right";
      ctx.fillText(fit(ctx, lane.client, box.l - 8), box.l - 6, y + (h - LANE_GAP) / 2);
      ctx.strokeStyle = COLORS.grid;
      ctx.beginPath();
      ctx.moveTo(box.l, Math.round(y + h - LANE_GAP / 2) + 0.5);
      ctx.lineTo(box.r, Math.round(y + h - LANE_GAP / 2) + 0.5);
      ctx.stroke();
      for (const bar of lane.bars) {
        const x0 = sx(bar.start);
        const x1 = Math.max(x0 + 2, sx(bar.end));
        const top = y + Math.min(bar.row, MAX_ROWS - 1) * ROW_H;
        bars++;
        if (bar.state === "failed") {
          failedBars++;
          ctx.fillStyle = COLORS.failed;
          ctx.fillRect(x0, top + 1, x1 - x0, ROW_H - 3);
          ctx.strokeStyle = COLORS.failed;
          ctx.lineWidth = 1.5;
          ctx.beginPath(); // an × past the bar's end: failed, also without colour
          ctx.moveTo(x1 + 1, top);
          ctx.lineTo(x1 + 7, top + ROW_H - 2);
          ctx.moveTo(x1 + 7, top);
          ctx.lineTo(x1 + 1, top + ROW_H - 2);
          ctx.stroke();
        } else if (bar.open) {
          ctx.strokeStyle = bar.state === "stale" ? COLORS.stale : COLORS.running;
          ctx.lineWidth = 1.5;
          ctx.strokeRect(x0 + 0.75, top + 1.75, x1 - x0 - 1.5, ROW_H - 4.5);
        } else {
          ctx.fillStyle = COLORS.point;
          ctx.fillRect(x0, top + 1, x1 - x0, ROW_H - 3);
        }
      }
      y += h;
    });
    const { ticks, step } = timeTicks(lo, hi, Math.max(2, Math.floor((box.r - box.l) / 90)));
    ctx.fillStyle = COLORS.axis;
    ctx.strokeStyle = COLORS.axis;
    ctx.lineWidth = 1;
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.beginPath();
    ctx.moveTo(box.l, y + 0.5);
    ctx.lineTo(box.r, y + 0.5);
    for (const t of ticks) {
      ctx.moveTo(Math.round(sx(t)) + 0.5, y);
      ctx.lineTo(Math.round(sx(t)) + 0.5, y + 4);
      const label = timeLabel(t, step);
      const half = ctx.measureText(label).width / 2;
      ctx.fillText(label, Math.min(Math.max(sx(t), box.l + half), w - 2 - half), y + 6); // never cut at an edge
    }
    ctx.stroke();
    Object.assign(canvas.dataset, { lanes: lanes.length, bars, failedBars }); // data-failed is the error boundary's
    render(
      table,
      html`<table class="grid compact" data-testid="timeline-lanes"><thead><tr><th scope="col">client</th><th scope="col" class="num">trials</th><th scope="col" class="num">told</th><th scope="col" class="num">failed</th><th scope="col" class="num">open</th><th scope="col">last asked or told</th></tr></thead>
      <tbody>${lanes.map(
        (l) => html`<tr data-testid="timeline-lane" data-client="${l.client}" data-bars="${l.bars.length}" data-failed-trials="${l.failed}"><td class="wrap">${l.client}</td><td class="num">${l.bars.length}</td><td class="num">${l.done}</td><td class="num">${l.failed}</td><td class="num">${l.open}</td><td title="${dateTime(l.last / 1000)}">${ago(l.last / 1000, now)}</td></tr>`,
      )}</tbody></table>${hidden ? html`<p class="dim">and ${hidden} clients less recently active (not drawn)</p>` : ""}${
        study.data.number.length > MAX_READ ? html`<p class="dim">The latest ${MAX_READ} trials.</p>` : ""
      }`,
    );
  };
  return {
    render: () => draw(),
    tick: () => draw(),
    onTrials: catchUp,
  };
}
