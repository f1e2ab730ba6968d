// Parallel coordinates: one line per completed trial through its parameters (in user units: ticks and
// labels on every axis, every category named, log axes drawn and marked as log) to its value, coloured
// by value. Brushing: drag along an axis to select a range (click the axis to drop it); the ranges of
// several axes combine (a trial must lie in all). The selection goes out as a predicate (i) => boolean
// through onBrush, which the study page puts in study.brushed: the trials table filters by it and the
// history chart highlights it. Past `limit` lines the chart draws the best quarter and an even sample
// of the rest (the selection itself always counts every trial). On a study with outcome constraints the
// infeasible trials' lines are dashed and grey (a colour of the value scale would read as a value), under the
// feasible ones.

import { COLORS, fmt } from "../charts.js";
import { html, render } from "../html.js";
import { INK, VALUE_STOPS, completedByRank, fitLabel, lerp, padRange, paramAxis, prepare, unit, valueAxis, valueColour } from "./scales.js";

const MAX_AXES = 24;

// canvas: the chart; onBrush(predicate | null, summary) after each brush changes.
// Returns {draw(options), clear(), brushes, selection()}.
export function createParallel(canvas, { onBrush = () => {} } = {}) {
  const brushes = new Map(); // axis index -> {lo, hi}: positions (0..1) on a parameter axis, values on the value axis
  let last = null; // what the last draw laid out: the geometry brushing needs
  let options = null;
  let drag = null;
  let pending = 0;

  const redraw = () => {
    if (pending) return;
    pending = requestAnimationFrame(() => {
      pending = 0;
      if (options) draw(options);
    });
  };

  function predicate() {
    if (!brushes.size || !last) return null;
    const { axes, shown } = last;
    const list = [...brushes.entries()];
    const data = options.data;
    return (i) => {
      const x = data.x[i];
      if (!x) return false;
      for (const [k, { lo, hi }] of list) {
        if (k < shown) {
          const p = axes[k].pos(x[k]);
          if (!(p >= lo - 1e-9 && p <= hi + 1e-9)) return false;
        } else {
          const v = data.value[i];
          if (v === null || v === undefined || data.state[i] !== "complete" || !(v >= lo && v <= hi)) return false;
        }
      }
      return true;
    };
  }

  // words for the selection: "x0 in 0.2 – 1.4, value in 1.5 – 3"
  function summary() {
    if (!last) return "";
    const { axes, shown, names } = last;
    return [...brushes.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([k, { lo, hi }]) => {
        if (k >= shown) return `value in ${fmt(lo)} – ${fmt(hi)}`;
        const a = axes[k];
        if (a.kind === "categorical") {
          const picked = a.ticks.filter((t) => t.pos >= lo - 1e-9 && t.pos <= hi + 1e-9).map((t) => t.label);
          return `${names[k]} in {${picked.join(", ")}}`;
        }
        const [vlo, vhi] = [a.fromPos(lo), a.fromPos(hi)]; // a position back to user units
        return `${names[k]} in ${fmt(vlo)} – ${fmt(vhi)}`;
      })
      .join(", ");
  }

  const emit = () => onBrush(predicate(), summary());

  function axisAt(event) {
    if (!last) return null;
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const { box, ax, count } = last;
    if (y < box.t - 6 || y > box.b + 6) return null;
    const reach = Math.min(18, (ax(1) - ax(0)) / 2);
    for (let k = 0; k < count; k++) if (Math.abs(x - ax(k)) <= reach) return { k, y };
    return null;
  }
  // a y on the canvas to the axis' own coordinate (a position, or a value on the value axis)
  const toAxis = (k, y) => {
    const { box, shown, vlo, vhi } = last;
    const p = Math.min(1, Math.max(0, (box.b - y) / (box.b - box.t)));
    return k < shown ? p : lerp(vlo, vhi, p);
  };

  canvas.addEventListener("pointerdown", (event) => {
    const hit = axisAt(event);
    if (!hit) return;
    event.preventDefault();
    canvas.setPointerCapture?.(event.pointerId);
    drag = { k: hit.k, y0: hit.y, before: brushes.get(hit.k) };
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) {
      canvas.style.cursor = axisAt(event) ? "ns-resize" : "";
      return;
    }
    const y = event.clientY - canvas.getBoundingClientRect().top;
    if (Math.abs(y - drag.y0) < 3) return;
    const [a, b] = [toAxis(drag.k, drag.y0), toAxis(drag.k, y)];
    brushes.set(drag.k, { lo: Math.min(a, b), hi: Math.max(a, b) });
    redraw();
  });
  const finish = (event) => {
    if (!drag) return;
    const y = event.clientY - canvas.getBoundingClientRect().top;
    if (Math.abs(y - drag.y0) < 3) brushes.delete(drag.k); // a click on an axis drops its range
    drag = null;
    redraw();
    emit();
  };
  canvas.addEventListener("pointerup", finish);
  canvas.addEventListener("pointercancel", finish);

  function draw(opts) {
    options = opts;
    last = drawParallel(canvas, { ...opts, brushes, active: predicate });
    return last;
  }

  return {
    draw,
    clear() {
      brushes.clear();
      redraw();
      emit();
    },
    // sets a range by hand: on axis `name` (or "value"), from lo to hi in user units (a test's or a link's brush)
    brush(name, lo, hi) {
      if (!last) return;
      const k = name === "value" ? last.shown : last.names.indexOf(name);
      if (k < 0) throw new Error(`no axis ${name}`);
      const a = last.axes[k];
      const to = (v) => (k >= last.shown ? v : a.at ? a.at(v) : v);
      brushes.set(k, { lo: Math.min(to(lo), to(hi)), hi: Math.max(to(lo), to(hi)) });
      redraw();
      emit();
    },
    brushes,
    selection: predicate,
    summary,
  };
}

