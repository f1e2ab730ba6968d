// The Pareto front of a study with several objectives: with 2, one scatter of objective 1 against objective 2
// (front-chart.js: the front's trials joined by their staircase, dominated ones faded, infeasible ones hollow,
// the reference point a cross); with 3 or 4, one small scatter per pair. The front is GET .../pareto's
// (study.pareto). Brushing: drag a rectangle on a scatter to select the trials inside it (a click drops it),
// or select the front itself; the selection goes into study.brushed, as the parallel coordinates' does: the
// trials table filters by it and the history highlights it. Hidden on a single-objective study.

import { html, render } from "../html.js";
import { rectBrush } from "../brush.js";
import { drawFront } from "../front-chart.js";
import { fmt } from "../format.js";
import { objectiveLabel, objectiveValues, pairs } from "../objectives.js";

const NEAR = 8; // pixels: how close the pointer must be to a trial for its tooltip

export function mount(el, study) {
  el.hidden = !study.several;
  if (!study.several) return { render() {} };
  const objectives = study.objectives;
  const charts = objectives.length === 2 ? [[0, 1]] : pairs(objectives.length);
  const small = charts.length > 1;
  render(
    el,
    html`<div class="panel-head"><h2 id="front-title">Pareto front</h2>
      <span class="legend" data-testid="front-legend"><i class="sw front"></i>on the front <i class="sw point faded"></i>dominated${
        study.constrained ? html` <i class="sw infeasible"></i>infeasible` : ""
      } <i class="sw ref">×</i>reference point${small ? "" : html` <i class="sw shade"></i>the hypervolume`}</span></div>
    <p class="dim" data-testid="front-note"></p>
    <p class="empty" data-testid="front-empty" hidden>No results yet: the front appears with the first told trial.</p>
    <div class="${small ? "front-pairs" : ""}" data-testid="front-charts">${charts.map(
      ([a, b], c) => html`<figure class="front-figure">${
        small ? html`<figcaption>${objectives[a].metric} against ${objectives[b].metric}</figcaption>` : ""
      }<div class="chart-wrap"><canvas class="chart${small ? " small" : ""}" data-testid="front" data-chart="${c}" data-x="${objectives[a].metric}" data-y="${
        objectives[b].metric
      }" role="img" aria-label="${objectiveLabel(objectives[a])} against ${objectiveLabel(objectives[b])}, one mark per completed trial; drag a rectangle to select trials"></canvas><div class="tip" role="tooltip" hidden></div></div></figure>`,
    )}</div>
    <p class="front-brush-line"><button type="button" data-testid="front-select">select the front</button>
      <span data-testid="front-brush" hidden><span data-testid="front-brush-summary"></span> <button type="button" data-testid="front-brush-clear">clear the selection</button></span></p>`,
  );
  const canvases = [...el.querySelectorAll("canvas[data-testid=front]")];
  const tips = [...el.querySelectorAll(".tip")];
  const note = el.querySelector("[data-testid=front-note]");
  const empty = el.querySelector("[data-testid=front-empty]");
  const wrap = el.querySelector("[data-testid=front-charts]");
  const line = el.querySelector("[data-testid=front-brush]");
  const drawn = []; // per chart: the geometry and the points of its last draw
  let selection = null; // {chart, x: [lo, hi], y: [lo, hi]} in the objectives' values, or {front: true}
  let mine = null; // the predicate this panel put in study.brushed
  let dragging = null; // {chart, rect} while a rectangle is drawn
  let drawnKey = "";

  const values = (i) => (study.data.state[i] === "complete" ? objectiveValues(study.data.metrics[i], objectives) : null);
  const frontSet = () => new Set((study.pareto?.trials ?? []).map((t) => t.number));

  function predicateOf(sel) {
    if (sel.front) return (i) => frontSet().has(i + 1);
    const [a, b] = charts[sel.chart];
    return (i) => {
      const v = values(i);
      return v !== null && v[a] >= sel.x[0] && v[a] <= sel.x[1] && v[b] >= sel.y[0] && v[b] <= sel.y[1];
    };
  }
  const select = (sel) => {
    selection = sel;
    mine = sel ? predicateOf(sel) : null;
    study.brushed = mine; // the parallel coordinates drop their own selection when they see another's
    drawnKey = "";
    study.rerender();
  };
  const toRange = (c, r) => {
    const g = drawn[c].geometry;
    const [xa, ya] = g.toData(r.x0, r.y1);
    const [xb, yb] = g.toData(r.x1, r.y0);
    return { chart: c, x: [xa, xb], y: [ya, yb] };
  };

  canvases.forEach((canvas, c) => {
    rectBrush(canvas, {
      inside: (x, y) => Boolean(drawn[c]?.geometry.inside(x, y)),
      onDrag(r) {
        dragging = r ? { chart: c, rect: toRange(c, r) } : null;
        tips[c].hidden = true;
        draw(c);
      },
      onDone(r) {
        dragging = null;
        select(r ? toRange(c, r) : null);
      },
    });
    // the tooltip: the nearest trial's number and objectives
    canvas.addEventListener("pointermove", (event) => {
      const tip = tips[c];
      const last = drawn[c];
      if (dragging || !last) return (tip.hidden = true);
      const box = canvas.getBoundingClientRect();
      const [px, py] = [event.clientX - box.left, event.clientY - box.top];
      let best = null;
      let far = NEAR * NEAR;
      for (const p of last.points) {
        const d = (last.geometry.sx(p.x) - px) ** 2 + (last.geometry.sy(p.y) - py) ** 2;
        if (d <= far) [best, far] = [p, d];
      }
      if (!best) return (tip.hidden = true);
      const v = values(best.i);
      render(
        tip,
        html`<div><b>#${best.i + 1}</b> ${best.front ? "on the front" : "dominated"}${best.infeasible ? html` · <span class="tip-infeasible">infeasible</span>` : ""}</div>${objectives.map(
          (o, j) => html`<div>${o.metric} = ${fmt(v?.[j])}</div>`,
        )}`,
      );
      tip.hidden = false;
      tip.style.left = `${Math.max(0, Math.min(px + 12, canvas.clientWidth - tip.offsetWidth - 4))}px`;
      tip.style.top = `${py + 12}px`;
    });
    canvas.addEventListener("pointerleave", () => (tips[c].hidden = true));
  });
  el.querySelector("[data-testid=front-select]").addEventListener("click", () => select({ front: true }));
  el.querySelector("[data-testid=front-brush-clear]").addEventListener("click", () => select(null));

  function draw(c) {
    const [a, b] = charts[c];
    const front = frontSet();
    const ref = study.pareto?.reference_point ?? study.info?.summary?.hypervolume_reference_point ?? null;
    const inferred = study.pareto ? study.pareto.reference_point_inferred : !study.info?.reference_point;
    const points = [];
    for (let i = 0; i < study.data.state.length; i++) {
      const v = values(i);
      if (v) points.push({ i, x: v[a], y: v[b], front: front.has(i + 1), infeasible: study.data.feasible[i] === false });
    }
    const rect = dragging?.chart === c ? dragging.rect : selection && !selection.front && selection.chart === c ? selection : null;
    const geometry = drawFront(canvases[c], {
      points,
      labels: [objectiveLabel(objectives[a]), objectiveLabel(objectives[b])],
      minimise: [objectives[a].direction !== "maximize", objectives[b].direction !== "maximize"],
      ref: ref ? [ref[objectives[a].metric], ref[objectives[b].metric]] : null,
      refLabel: inferred ? "reference point (inferred)" : "reference point",
      step: !small,
      rect,
      height: small ? 220 : 300,
    });
    drawn[c] = { geometry, points };
    const canvas = canvases[c];
    canvas.dataset.drawn = String(geometry.drawn);
    canvas.dataset.front = String(geometry.front);
    canvas.dataset.infeasible = String(geometry.infeasible);
    canvas.dataset.geometry = JSON.stringify({ box: geometry.box, x: geometry.x, y: geometry.y });
  }

  return {
    render() {
      if (selection && study.brushed !== mine) [selection, mine] = [null, null]; // another chart's selection replaced it
      const { data } = study;
      const front = (study.pareto?.trials ?? []).map((t) => t.number).join(",");
      const key = [data.version, study.pareto?.hypervolume, front, JSON.stringify(selection), wrap.clientWidth].join("|");
      if (key !== drawnKey) {
        drawnKey = key;
        let told = 0;
        for (let i = 0; i < data.state.length; i++) if (values(i)) told++;
        empty.hidden = told > 0;
        wrap.hidden = told === 0;
        if (told) charts.forEach((_, c) => draw(c));
        const size = study.pareto?.trials.length;
        note.textContent = study.paretoError
          ? `Could not read the front: ${study.paretoError}`
          : size === undefined ? "" : `${size} of ${told} completed trials on the front${small ? ` (non-dominated in all ${objectives.length} objectives)` : ""}.`;
      }
      line.hidden = !selection;
      if (selection) {
        let n = 0;
        for (let i = 0; i < data.state.length; i++) if (data.state[i] && mine(i)) n++;
        const [a, b] = selection.front ? [] : charts[selection.chart];
        const words = selection.front
          ? "the front"
          : `${objectives[a].metric} ${fmt(selection.x[0])} – ${fmt(selection.x[1])}, ${objectives[b].metric} ${fmt(selection.y[0])} – ${fmt(selection.y[1])}`;
        el.querySelector("[data-testid=front-brush-summary]").textContent = `Selected: ${words} (${n} trials).`;
      }
    },
    unmount() {
      if (mine && study.brushed === mine) study.brushed = null;
    },
  };
}
