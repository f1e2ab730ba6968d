// A 2-D view of any pair of parameters: the trials as points coloured by value and, where the study's
// policy has a GP, its posterior mean over the pair (the other parameters held fixed, as the server
// says) as a shaded map with contour lines behind them. The server computes the mean
// (GET .../analysis/surface); this module draws what it is given.

import { get } from "../api.js";
import { fmt } from "../charts.js";
import { html, render } from "../html.js";
import { INK, VALUE_STOPS, completedByRank, fitLabel, niceTicks, padRange, paramAxis, prepare, tint, unit, valueColour, valueColourSmooth } from "./scales.js";

// root: an element to fill. fetchSurface(x, y, signal) -> the server's answer ({available, ...}).
// Returns {update(data), refresh(), destroy(), state}: update redraws with new trials, refresh asks the
// server again (say, after the policy refitted).
export function mountSurface(root, { names, specs, data, direction = "minimize", fetchSurface, initial = null, limit = 5000, onError = null, several = 0 }) {
  const state = { x: null, y: null, surface: null, data, status: "", controller: null };
  if (names.length < 2) {
    render(root, html`<p class="dim" data-testid="surface-note">A 2-D view needs two parameters; this study has one.</p>`);
    return { update() {}, refresh: () => Promise.resolve(), choose() {}, destroy() {}, state };
  }
  const [x0, y0] = initial && names.includes(initial[0]) && names.includes(initial[1]) && initial[0] !== initial[1] ? initial : names.slice(0, 2);
  state.x = x0;
  state.y = y0;
  const options = (chosen) => names.map((n) => html`<option value="${n}" ${n === chosen ? html`selected` : ""}>${n}</option>`);
  render(
    root,
    html`<div class="surface-controls" style="display:flex;flex-wrap:wrap;gap:1rem;align-items:baseline">
        <label>x <select data-axis="x" aria-label="parameter on the horizontal axis">${options(x0)}</select></label>
        <label>y <select data-axis="y" aria-label="parameter on the vertical axis">${options(y0)}</select></label>
        <span class="dim" data-testid="surface-note" aria-live="polite"></span>
      </div>
      <canvas class="chart tall" data-testid="surface" role="img" style="width:100%;height:380px;display:block"></canvas>`,
  );
  const canvas = root.querySelector("canvas");
  const note = root.querySelector("[data-testid=surface-note]");
  for (const select of root.querySelectorAll("select")) {
    select.addEventListener("change", () => {
      const other = select.dataset.axis === "x" ? "y" : "x";
      if (select.value === state[other]) state[other] = state[select.dataset.axis]; // a swap, never a pair of one
      state[select.dataset.axis] = select.value;
      root.querySelector(`select[data-axis=${other}]`).value = state[other];
      state.chosen = true; // the viewer's pair: never replaced by the default
      refresh().catch((e) => (onError ? onError(e) : Promise.reject(e)));
    });
  }

  const draw = () => {
    const result = drawSurface(canvas, { names, specs, data: state.data, direction, x: state.x, y: state.y, surface: state.surface, limit });
    canvas.dataset.drawn = String(result.drawn);
    canvas.dataset.contour = result.contour ? "1" : "0";
    canvas.dataset.infeasible = String(result.infeasible);
    canvas.setAttribute("aria-label", `trials over ${state.x} and ${state.y}, coloured by value${result.contour ? ", over the GP's posterior mean" : ""}`);
    return result;
  };

  async function refresh() {
    state.controller?.abort();
    const controller = new AbortController();
    state.controller = controller;
    const [x, y] = [state.x, state.y];
    state.surface = null;
    note.textContent = "asking the server for the GP's mean…";
    root.dataset.state = "loading";
    draw();
    let answer;
    try {
      answer = await fetchSurface(x, y, controller.signal);
    } catch (error) {
      if (controller.signal.aborted) return;
      answer = { available: false, reason: `the server did not answer: ${error.message || error}` };
    }
    if (controller.signal.aborted) return;
    state.surface = answer && answer.available && answer.x === x && answer.y === y ? answer : null;
    note.textContent = state.surface ? describe(state.surface, several) : `No model surface: ${answer?.reason || "the server gave none"}. Trials only.`;
    root.dataset.state = state.surface ? "contour" : "unavailable";
    draw();
  }

  refresh().catch((e) => (onError ? onError(e) : Promise.reject(e)));
  return {
    // shows another pair (the page's default: the two most important parameters), unless the viewer chose one
    choose(x, y) {
      if (state.chosen || x === y || !names.includes(x) || !names.includes(y) || (x === state.x && y === state.y)) return;
      state.x = x;
      state.y = y;
      root.querySelector("select[data-axis=x]").value = x;
      root.querySelector("select[data-axis=y]").value = y;
      refresh().catch((e) => (onError ? onError(e) : Promise.reject(e)));
    },
    update(next) {
      state.data = next;
      draw();
    },
    refresh,
    destroy() {
      state.controller?.abort();
    },
    state,
  };
}