// Draws the chart; returns its layout ({box, ax, axes, shown, count, names, vlo, vhi, drawn, total}).
export function drawParallel(canvas, { names, specs, data, direction = "minimize", centre = null, box: band = null, limit = 4000, brushes = new Map(), active = () => null, valueName = "value" }) {
  const { ctx, w, h } = prepare(canvas, 900, 340);
  const shown = Math.min(names.length, MAX_AXES);
  const count = shown + 1;
  const box = { l: 56, r: w - 34, t: 46, b: h - 22 };
  const ax = (k) => box.l + (count > 1 ? k / (count - 1) : 0.5) * (box.r - box.l);
  const sy = (p) => box.b - p * (box.b - box.t);
  const axes = specs.slice(0, shown).map(paramAxis);
  const { idx: all, total, lo, hi } = completedByRank(data, direction, Infinity);
  let [vlo, vhi] = lo <= hi ? [lo, hi] : [0, 1];
  if (vhi === vlo) [vlo, vhi] = padRange(vlo, vhi);
  const vaxis = valueAxis(vlo, vhi);
  const minimize = direction === "minimize";
  const colourOf = (v) => {
    const t = unit(v, vlo, vhi); // never NaN, even over -1e308 .. 1e308
    return Math.min(VALUE_STOPS - 1, Math.max(0, Math.round((minimize ? t : 1 - t) * (VALUE_STOPS - 1))));
  };

  // which lines: the selected (all of them when nothing is brushed) and, pale, the rest
  const pick = active();
  let chosen = all;
  let rest = [];
  if (pick) {
    chosen = [];
    for (const i of all) (pick(i) ? chosen : rest).push(i);
  }
  const thin = (list, n) => {
    if (list.length <= n) return list;
    const best = Math.floor(n / 4);
    const step = (list.length - best) / (n - best);
    const out = list.slice(0, best);
    for (let k = 0; k < n - best; k++) out.push(list[best + Math.floor(k * step)]);
    return out;
  };
  const drawnChosen = thin(chosen, limit);
  const drawnRest = thin(rest, Math.floor(limit / 2));

  if (band) {
    ctx.fillStyle = COLORS.pale;
    for (let k = 0; k < shown; k++) {
      const [a, b] = [band.lower?.[k], band.upper?.[k]];
      if (Number.isFinite(a) && Number.isFinite(b)) {
        const [pa, pb] = [axes[k].pos(a), axes[k].pos(b)];
        ctx.fillRect(ax(k) - 8, sy(Math.max(pa, pb)), 16, Math.abs(sy(pa) - sy(pb)));
      }
    }
  }

  const line = (i) => {
    const x = data.x[i];
    ctx.moveTo(ax(0), sy(axes[0] ? axes[0].pos(x[0]) : 0.5));
    for (let k = 1; k < shown; k++) ctx.lineTo(ax(k), sy(axes[k].pos(x[k])));
    ctx.lineTo(ax(shown), sy(vaxis.pos(data.value[i])));
  };
  ctx.lineWidth = 1;
  if (drawnRest.length) {
    ctx.strokeStyle = "rgba(0, 0, 0, 0.07)";
    ctx.beginPath();
    for (const i of drawnRest) line(i);
    ctx.stroke();
  }
  // coloured lines, worst colour first so the best end up on top
  ctx.globalAlpha = drawnChosen.length > 2000 ? 0.35 : drawnChosen.length > 300 ? 0.55 : 0.85;
  const groups = Array.from({ length: VALUE_STOPS }, () => []);
  const infeasible = [];
  for (const i of drawnChosen) (data.feasible?.[i] === false ? infeasible : groups[colourOf(data.value[i])]).push(i);
  if (infeasible.length) {
    ctx.strokeStyle = COLORS.axis;
    ctx.lineWidth = pick ? 1.5 : 1;
    ctx.setLineDash([5, 3]);
    ctx.beginPath();
    for (const i of infeasible) line(i);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  for (let c = VALUE_STOPS - 1; c >= 0; c--) {
    if (!groups[c].length) continue;
    ctx.strokeStyle = valueColour(c / (VALUE_STOPS - 1));
    ctx.lineWidth = pick ? 1.5 : 1;
    ctx.beginPath();
    for (const i of groups[c]) line(i);
    ctx.stroke();
  }
  ctx.globalAlpha = 1;

  if (centre) {
    ctx.strokeStyle = INK.centre;
    ctx.lineWidth = 2.5;
    ctx.setLineDash([8, 4]);
    ctx.beginPath();
    for (let k = 0; k < shown; k++) (k ? ctx.lineTo : ctx.moveTo).call(ctx, ax(k), sy(axes[k].pos(centre[k])));
    ctx.stroke();
    ctx.setLineDash([]);
  }

  // axes, ticks and labels
  const spacing = count > 1 ? (box.r - box.l) / (count - 1) : box.r - box.l;
  const labelRoom = Math.max(18, Math.min(60, spacing - 12));
  for (let k = 0; k < count; k++) {
    const x = Math.round(ax(k)) + 0.5;
    const isValue = k === shown;
    const ticks = isValue ? vaxis.ticks : axes[k].ticks;
    ctx.strokeStyle = INK.axis;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, box.t);
    ctx.lineTo(x, box.b);
    for (const t of ticks) {
      const y = Math.round(sy(t.pos)) + 0.5;
      ctx.moveTo(x - 4, y);
      ctx.lineTo(x, y);
    }
    ctx.stroke();
    ctx.fillStyle = INK.axis;
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    // every tick labelled; where they would touch (many categories) every other label moves to the right
    const tight = ticks.length > 1 && Math.abs(sy(ticks[1].pos) - sy(ticks[0].pos)) < 12;
    ticks.forEach((t, j) => {
      // the value axis keeps every label on its left: its right side is the colour strip's
      if (isValue && tight && j % 2 === 1) return;
      const right = !isValue && tight && j % 2 === 1;
      ctx.textAlign = right ? "left" : "right";
      const text = fitLabel(ctx, t.label, right ? Math.min(labelRoom, spacing - labelRoom - 10) : labelRoom);
      ctx.strokeStyle = COLORS.halo; // a halo: labels stay readable over the lines
      ctx.lineWidth = 3;
      ctx.strokeText(text, right ? x + 5 : x - 6, sy(t.pos));
      ctx.fillText(text, right ? x + 5 : x - 6, sy(t.pos));
    });
    ctx.font = "600 12px system-ui, sans-serif";
    ctx.fillStyle = INK.text;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    const name = isValue ? valueName : names[k];
    ctx.fillText(fitLabel(ctx, name, Math.max(24, spacing - 6)), x, box.t - 20);
    ctx.font = "italic 11px system-ui, sans-serif";
    ctx.fillStyle = INK.axis;
    if (!isValue && axes[k].log) ctx.fillText("log scale", x, box.t - 8);
    ctx.font = "12px system-ui, sans-serif";
    // a brushed range
    const b = brushes.get(k);
    if (b) {
      const [pa, pb] = isValue ? [vaxis.pos(b.lo), vaxis.pos(b.hi)] : [b.lo, b.hi];
      const [ya, yb] = [sy(Math.max(pa, pb)), sy(Math.min(pa, pb))];
      ctx.fillStyle = COLORS.pale;
      ctx.fillRect(x - 9, ya, 18, Math.max(2, yb - ya));
      ctx.strokeStyle = COLORS.best;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(x - 9, ya, 18, Math.max(2, yb - ya));
    }
  }
  // the value axis doubles as the colour key: a strip of the colours beside it
  const vx = ax(shown) + 6;
  for (let c = 0; c < VALUE_STOPS; c++) {
    const t = c / (VALUE_STOPS - 1);
    const [a, b] = minimize ? [t - 0.5 / (VALUE_STOPS - 1), t + 0.5 / (VALUE_STOPS - 1)] : [1 - t - 0.5 / (VALUE_STOPS - 1), 1 - t + 0.5 / (VALUE_STOPS - 1)];
    ctx.fillStyle = valueColour(t);
    const [ya, yb] = [sy(Math.min(1, Math.max(a, b))), sy(Math.max(0, Math.min(a, b)))];
    ctx.fillRect(vx, ya, 6, yb - ya);
  }
  return { box, ax, axes, shown, count, names, vlo, vhi, drawn: drawnChosen.length + drawnRest.length, infeasible: infeasible.length, total, selected: pick ? chosen.length : total };
}

