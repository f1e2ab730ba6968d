// The empirical distribution (EDF) of a study's completed values: a step chart, x the value, y the fraction of
// completed trials at least as good as x. Minimising, that is the textbook EDF, F(x) = #{v ≤ x} / n, rising
// from the best value on the left; maximising, the fraction with v ≥ x, rising from the best value on the
// right. A curve that sits higher has more of its trials at least that good. Beside it, as text: n, the best
// value, the value the best quarter reaches, the median and the worst. A study with several objectives shows
// one objective at a time (a selector; its own direction). Any finite value is drawn (±1e308 included: the
// scales of charts.js). views/compare.js draws the EDFs of several studies on one chart with the same code.

import { html, render } from "../html.js";
import { COLORS, fmt, frameAxes, niceTicks, padRange, prepare, unit } from "../charts.js";
import { exact } from "../format.js";
import { directionWord, objectiveLabel } from "../objectives.js";

// line styles by curve, so curves differ in more than colour: solid, dashed, dotted, dash-dot
export const DASHES = [[], [7, 4], [2, 3], [9, 3, 2, 3]];

// the median of an ascending array, halves-safe (1e308 and 1e308: 1e308, not Infinity)
function medianOf(asc) {
  const n = asc.length;
  if (!n) return null;
  const m = n >> 1;
  return n % 2 ? asc[m] : asc[m - 1] / 2 + asc[m] / 2;
}

// The distribution of finite values for a direction: {best (the values best first), n, best, quarter (the
// value the best 25 % reach), median, worst, lo, hi}. null when there is none.
export function edfOf(values, direction = "minimize") {
  const finite = [];
  for (const v of values) if (typeof v === "number" && Number.isFinite(v)) finite.push(v);
  if (!finite.length) return null;
  const asc = Float64Array.from(finite).sort();
  const n = asc.length;
  const bestFirst = direction === "maximize" ? asc.slice().reverse() : asc;
  return {
    sorted: bestFirst,
    n,
    best: bestFirst[0],
    quarter: bestFirst[Math.ceil(0.25 * n) - 1],
    median: medianOf(asc),
    worst: bestFirst[n - 1],
    lo: asc[0],
    hi: asc[n - 1],
    direction,
  };
}

// The steps of a distribution: [[value, fraction at least as good], ...] from the best value on, one per
// distinct value (ties are one step of their size); the last fraction is 1.
export function edfSteps(edf) {
  const out = [];
  const { sorted, n } = edf;
  for (let k = 0; k < n; k++) {
    if (k + 1 < n && sorted[k + 1] === sorted[k]) continue;
    out.push([sorted[k], (k + 1) / n]);
  }
  return out;
}

// the last drawing of each canvas (its scales and steps), for a tooltip or a test
const drawnOn = new WeakMap();
export const lastDrawn = (canvas) => drawnOn.get(canvas) ?? null;

// A step chart of one or more distributions of the same direction on one canvas.
// curves: [{edf, colour, dash}]; returns {sx, sy, box, steps: [[x, y], ...] per curve}.
export function drawEdf(canvas, curves, { direction = "minimize", xLabel = "value" } = {}) {
  const { ctx, w, h } = prepare(canvas, 600, 260);
  const box = { l: 48, r: w - 14, t: 10, b: h - 40 };
  let lo = Infinity;
  let hi = -Infinity;
  for (const { edf } of curves) {
    if (edf.lo < lo) lo = edf.lo;
    if (edf.hi > hi) hi = edf.hi;
  }
  const [xlo, xhi] = padRange(lo, hi, 0.04);
  const sx = (v) => box.l + Math.max(-1, Math.min(2, unit(v, xlo, xhi))) * (box.r - box.l);
  const sy = (f) => box.b - f * (box.b - box.t);
  const count = Math.max(2, Math.min(6, Math.floor((box.r - box.l) / 80)));
  let xTicks = niceTicks(xlo, xhi, count);
  if (xTicks.length < 2) xTicks = niceTicks(xlo, xhi, count + 2); // a narrow chart: never a lone tick
  frameAxes(ctx, box, box.b, xTicks, [0, 0.25, 0.5, 0.75, 1], sx, sy, xLabel, (f) => `${Math.round(f * 100)} %`);
  // the curves start at 0 on the best side's edge and end at 1 on the other
  const start = direction === "maximize" ? box.r : box.l;
  const end = direction === "maximize" ? box.l : box.r;
  const all = [];
  ctx.lineWidth = 2;
  ctx.lineJoin = "miter";
  for (const { edf, colour, dash } of curves) {
    const steps = edfSteps(edf);
    all.push(steps);
    ctx.strokeStyle = colour ?? COLORS.lines[0];
    ctx.setLineDash(dash ?? []);
    ctx.beginPath();
    let y = sy(0); // where the path is
    ctx.moveTo(start, y);
    // flat to each value, then up by its share; the steps within half a pixel of each other are one rise (50,000
    // values make a few hundred segments, not 100,000)
    let column = null;
    let top = y;
    for (const [v, f] of steps) {
      const x = sx(v);
      if (column !== null && Math.abs(x - column) < 0.5) {
        top = sy(f);
        continue;
      }
      if (column !== null) ctx.lineTo(column, (y = top));
      ctx.lineTo(x, y);
      column = x;
      top = sy(f);
    }
    if (column !== null) ctx.lineTo(column, (y = top));
    ctx.lineTo(end, y);
    ctx.stroke();
  }
  ctx.setLineDash([]);
  const drawn = { sx, sy, box, steps: all, xlo, xhi };
  drawnOn.set(canvas, drawn);
  return drawn;
}

