// Constraints: each outcome constraint's metric by trial number against its bound, one small chart per
// constraint (the bound a dashed line, the side past it shaded; values that met it filled, those that broke
// it hollow in the infeasible colour), with how many completed trials broke it. Hidden on a study without
// outcome constraints.

import { html, render } from "../html.js";
import { COLORS, fmt, horizontalGrid, niceTicks, padRange, prepare, unit } from "../charts.js";
import { constraintText, meets } from "../format.js";

const HEIGHT = 180;

// One constraint's chart: returns {drawn, violated}
export function drawConstraint(canvas, data, c) {
  const { ctx, w, h } = prepare(canvas, 420, HEIGHT);
  const n = data.state.length;
  const box = { l: 54, r: w - 10, t: 10, b: h - 34 };
  let lo = c.bound;
  let hi = c.bound;
  for (let i = 0; i < n; i++) {
    const v = data.metrics[i]?.[c.metric];
    if (data.state[i] !== "complete" || typeof v !== "number" || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (hi === lo) [lo, hi] = padRange(lo, hi);
  // the side past the bound keeps a fifth of the height, so the shading (and a point just past it) shows
  const room = (hi / 2 - lo / 2) * 0.5;
  if (c.op === ">=") lo = Math.min(lo, c.bound - room);
  else hi = Math.max(hi, c.bound + room);
  [lo, hi] = padRange(lo, hi, 0.06); // finite over any finite values
  const xmax = Math.max(n, 1);
  const sx = (k) => box.l + ((k - 0.5) / xmax) * (box.r - box.l);
  const sy = (v) => box.b - unit(v, lo, hi) * (box.b - box.t);
  let yTicks = niceTicks(lo, hi, 4);
  if (yTicks.length < 2) yTicks = niceTicks(lo, hi, 8); // one tick is no scale
  horizontalGrid(ctx, box, yTicks, sy);
  // the side past the bound, shaded
  const yb = sy(c.bound);
  ctx.fillStyle = "rgba(170, 51, 119, 0.08)";
  if (c.op === ">=") ctx.fillRect(box.l, yb, box.r - box.l, box.b - yb);
  else ctx.fillRect(box.l, box.t, box.r - box.l, yb - box.t);
  ctx.fillStyle = COLORS.axis;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of yTicks) ctx.fillText(fmt(t), box.l - 5, sy(t));
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const xTicks = niceTicks(1, xmax, Math.max(2, Math.min(5, Math.floor((box.r - box.l) / 70)))).filter((t) => Number.isInteger(t) && t >= 1);
  for (const t of xTicks) ctx.fillText(fmt(t), sx(t), box.b + 5);
  ctx.fillText("trial number", (box.l + box.r) / 2, box.b + 19);
  ctx.strokeStyle = COLORS.axis;
  ctx.lineWidth = 1;
  ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);
  // the bound
  ctx.strokeStyle = COLORS.best;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([6, 4]);
  ctx.beginPath();
  ctx.moveTo(box.l, Math.round(yb) + 0.5);
  ctx.lineTo(box.r, Math.round(yb) + 0.5);
  ctx.stroke();
  ctx.setLineDash([]);
  // the bound's value at the right end of its line, on the side that meets it
  const label = `${c.op === ">=" ? "≥" : "≤"} ${fmt(c.bound)}`;
  ctx.font = "600 12px system-ui, sans-serif";
  ctx.textAlign = "right";
  ctx.textBaseline = c.op === ">=" ? "bottom" : "top";
  ctx.strokeStyle = COLORS.halo; // a halo over the points and the grid
  ctx.lineWidth = 3;
  ctx.strokeText(label, box.r - 4, yb + (c.op === ">=" ? -3 : 3));
  ctx.fillStyle = COLORS.best;
  ctx.fillText(label, box.r - 4, yb + (c.op === ">=" ? -3 : 3));
  ctx.font = "12px system-ui, sans-serif";
  // the values
  const size = n > 5000 ? 1.5 : n > 500 ? 3 : 5;
  const hollow = new Path2D();
  let drawn = 0;
  let violated = 0;
  ctx.fillStyle = COLORS.point;
  ctx.beginPath();
  for (let i = 0; i < n; i++) {
    const v = data.metrics[i]?.[c.metric];
    if (data.state[i] !== "complete" || typeof v !== "number") continue;
    const [x, y] = [sx(i + 1) - size / 2, sy(v) - size / 2];
    if (meets(c, v) === false) {
      hollow.rect(x, y, size, size);
      violated++;
    } else ctx.rect(x, y, size, size);
    drawn++;
  }
  ctx.fill();
  ctx.strokeStyle = COLORS.infeasible;
  ctx.lineWidth = size > 2 ? 1.5 : 1;
  ctx.stroke(hollow);
  return { drawn, violated };
}

export function mount(el, study) {
  const constraints = study.constraints ?? [];
  el.hidden = !constraints.length;
  if (!constraints.length) return { render() {} };
  render(
    el,
    html`<div class="panel-head"><h2 id="constraints-title">Constraints</h2>
      <span class="legend"><i class="sw point"></i>met <i class="sw infeasible"></i>broken <i class="sw bound"></i>the bound (the shaded side breaks it)</span></div>
    <p class="empty" data-testid="constraints-empty" hidden>No results yet.</p>
    <div class="constraint-charts" data-testid="constraints">${constraints.map(
      (c, k) => html`<figure class="constraint" data-testid="constraint" data-metric="${c.metric}">
        <figcaption><b>${constraintText(c)}</b> <span class="dim" data-testid="constraint-count"></span></figcaption>
        <canvas class="chart small" role="img" data-k="${k}" aria-label="${c.metric} by trial number against its bound, ${constraintText(c)}"></canvas>
      </figure>`,
    )}</div>`,
  );
  const empty = el.querySelector("[data-testid=constraints-empty]");
  const charts = el.querySelector("[data-testid=constraints]");
  const figures = [...el.querySelectorAll("figure")];
  let drawnVersion = -1;
  let drawnWidth = -1;
  return {
    render() {
      const { data } = study;
      const none = !data.state.some((s) => s === "complete");
      empty.hidden = !none;
      charts.hidden = none;
      if (none) return;
      // redraw only when the trials or the width changed
      if (data.version === drawnVersion && charts.clientWidth === drawnWidth) return;
      drawnVersion = data.version;
      drawnWidth = charts.clientWidth;
      constraints.forEach((c, k) => {
        const canvas = figures[k].querySelector("canvas");
        const { drawn, violated } = drawConstraint(canvas, data, c);
        canvas.dataset.drawn = String(drawn);
        canvas.dataset.violated = String(violated);
        figures[k].querySelector("[data-testid=constraint-count]").textContent = `broken by ${violated} of ${drawn} completed trials`;
      });
    },
  };
}