// The study page's panel (views/study.js): the chart, what is brushed, a button to clear it.
export function mount(el, study) {
  render(
    el,
    html`<div class="panel-head"><h2 id="parallel-title">Parameters of the completed trials<span class="dim" id="parallel-note" data-testid="parallel-note"></span></h2>
      <span class="dim">coloured by value (by the colour scale: best to worst); drag along an axis to select a range, click it to drop the range<span id="parallel-centre" data-testid="parallel-centre" hidden>; the dashed line is the policy's centre</span><span id="parallel-box" data-testid="parallel-box" hidden>, the grey bands its box</span>${
        study.constrained ? html`<span data-testid="parallel-infeasible">; infeasible trials dashed grey</span>` : ""
      }</span></div>
    <p class="brush-line" data-testid="brush" hidden><span data-testid="brush-summary"></span> <button type="button" data-testid="brush-clear">clear the selection</button></p>
    <p class="empty" data-testid="parallel-empty" hidden>No completed trials yet.</p>
    <canvas id="parallel" class="chart tall" role="img" aria-labelledby="parallel-title" style="touch-action:pan-x"></canvas>
    <form data-testid="brush-form" class="brush-form" style="display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:baseline;margin-top:.4rem">
      <span class="dim">or by numbers:</span>
      <label>axis <select name="axis">${[...study.names.slice(0, 24), "value"].map((n) => html`<option>${n}</option>`)}</select></label>
      <label>from <input name="lo" size="9" autocomplete="off"></label>
      <label>to <input name="hi" size="9" autocomplete="off"></label>
      <button type="submit">select</button>
      <span class="dim" data-testid="brush-form-note" aria-live="polite"></span>
    </form>`,
  );
  const canvas = el.querySelector("canvas");
  const line = el.querySelector("[data-testid=brush]");
  let mine = null; // the predicate this chart put in study.brushed (another chart's selection replaces it)
  const chart = createParallel(canvas, {
    onBrush(predicate) {
      mine = predicate;
      study.brushed = predicate;
      study.rerender();
    },
  });
  el.querySelector("[data-testid=brush-clear]").addEventListener("click", () => chart.clear());
  // the same selection by keyboard: an axis and a range in user units (a categorical's choices by name)
  const form = el.querySelector("[data-testid=brush-form]");
  const formNote = el.querySelector("[data-testid=brush-form-note]");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = form.elements.axis.value;
    const spec = name === "value" ? null : study.specs[study.names.indexOf(name)];
    const read = (text) => {
      text = text.trim();
      if (spec?.type === "categorical") {
        const k = spec.choices.map(String).indexOf(text);
        return k < 0 ? NaN : spec.choices.length > 1 ? k / (spec.choices.length - 1) : 0.5;
      }
      return text === "" ? NaN : Number(text);
    };
    const [lo, hi] = [read(form.elements.lo.value), read(form.elements.hi.value)];
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || (spec?.log && (lo <= 0 || hi <= 0))) {
      formNote.textContent = spec?.type === "categorical" ? `from and to: choices of ${name} (${spec.choices.join(", ")})` : `from and to: numbers${spec?.log ? " above 0" : ""}`;
      return;
    }
    formNote.textContent = "";
    chart.brush(name, lo, hi);
  });
  canvas.parallel = chart; // for tests and the console: canvas.parallel.brush("x0", 0, 1)
  return {
    render() {
      const { data, names, specs } = study;
      const shown = study.display || {};
      const none = !data.state.some((s) => s === "complete");
      el.querySelector("[data-testid=parallel-empty]").hidden = !none;
      canvas.hidden = none;
      el.querySelector("[data-testid=parallel-centre]").hidden = !shown.centre;
      el.querySelector("[data-testid=parallel-box]").hidden = !shown.box;
      if (none) {
        canvas.dataset.drawn = "0";
        canvas.dataset.infeasible = "0";
        return;
      }
      if (chart.brushes.size && study.brushed !== mine) chart.brushes.clear(); // another chart selected: this one's ranges go
      const valueName = study.several ? `${study.objectives[0].metric} (objective 1 of ${study.objectives.length})` : "value";
      const out = chart.draw({ names, specs, data, direction: study.direction, centre: shown.centre ?? null, box: shown.box ?? null, valueName });
      canvas.dataset.drawn = String(out.drawn);
      canvas.dataset.infeasible = String(out.infeasible);
      const notes = [];
      if (out.drawn < out.total && !study.brushed) notes.push(`${out.drawn.toLocaleString()} of ${out.total.toLocaleString()} lines (the best and an even sample of the rest)`);
      if (names.length > out.shown) notes.push(`the first ${out.shown} of ${names.length} parameters`);
      el.querySelector("[data-testid=parallel-note]").textContent = notes.length ? `: ${notes.join("; ")}` : "";
      line.hidden = !study.brushed || study.brushed !== mine;
      if (!line.hidden) {
        let n = 0;
        for (let i = 0; i < data.state.length; i++) if (data.state[i] && study.brushed(i)) n++;
        el.querySelector("[data-testid=brush-summary]").textContent = `Selected: ${chart.summary()} (${n.toLocaleString()} trials).`;
      }
    },
    unmount() {
      if (study.brushed === mine) study.brushed = null;
    },
  };
}
