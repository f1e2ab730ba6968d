// One scatter of two objectives (the Pareto front panel draws one, or one per pair of 3 or 4 objectives):
// every completed trial a mark, the dominated ones faded, the infeasible ones hollow (as in the other charts),
// the front's trials in full colour; with `step`, the front joined by its staircase and the area it
// dominates up to the reference point shaded (that area is the hypervolume); the reference point a cross.

import { COLORS, fit, fmt, horizontalGrid, lerp, niceTicks, padRange, prepare, unit } from "./charts.js";

// the front's hue (COLORS.lines[0], the colour scheme's), faded for the dominated marks and the shaded volume:
// a fixed dark blue vanished on the dark scheme's panels
const FADED_ALPHA = 0.65;
const SHADE_ALPHA = 0.1;

// padded; finite over any finite values (-1e308 .. 1e308: spans on halves, charts.js)
function range(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(lo <= hi)) [lo, hi] = [0, 1];
  if (hi === lo) [lo, hi] = padRange(lo, hi);
  return padRange(lo, hi, 0.06);
}

// an axis' title: its metric, shortened to fit, then which way is better (kept whole: it is what the title is for)
export function axisTitle(ctx, label, minimise, room) {
  const better = `, better ${minimise ? "←" : "→"}`;
  return `${fit(ctx, label, Math.max(room - ctx.measureText(better).width, 24))}${better}`;
}

// The front's trials in staircase order: sorted by the x objective, better first (ties: the better y first).
function staircase(front, minimise) {
  const key = (v, k) => (minimise[k] ? v : -v);
  return [...front].sort((a, b) => key(a.x, 0) - key(b.x, 0) || key(a.y, 1) - key(b.y, 1));
}