// the colour scale's ends in three significant digits ("0.00226", "2.26e+7"): fmt's five were cut to "0.00…" on a
// phone, which reads as zero
export function legendNumber(v) {
  if (!Number.isFinite(v)) return fmt(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(2) : String(Number(v.toPrecision(3)));
}

// several: the study's objectives count (the surface is of the first, `s.objective`)
function describe(s, several = 0) {
  const fixed = Object.entries(s.fixed || {});
  const by = several && s.objective ? ` by ${s.objective}` : "";
  const where = s.fixed_at === "best" ? `the best trial${by}` : s.fixed_at === "centre" ? "the policy's centre" : String(s.fixed_at || "");
  const held = fixed.length
    ? ` Other parameters held at ${where}: ${fixed.map(([k, v]) => `${k} = ${typeof v === "number" ? fmt(v) : String(v)}`).join(", ")}.`
    : "";
  const of = several && s.objective ? ` of ${s.objective} (the first of ${several} objectives)` : "";
  return `Shading and contours: the GP's posterior mean${of}, fitted to ${s.n_complete} completed trials.${held}`;
}

// Marching squares: line segments where the grid (rows over ys, columns over xs) crosses `level`.
// Returns [[i0, j0, i1, j1], ...] in fractional (column, row) indices.
export function contourSegments(grid, level) {
  const out = [];
  const rows = grid.length;
  const cols = rows ? grid[0].length : 0;
  // where the level crosses from a to b (0..1), on halves: finite for any finite a, b
  const cross = (a, b) => Math.min(1, Math.max(0, a <= b ? unit(level, a, b) : 1 - unit(level, b, a)));
  for (let r = 0; r + 1 < rows; r++) {
    for (let c = 0; c + 1 < cols; c++) {
      const v = [grid[r][c], grid[r][c + 1], grid[r + 1][c + 1], grid[r + 1][c]];
      if (!v.every(Number.isFinite)) continue;
      const code = (v[0] > level ? 1 : 0) | (v[1] > level ? 2 : 0) | (v[2] > level ? 4 : 0) | (v[3] > level ? 8 : 0);
      if (code === 0 || code === 15) continue;
      // crossings on the four edges: bottom (r, c..c+1), right (c+1, r..r+1), top (r+1), left (c)
      const e = [
        () => [c + cross(v[0], v[1]), r],
        () => [c + 1, r + cross(v[1], v[2])],
        () => [c + cross(v[3], v[2]), r + 1],
        () => [c, r + cross(v[0], v[3])],
      ];
      const edges = [];
      for (let k = 0; k < 4; k++) {
        const a = v[k] > level;
        const b = v[(k + 1) % 4] > level;
        if (a !== b) edges.push(k);
      }
      if (edges.length === 2) out.push([...e[edges[0]](), ...e[edges[1]]()]);
      else if (edges.length === 4) {
        out.push([...e[0](), ...e[1]()]);
        out.push([...e[2](), ...e[3]()]);
      }
    }
  }
  return out;
}

// Draws the pair; returns {drawn, contour}.
export function drawSurface(canvas, { names, specs, data, direction = "minimize", x, y, surface = null, limit = 5000 }) {
  const { ctx, w, h } = prepare(canvas, 600, 380);
  const jx = names.indexOf(x);
  const jy = names.indexOf(y);
  const ax = paramAxis(specs[jx]);
  const ay = paramAxis(specs[jy]);
  const legendW = w < 500 ? 76 : 96;
  const box = { l: 62, r: w - legendW - 14, t: 12, b: h - 46 };
  const pad = 0.03;
  const sx = (p) => box.l + (pad + p * (1 - 2 * pad)) * (box.r - box.l);
  const sy = (p) => box.b - (pad + p * (1 - 2 * pad)) * (box.b - box.t);
  const { idx, total, lo, hi } = completedByRank(data, direction, limit);

  // one colour range for the trials and the mean, so a colour means one value everywhere
  let vlo = lo;
  let vhi = hi;
  const mean = surface?.mean;
  if (mean) {
    for (const row of mean) for (const m of row) if (Number.isFinite(m)) {
      if (m < vlo) vlo = m;
      if (m > vhi) vhi = m;
    }
  }
  if (!(vhi > vlo)) [vlo, vhi] = Number.isFinite(vlo) ? padRange(vlo, vlo) : [0, 1];
  const minimize = direction === "minimize";
  const t = (v) => Math.min(1, Math.max(0, minimize ? unit(v, vlo, vhi) : 1 - unit(v, vlo, vhi))); // 0 best, never NaN

  // the mean: a cell per grid point, edges halfway between neighbours (positions on the parameters' axes)
  let contour = false;
  if (mean && surface.xs?.length && surface.ys?.length) {
    const px = surface.xs.map((v) => (ax.at ? ax.at(v) : 0.5));
    const py = surface.ys.map((v) => (ay.at ? ay.at(v) : 0.5));
    const edges = (p) => p.map((q, k) => [k ? (q + p[k - 1]) / 2 : q - (p[1] - p[0]) / 2, k + 1 < p.length ? (q + p[k + 1]) / 2 : q + (q - p[k - 1]) / 2]);
    const ex = edges(px);
    const ey = edges(py);
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.l, box.t, box.r - box.l, box.b - box.t);
    ctx.clip();
    for (let r = 0; r < mean.length; r++) {
      for (let c = 0; c < mean[r].length; c++) {
        const m = mean[r][c];
        if (!Number.isFinite(m)) continue;
        ctx.fillStyle = tint(valueColourSmooth(t(m)), 0.62);
        const xa = sx(ex[c][0]);
        const xb = sx(ex[c][1]);
        const ya = sy(ey[r][1]);
        const yb = sy(ey[r][0]);
        ctx.fillRect(Math.floor(xa), Math.floor(ya), Math.ceil(xb - xa) + 1, Math.ceil(yb - ya) + 1);
      }
    }
    // contour lines at nice levels of the mean
    let mlo = Infinity;
    let mhi = -Infinity;
    for (const row of mean) for (const m of row) if (Number.isFinite(m)) {
      mlo = Math.min(mlo, m);
      mhi = Math.max(mhi, m);
    }
    const levels = niceTicks(mlo, mhi, 8).filter((l) => l > mlo && l < mhi);
    const at = (arr, f) => {
      const k = Math.min(Math.floor(f), arr.length - 2);
      return arr[k] + (f - k) * (arr[k + 1] - arr[k]);
    };
    ctx.strokeStyle = INK.text;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const level of levels) {
      for (const [c0, r0, c1, r1] of contourSegments(mean, level)) {
        ctx.moveTo(sx(at(px, c0)), sy(at(py, r0)));
        ctx.lineTo(sx(at(px, c1)), sy(at(py, r1)));
      }
    }
    ctx.stroke();
    ctx.restore();
    contour = levels.length > 0 || mean.length > 0;
    canvas.dataset.levels = String(levels.length);
  }

  // axes
  ctx.strokeStyle = INK.axis;
  ctx.lineWidth = 1;
  ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);
  ctx.fillStyle = INK.axis;
  ctx.beginPath();
  for (const tk of ax.ticks) {
    const px = Math.round(sx(tk.pos)) + 0.5;
    ctx.moveTo(px, box.b);
    ctx.lineTo(px, box.b + 4);
  }
  for (const tk of ay.ticks) {
    const py = Math.round(sy(tk.pos)) + 0.5;
    ctx.moveTo(box.l - 4, py);
    ctx.lineTo(box.l, py);
  }
  ctx.stroke();
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const room = ax.ticks.length > 1 ? Math.abs(sx(ax.ticks[1].pos) - sx(ax.ticks[0].pos)) - 4 : box.r - box.l;
  for (const tk of ax.ticks) ctx.fillText(fitLabel(ctx, tk.label, room), sx(tk.pos), box.b + 6);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const tk of ay.ticks) ctx.fillText(fitLabel(ctx, tk.label, box.l - 10), box.l - 6, sy(tk.pos));
  ctx.fillStyle = INK.text;
  ctx.font = "600 12px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillText(`${x}${ax.log ? " (log)" : ""}`, (box.l + box.r) / 2, box.b + 24);
  ctx.save();
  ctx.translate(14, (box.t + box.b) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(`${y}${ay.log ? " (log)" : ""}`, 0, -8);
  ctx.restore();
  ctx.font = "12px system-ui, sans-serif";

  // the trials, worst first (the best on top), with a white rim so they read over the shading
  const size = idx.length > 2000 ? 3 : idx.length > 300 ? 4 : 7;
  let infeasible = 0;
  const catJitter = (axis, spec, i, shift) => (axis.kind === "categorical" && spec.choices.length > 1 ? ((((i * 2654435761 + shift) >>> 0) % 1000) / 1000 - 0.5) * (0.4 / (spec.choices.length - 1)) : 0);
  for (let r = idx.length - 1; r >= 0; r--) {
    const i = idx[r];
    const u = data.x[i];
    const px = sx(ax.pos(u[jx]) + catJitter(ax, specs[jx], i, 0));
    const py = sy(ay.pos(u[jy]) + catJitter(ay, specs[jy], i, 7));
    ctx.beginPath();
    ctx.arc(px, py, size / 2, 0, 2 * Math.PI);
    if (data.feasible?.[i] === false) {
      // infeasible (a study with outcome constraints): a grey ring, as no colour of the value scale reads
      infeasible++;
      ctx.strokeStyle = "#ffffff";
      ctx.lineWidth = 3.5;
      ctx.stroke();
      ctx.strokeStyle = INK.axis;
      ctx.lineWidth = 1.75;
      ctx.stroke();
      continue;
    }
    ctx.fillStyle = valueColourSmooth(t(data.value[i]));
    ctx.fill();
    if (size > 3) {
      ctx.strokeStyle = "#ffffff";
      ctx.lineWidth = 1;
      ctx.stroke();
    }
  }
  // failed trials: vermillion crosses where they were asked
  ctx.strokeStyle = INK.failed;
  ctx.lineWidth = 1.6;
  ctx.beginPath();
  for (let i = 0; i < data.state.length; i++) {
    if (data.state[i] !== "failed" || !data.x[i]) continue;
    const px = sx(ax.pos(data.x[i][jx]));
    const py = sy(ay.pos(data.x[i][jy]));
    ctx.moveTo(px - 3.5, py - 3.5);
    ctx.lineTo(px + 3.5, py + 3.5);
    ctx.moveTo(px - 3.5, py + 3.5);
    ctx.lineTo(px + 3.5, py - 3.5);
  }
  ctx.stroke();

  // the colour legend: best at the top
  const lx = box.r + 22;
  const lh = box.b - box.t - 40;
  for (let k = 0; k < VALUE_STOPS; k++) {
    ctx.fillStyle = valueColour(k / (VALUE_STOPS - 1));
    ctx.fillRect(lx, box.t + 14 + (k * lh) / VALUE_STOPS, 14, lh / VALUE_STOPS + 1);
  }
  ctx.fillStyle = INK.axis;
  ctx.textAlign = "left";
  ctx.textBaseline = "bottom";
  ctx.fillText("best", lx - 2, box.t + 11);
  ctx.textBaseline = "middle";
  const best = minimize ? vlo : vhi;
  const worst = minimize ? vhi : vlo;
  ctx.fillText(fitLabel(ctx, legendNumber(best), legendW - 34), lx + 18, box.t + 18);
  ctx.fillText(fitLabel(ctx, legendNumber(worst), legendW - 34), lx + 18, box.t + 10 + lh);
  ctx.textBaseline = "top";
  ctx.fillText("worst", lx - 2, box.t + 17 + lh);
  if (total === 0) {
    ctx.fillStyle = INK.axis;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText("no completed trials yet", (box.l + box.r) / 2, (box.t + box.b) / 2);
  }
  return { drawn: idx.length, infeasible, contour };
}

