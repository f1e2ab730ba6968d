// Slice plots: the value against each parameter, one small chart per parameter (all of them), in user
// units (log axes for log parameters, a categorical's axis labelled by choice). Failed trials are
// vermillion crosses on a strip under the plot (they have no value); infeasible trials (a study with outcome
// constraints) hollow marks in the history's infeasible colour; the local policy's centre is a dashed
// vertical line.

import { COLORS, fmt, horizontalGrid } from "../charts.js";
import { html, render } from "../html.js";
import { objectiveLabel } from "../objectives.js";
import { INK, completedByRank, fitLabel, niceTicks, padRange, paramAxis, prepare, unit } from "./scales.js";

const HEIGHT = 210;

// root: an element to fill; names/specs: the parameters (the series' space); data: {state, value, x}
// by trial number - 1, x in unit coordinates one per parameter; centre: the policy's centre in the
// same coordinates, or null. Returns {drawn, total, failed, infeasible}: points drawn per chart, completed
// trials, failed trials marked, infeasible points drawn (data.feasible false) per chart.
export function drawSlices(root, { names, specs, data, direction = "minimize", centre = null, limit = 4000, label = "value" }) {
  const { idx, total, lo, hi } = completedByRank(data, direction, limit);
  const failed = [];
  for (let i = 0; i < data.state.length; i++) if (data.state[i] === "failed" && data.x[i]) failed.push(i);
  let grid = root.querySelector(":scope > .slices");
  if (!grid || grid.childElementCount !== names.length) {
    root.replaceChildren();
    grid = document.createElement("div");
    grid.className = "slices";
    Object.assign(grid.style, { display: "grid", gridTemplateColumns: "repeat(auto-fill, minmax(260px, 1fr))", gap: "0.6rem" });
    names.forEach((name) => {
      const canvas = document.createElement("canvas");
      canvas.className = "slice";
      canvas.dataset.param = name;
      canvas.setAttribute("role", "img");
      Object.assign(canvas.style, { width: "100%", height: `${HEIGHT}px`, display: "block" });
      grid.append(canvas);
    });
    root.append(grid);
  }
  if (!total && !failed.length) {
    root.dataset.empty = "1";
  } else delete root.dataset.empty;
  const canvases = grid.querySelectorAll("canvas");
  names.forEach((name, j) => canvases[j].setAttribute("aria-label", `${label} against ${name}${specs[j].log ? " (log axis)" : ""}`));
  names.forEach((name, j) => drawOne(canvases[j], name, specs[j], j, { data, idx, lo, hi, failed, centre, label }));
  let infeasible = 0;
  if (data.feasible) for (const i of idx) if (data.feasible[i] === false) infeasible++;
  root.dataset.drawn = String(idx.length);
  root.dataset.infeasible = String(infeasible);
  return { drawn: idx.length, total, failed: failed.length, infeasible };
}

// a fixed jitter in [-0.5, 0.5) per trial, so categorical columns spread the same way on every redraw
const jitter = (i) => (((i * 2654435761) >>> 0) % 1000) / 1000 - 0.5;