// the words under the chart: what y means for this direction
export const edfCaption = (direction) =>
  direction === "maximize"
    ? "maximise: the share of completed trials with a value at least x; the best values are on the right, and a curve that is higher reaches good values more often"
    : "minimise: the share of completed trials with a value at most x; the best values are on the left, and a curve that is higher reaches good values more often";

// the summary as table cells (the chart's text alternative); without its best where the table shows the study's
// own (the best feasible value, on a study with constraints)
export const summaryCells = (edf, { best = true } = {}) => html`<td class="num" data-testid="edf-n">${String(edf.n)}</td>
  ${best ? html`<td class="num nowrap" data-testid="edf-best"><span class="exact">${exact(edf.best)}</span></td>` : ""}
  <td class="num" data-testid="edf-quarter" title="${exact(edf.quarter)}">${fmt(edf.quarter)}</td>
  <td class="num" data-testid="edf-median" title="${exact(edf.median)}">${fmt(edf.median)}</td>
  <td class="num" data-testid="edf-worst" title="${exact(edf.worst)}">${fmt(edf.worst)}</td>`;

// on a study with outcome constraints the distribution holds every completed trial, feasible or not: its best
// says so beside the cards' best feasible value
export const summaryHead = ({ best = true, constrained = false } = {}) => html`<th scope="col" class="num">completed</th>${
  best
    ? constrained
      ? html`<th scope="col" class="num" title="of every completed trial, feasible or not">best (feasible or not)</th>`
      : html`<th scope="col" class="num">best</th>`
    : ""
}
  <th scope="col" class="num" title="the value that the best 25 % of the completed trials reach">best 25 % reach</th>
  <th scope="col" class="num">median</th><th scope="col" class="num">worst</th>`;

export const ariaSummary = (edf, what = "values") =>
  `Empirical distribution of ${edf.n} completed ${what} (${directionWord(edf.direction)}): best ${fmt(edf.best)}, median ${fmt(
    edf.median,
  )}, worst ${fmt(edf.worst)}`;

// the completed values of a study for objective k (0: the study's value column, the first objective's)
function valuesOf(study, k) {
  const { data } = study;
  const metric = k > 0 ? study.objectives[k]?.metric : null;
  const out = [];
  for (let i = 0; i < data.state.length; i++) {
    if (data.state[i] !== "complete") continue;
    const v = metric ? data.metrics[i]?.[metric] : data.value[i];
    if (typeof v === "number" && Number.isFinite(v)) out.push(v);
  }
  return out;
}

export function mount(el, study) {
  const choices = study.several ? study.objectives : [];
  render(
    el,
    html`<div class="panel-head"><h2 id="edf-title">Distribution of values</h2>${
      choices.length
        ? html`<label class="check">objective <select id="edf-objective" data-testid="edf-objective">${choices.map(
            (o, k) => html`<option value="${String(k)}">${objectiveLabel(o)}</option>`,
          )}</select></label>`
        : ""
    }</div>
    <p class="empty" data-testid="edf-empty" hidden>No completed trials yet: the distribution appears with the first result.</p>
    <div data-testid="edf-body">
      <canvas id="edf" class="chart small" role="img" data-testid="edf" aria-label="Empirical distribution of the completed values"></canvas>
      <p class="dim" data-testid="edf-caption"></p>
      <div class="scroll" tabindex="0" role="region" aria-label="The distribution in numbers"><table class="grid compact" data-testid="edf-summary"><caption class="table-caption">The distribution in numbers</caption>
        <thead><tr>${summaryHead({ constrained: Boolean(study.constrained) })}</tr></thead><tbody><tr></tr></tbody></table></div>
    </div>`,
  );
  const canvas = el.querySelector("#edf");
  const body = el.querySelector("[data-testid=edf-body]");
  const empty = el.querySelector("[data-testid=edf-empty]");
  const caption = el.querySelector("[data-testid=edf-caption]");
  const row = el.querySelector("[data-testid=edf-summary] tbody tr");
  const select = el.querySelector("#edf-objective");
  let objective = 0;
  select?.addEventListener("change", () => {
    objective = Number(select.value) || 0;
    study.rerender();
  });
  let drawnKey = "";
  let edf = null;
  let edfKey = "";
  return {
    render() {
      const direction = study.several ? study.objectives[objective]?.direction ?? study.direction : study.direction;
      const key = `${study.data.version}:${objective}`;
      if (key !== edfKey) {
        edf = edfOf(valuesOf(study, objective), direction);
        edfKey = key;
      }
      const drawKey = `${key}:${canvas.clientWidth}:${COLORS.axis}`;
      if (drawKey === drawnKey) return;
      drawnKey = drawKey;
      empty.hidden = Boolean(edf);
      body.hidden = !edf;
      if (!edf) {
        canvas.dataset.n = "0";
        return;
      }
      const label = study.several ? study.objectives[objective].metric : "value";
      const { steps } = drawEdf(canvas, [{ edf, colour: COLORS.lines[0] }], { direction, xLabel: label });
      canvas.dataset.n = String(edf.n);
      canvas.dataset.steps = String(steps[0].length);
      canvas.dataset.median = String(edf.median);
      canvas.dataset.best = String(edf.best);
      canvas.dataset.direction = direction;
      canvas.setAttribute("aria-label", ariaSummary(edf, study.several ? `${label} values` : "values"));
      caption.textContent = `${edfCaption(direction)}${study.constrained ? " (infeasible trials included)" : ""}.`;
      render(row, summaryCells(edf));
    },
  };
}