// the two most important parameters by the importance panel's answer (the GP's, else the forest's), in
// the study's order, or null
function mostImportant(answer) {
  const scores = answer?.gp ?? answer?.forest;
  const names = answer?.parameters;
  if (!Array.isArray(scores) || !Array.isArray(names) || names.length < 2 || scores.length !== names.length) return null;
  const order = names.map((_, j) => j).sort((a, b) => scores[b] - scores[a]);
  return order.slice(0, 2).sort((a, b) => a - b).map((j) => names[j]);
}

// The study page's panel (views/study.js): asks the server for the pair's surface on mount, when the
// pair changes and when the policy's state changes (a refit). Once the importance panel has its answer
// (study.importance), the pair becomes the two most important parameters, unless the viewer chose one.
export function mount(el, study) {
  render(
    el,
    html`<div class="panel-head"><h2 id="surface-title">Two parameters at a time</h2>
      <span class="dim">trials coloured by ${study.several ? `${study.objectives[0].metric} (the first of ${study.objectives.length} objectives)` : "value"} (by the colour scale: best to worst), failed ones as ×${
        study.constrained ? html`<span data-testid="surface-infeasible">, infeasible ones as grey rings</span>` : ""
      }; behind them, where the policy has a GP, its posterior mean (shading and contour lines, same colours)</span></div>
    <div data-testid="surface-panel"></div>`,
  );
  const box = el.querySelector("[data-testid=surface-panel]");
  const fetchSurface = (x, y, signal) => {
    const query = new URLSearchParams({ x, y, size: "30" });
    const both = AbortSignal.any ? AbortSignal.any([signal, study.signal].filter(Boolean)) : signal;
    return get(`${study.path}/analysis/surface?${query}`, { signal: both });
  };
  let view = null;
  let version;
  let asked = 0;
  let later = 0;
  let pairDefaulted = false;
  // after a refit the server is asked again, at most once per 5 s (a busy study refits on every tell)
  const failed = (error) => study.panelFailed?.("surface-panel", error); // drawn after a request
  const refresh = () => {
    later = 0;
    asked = performance.now();
    view.refresh().catch(failed);
  };
  return {
    render() {
      if (!view) {
        const several = study.several ? study.objectives.length : 0;
        view = mountSurface(box, { names: study.names, specs: study.specs, data: study.data, direction: study.direction, fetchSurface, onError: failed, several });
        version = study.policy?.policy_state_version;
        asked = performance.now();
        return;
      }
      view.update(study.data);
      const top = mostImportant(study.importance);
      if (top && !pairDefaulted) {
        pairDefaulted = true;
        view.choose(...top);
      }
      const now = study.policy?.policy_state_version;
      if (now !== undefined && now !== version) {
        version = now;
        if (!later) later = setTimeout(refresh, Math.max(0, asked + 5000 - performance.now()));
      }
    },
    unmount() {
      clearTimeout(later);
      view?.destroy();
    },
  };
}