function drawOne(canvas, name, spec, j, { data, idx, lo, hi, failed, centre, label }) {
  const { ctx, w, h } = prepare(canvas, 300, HEIGHT);
  const axis = paramAxis(spec);
  const hasFailed = failed.length > 0;
  const strip = hasFailed ? 18 : 0;
  const box = { l: 54, r: w - 10, t: 20, b: h - 40 - strip };
  const pad = axis.kind === "categorical" ? 0.14 : 0.04;
  const sx = (p) => box.l + (pad + p * (1 - 2 * pad)) * (box.r - box.l);
  let [vlo, vhi] = lo <= hi ? [lo, hi] : [0, 1];
  if (vhi === vlo) [vlo, vhi] = padRange(vlo, vhi);
  const [plo, phi] = padRange(vlo, vhi, 0.05); // finite over any finite values (-1e308 .. 1e308)
  const sy = (v) => box.b - unit(v, plo, phi) * (box.b - box.t);

  // frame: horizontal grid at the value ticks, vertical ticks at the parameter's ticks
  const yTicks = niceTicks(vlo, vhi, 4);
  horizontalGrid(ctx, box, yTicks, sy, INK.grid);
  ctx.fillStyle = INK.axis;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of yTicks) ctx.fillText(fmt(t), box.l - 5, sy(t));
  ctx.strokeStyle = INK.axis;
  ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);

  const labelY = box.b + strip + 18;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const room = axis.ticks.length > 1 ? Math.abs(sx(axis.ticks[1].pos) - sx(axis.ticks[0].pos)) - 4 : box.r - box.l;
  ctx.beginPath();
  for (const t of axis.ticks) {
    const x = Math.round(sx(t.pos)) + 0.5;
    ctx.moveTo(x, box.b);
    ctx.lineTo(x, box.b + 4);
  }
  ctx.stroke();
  for (const t of axis.ticks) ctx.fillText(fitLabel(ctx, t.label, room), sx(t.pos), labelY - 12);
  ctx.fillStyle = INK.text;
  ctx.font = "600 12px system-ui, sans-serif";
  ctx.fillText(`${name}${axis.log ? " (log)" : ""}`, (box.l + box.r) / 2, labelY + 4);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textAlign = "left";
  ctx.textBaseline = "top";
  ctx.fillStyle = INK.axis;
  ctx.fillText(label, 2, 4);

  // the completed trials, worst first so the best are on top
  const cat = axis.kind === "categorical";
  const band = cat && spec.choices.length > 1 ? ((box.r - box.l) * (1 - 2 * pad)) / (spec.choices.length - 1) : 0;
  const size = idx.length > 2000 ? 2 : idx.length > 300 ? 3 : 5;
  ctx.globalAlpha = idx.length > 2000 ? 0.35 : idx.length > 300 ? 0.55 : 0.8;
  ctx.fillStyle = INK.point;
  ctx.strokeStyle = COLORS.infeasible;
  ctx.lineWidth = 1.5;
  const hollow = new Path2D(); // infeasible trials: hollow marks, stroked after the filled ones
  ctx.beginPath();
  for (let r = idx.length - 1; r >= 0; r--) {
    const i = idx[r];
    const u = data.x[i][j];
    const x = sx(axis.pos(u)) + (cat ? jitter(i) * band * 0.5 : 0);
    if (data.feasible?.[i] === false) hollow.rect(x - size / 2, sy(data.value[i]) - size / 2, size, size);
    else ctx.rect(x - size / 2, sy(data.value[i]) - size / 2, size, size);
  }
  ctx.fill();
  ctx.stroke(hollow);
  ctx.globalAlpha = 1;

  // failed trials: crosses on a strip of their own under the plot
  if (failed.length) {
    const y = box.b + 10;
    ctx.fillStyle = INK.failed;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillText("failed", box.l - 5, y);
    ctx.strokeStyle = INK.failed;
    ctx.lineWidth = 1.6;
    ctx.beginPath();
    for (const i of failed) {
      const x = sx(axis.pos(data.x[i][j])) + (cat ? jitter(i) * band * 0.5 : 0);
      ctx.moveTo(x - 3, y - 3);
      ctx.lineTo(x + 3, y + 3);
      ctx.moveTo(x - 3, y + 3);
      ctx.lineTo(x + 3, y - 3);
    }
    ctx.stroke();
  }

  // the policy's centre
  if (centre && Number.isFinite(centre[j])) {
    const x = Math.round(sx(axis.pos(centre[j]))) + 0.5;
    ctx.strokeStyle = INK.centre;
    ctx.lineWidth = 2;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(x, box.t);
    ctx.lineTo(x, box.b);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = INK.centre;
    ctx.textAlign = x > (box.l + box.r) / 2 ? "right" : "left";
    ctx.textBaseline = "bottom";
    const v = axis.value(centre[j]);
    ctx.fillText(`centre ${typeof v === "number" ? fmt(v) : String(v)}`, x + (ctx.textAlign === "left" ? 4 : -4), box.t - 3);
  }
  ctx.lineWidth = 1;
}

// the study's columns with ``value`` read from objective k's metric (0: the first objective, the value column)
function objectiveView(study, k) {
  if (k === 0) return study.data;
  const metric = study.objectives[k].metric;
  return { ...study.data, value: study.data.metrics.map((m) => m?.[metric] ?? null) };
}

// The study page's panel (views/study.js). A study with several objectives shows one at a time (a selector).
export function mount(el, study) {
  const choices = study.several ? study.objectives : [];
  render(
    el,
    html`<div class="panel-head"><h2 id="slices-title">Value against each parameter</h2>${
      choices.length
        ? html`<label class="check">objective <select id="slices-objective" data-testid="slices-objective">${choices.map(
            (o, k) => html`<option value="${String(k)}">${objectiveLabel(o)}</option>`,
          )}</select></label>`
        : ""
    }
      <span class="legend" data-testid="slices-legend"><i class="sw point"></i>completed trial${
        study.constrained ? html` <i class="sw infeasible"></i>infeasible` : ""
      } <span style="color:${INK.failed};font-weight:700">×</span> failed (no value: on the strip under the plot)<span data-testid="slices-centre" hidden> · <b>- - -</b> the policy's centre</span></span></div>
    <p class="empty" data-testid="slices-empty" hidden>No completed trials yet.</p>
    <div data-testid="slices"></div>`,
  );
  const box = el.querySelector("[data-testid=slices]");
  const empty = el.querySelector("[data-testid=slices-empty]");
  const select = el.querySelector("#slices-objective");
  let objective = 0;
  let viewed = { key: "", data: null }; // the chosen objective's columns, kept while the data and choice stay
  const columns = () => {
    const key = `${study.data.version}:${objective}`;
    if (viewed.key !== key) viewed = { key, data: objectiveView(study, objective) };
    return viewed.data;
  };
  select?.addEventListener("change", () => {
    objective = Number(select.value) || 0;
    study.rerender();
  });
  return {
    render() {
      const { data, names, specs } = study;
      const none = !data.state.some((s) => s === "complete" || s === "failed");
      empty.hidden = !none;
      box.hidden = none;
      const centre = study.display?.centre ?? null;
      el.querySelector("[data-testid=slices-centre]").hidden = !centre;
      if (none) return;
      const chosen = choices[objective];
      const direction = chosen?.direction ?? study.direction;
      box.dataset.objective = chosen?.metric ?? "value";
      drawSlices(box, { names, specs, data: columns(), direction, centre, label: chosen?.metric ?? "value" });
    },
  };
}