// points: [{i, x, y, front, infeasible}]; labels: [x axis, y axis]; minimise: [x, y] (which way is better);
// ref: [x, y] or null; rect: a brushed rectangle in the objectives' values ({x: [lo, hi], y: [lo, hi]}), or null. Returns the geometry (for brushing
// and the tooltip) and the counts.
export function drawFront(canvas, { points, labels, minimise, ref = null, refLabel = "reference point", step = true, rect = null, height = 300 }) {
  const { ctx, w, h } = prepare(canvas, 600, height);
  const box = { l: 66, r: w - 14, t: 12, b: h - 42 };
  const [xlo, xhi] = range([...points.map((p) => p.x), ...(ref ? [ref[0]] : [])]);
  const [ylo, yhi] = range([...points.map((p) => p.y), ...(ref ? [ref[1]] : [])]);
  const sx = (v) => box.l + unit(v, xlo, xhi) * (box.r - box.l);
  const sy = (v) => box.b - unit(v, ylo, yhi) * (box.b - box.t);
  const xTicks = niceTicks(xlo, xhi, Math.max(2, Math.min(6, Math.floor((box.r - box.l) / 80))));
  const yTicks = niceTicks(ylo, yhi, Math.max(2, Math.min(5, Math.floor((box.b - box.t) / 40))));

  // the grid, both ways, and the tick labels
  horizontalGrid(ctx, box, yTicks, sy);
  ctx.beginPath();
  for (const t of xTicks) {
    const x = Math.round(sx(t)) + 0.5;
    ctx.moveTo(x, box.t);
    ctx.lineTo(x, box.b);
  }
  ctx.stroke();
  ctx.fillStyle = COLORS.axis;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of yTicks) ctx.fillText(fmt(t), box.l - 5, sy(t));
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of xTicks) ctx.fillText(fmt(t), sx(t), box.b + 5);
  // each axis: its metric, its direction, and which way is better
  ctx.fillStyle = COLORS.text;
  ctx.fillText(axisTitle(ctx, labels[0], minimise[0], box.r - box.l), (box.l + box.r) / 2, box.b + 22);
  ctx.save();
  ctx.translate(13, (box.t + box.b) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = "middle";
  ctx.fillText(axisTitle(ctx, labels[1], minimise[1], box.b - box.t), 0, 0);
  ctx.restore();
  ctx.strokeStyle = COLORS.axis;
  ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);

  ctx.save();
  ctx.beginPath();
  ctx.rect(box.l, box.t, box.r - box.l, box.b - box.t);
  ctx.clip();
  const front = points.filter((p) => p.front);
  const stairs = step ? staircase(front, minimise) : [];
  // the area the front dominates up to the reference point: the hypervolume
  const beats = (p) => ref && (minimise[0] ? p.x < ref[0] : p.x > ref[0]) && (minimise[1] ? p.y < ref[1] : p.y > ref[1]);
  const counted = stairs.filter(beats);
  if (counted.length) {
    ctx.fillStyle = COLORS.lines[0];
    ctx.globalAlpha = SHADE_ALPHA;
    ctx.beginPath();
    ctx.moveTo(sx(counted[0].x), sy(ref[1]));
    counted.forEach((p, k) => {
      ctx.lineTo(sx(p.x), sy(p.y));
      const next = counted[k + 1];
      ctx.lineTo(next ? sx(next.x) : sx(ref[0]), sy(p.y));
    });
    ctx.lineTo(sx(ref[0]), sy(ref[1]));
    ctx.closePath();
    ctx.fill();
    ctx.globalAlpha = 1;
  }
  // the dominated trials, faded; the infeasible ones hollow
  const size = points.length > 2000 ? 3 : 6;
  ctx.fillStyle = COLORS.lines[0];
  ctx.globalAlpha = FADED_ALPHA;
  ctx.beginPath();
  const hollow = new Path2D();
  for (const p of points) {
    if (p.front) continue;
    if (p.infeasible) hollow.rect(sx(p.x) - size / 2, sy(p.y) - size / 2, size, size);
    else ctx.rect(sx(p.x) - size / 2, sy(p.y) - size / 2, size, size);
  }
  ctx.fill();
  ctx.globalAlpha = 1;
  ctx.strokeStyle = COLORS.infeasible;
  ctx.lineWidth = 1.5;
  ctx.stroke(hollow);
  // the staircase through the front
  if (stairs.length > 1) {
    ctx.strokeStyle = COLORS.best;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    stairs.forEach((p, k) => {
      if (k === 0) return ctx.moveTo(sx(p.x), sy(p.y));
      ctx.lineTo(sx(p.x), sy(stairs[k - 1].y));
      ctx.lineTo(sx(p.x), sy(p.y));
    });
    ctx.stroke();
  }
  // the front's trials, in full colour with a white rim
  const big = size + 3;
  ctx.fillStyle = COLORS.lines[0];
  ctx.strokeStyle = COLORS.halo;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const p of front) ctx.rect(sx(p.x) - big / 2, sy(p.y) - big / 2, big, big);
  ctx.fill();
  ctx.stroke();
  // the reference point: a cross, named
  if (ref) {
    const [rx, ry] = [sx(ref[0]), sy(ref[1])];
    ctx.strokeStyle = COLORS.best;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(rx - 6, ry - 6);
    ctx.lineTo(rx + 6, ry + 6);
    ctx.moveTo(rx - 6, ry + 6);
    ctx.lineTo(rx + 6, ry - 6);
    ctx.stroke();
    ctx.fillStyle = COLORS.best;
    ctx.textAlign = rx > (box.l + box.r) / 2 ? "right" : "left";
    ctx.textBaseline = ry > (box.t + box.b) / 2 ? "bottom" : "top";
    const dx = ctx.textAlign === "right" ? -9 : 9;
    const [lx, ly] = [rx + dx, ry + (ctx.textBaseline === "bottom" ? -4 : 4)];
    // a rim in the panel's colour keeps the words legible where they cross marks or the staircase
    ctx.strokeStyle = COLORS.halo;
    ctx.lineWidth = 3;
    ctx.lineJoin = "round";
    ctx.strokeText(refLabel, lx, ly);
    ctx.fillText(refLabel, lx, ly);
  }
  // the brushed rectangle
  if (rect) {
    const [x0, x1, y0, y1] = [sx(rect.x[0]), sx(rect.x[1]), sy(rect.y[1]), sy(rect.y[0])];
    ctx.fillStyle = COLORS.pale;
    ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
    ctx.strokeStyle = COLORS.best;
    ctx.lineWidth = 1;
    ctx.setLineDash([4, 3]);
    ctx.strokeRect(Math.round(x0) + 0.5, Math.round(y0) + 0.5, Math.round(x1 - x0), Math.round(y1 - y0));
    ctx.setLineDash([]);
  }
  ctx.restore();
  return {
    box,
    x: [xlo, xhi],
    y: [ylo, yhi],
    sx,
    sy,
    // a pixel back to the objectives' values
    toData: (px, py) => [lerp(xlo, xhi, (px - box.l) / (box.r - box.l)), lerp(ylo, yhi, (box.b - py) / (box.b - box.t))],
    inside: (px, py) => px >= box.l && px <= box.r && py >= box.t && py <= box.b,
    drawn: points.length,
    front: front.length,
    infeasible: points.filter((p) => p.infeasible).length,
  };
}
