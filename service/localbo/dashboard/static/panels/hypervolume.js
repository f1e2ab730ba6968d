// Hypervolume over trials, on a study with several objectives: its history (each trial that raised it, and the
// volume after it: GET .../pareto's, the same as the summary's hypervolume_history, which stands in until the
// front is read) as a step line by trial number, held to the latest trial; the
// reference point it is measured from, and "(inferred)" when the study gave none (the server then infers it
// from the results, and the whole history moves with it). Hidden on a single-objective study.

import { html, render } from "../html.js";
import { COLORS, fmt, frameAxes, niceTicks, prepare } from "../charts.js";
import { pointText } from "../objectives.js";

// steps: [[number, hypervolume], ...] in trial order; n: the latest trial number. Returns the last value.
export function drawHypervolume(canvas, steps, n) {
  const { ctx, w, h } = prepare(canvas, 600, 220);
  const box = { l: 64, r: w - 12, t: 10, b: h - 38 };
  const xmax = Math.max(n, ...steps.map((s) => s[0]), 1);
  let top = 0;
  for (const s of steps) if (Number.isFinite(s[1]) && s[1] > top) top = s[1];
  top = Math.min(top * 1.06, Number.MAX_VALUE) || 1; // finite even near the double range
  const sx = (k) => box.l + ((k - 0.5) / xmax) * (box.r - box.l);
  const sy = (v) => box.b - (v / top) * (box.b - box.t);
  const yTicks = niceTicks(0, top, 4);
  const xTicks = niceTicks(1, xmax, Math.max(2, Math.min(6, Math.floor((box.r - box.l) / 70)))).filter((t) => Number.isInteger(t) && t >= 1);
  frameAxes(ctx, box, box.b, xTicks, yTicks, sx, sy, "trial number", fmt);
  if (!steps.length) return null;
  // the step line: flat until the next trial that raised it, then up
  ctx.strokeStyle = COLORS.lines[0];
  ctx.lineWidth = 2;
  ctx.beginPath();
  steps.forEach(([k, v], j) => {
    if (j === 0) ctx.moveTo(sx(k), sy(v));
    else {
      ctx.lineTo(sx(k), sy(steps[j - 1][1]));
      ctx.lineTo(sx(k), sy(v));
    }
  });
  ctx.lineTo(sx(xmax), sy(steps[steps.length - 1][1]));
  ctx.stroke();
  // a mark on each trial that raised it
  ctx.fillStyle = COLORS.lines[0];
  ctx.beginPath();
  for (const [k, v] of steps) ctx.rect(sx(k) - 3, sy(v) - 3, 6, 6);
  ctx.fill();
  return steps[steps.length - 1][1];
}

export function mount(el, study) {
  el.hidden = !study.several;
  if (!study.several) return { render() {} };
  render(
    el,
    html`<div class="panel-head"><h2 id="hypervolume-title">Hypervolume over trials</h2>
      <span class="dim" data-testid="reference-point"></span></div>
    <p class="empty" data-testid="hypervolume-empty" hidden>No trial has raised the hypervolume yet.</p>
    <canvas class="chart small" data-testid="hypervolume-chart" role="img" aria-label="The hypervolume after each trial, by trial number"></canvas>`,
  );
  const canvas = el.querySelector("canvas");
  const empty = el.querySelector("[data-testid=hypervolume-empty]");
  const refText = el.querySelector("[data-testid=reference-point]");
  let drawnKey = "";
  return {
    render() {
      const summary = study.info?.summary ?? {};
      const { pareto } = study;
      const steps = pareto ? pareto.history.map((s) => [s.number, s.hypervolume]) : summary.hypervolume_history ?? [];
      const ref = pareto ? pareto.reference_point : summary.hypervolume_reference_point ?? null;
      const inferred = study.pareto ? study.pareto.reference_point_inferred : !study.info?.reference_point;
      const n = study.data.state.length;
      const key = JSON.stringify([steps, n, canvas.clientWidth, pareto?.hypervolume_note]);
      refText.textContent = ref ? `reference point: ${pointText(ref, study.objectives, fmt)}${inferred ? " (inferred)" : ""}` : "";
      if (key === drawnKey) return;
      drawnKey = key;
      empty.hidden = steps.length > 0;
      empty.textContent = pareto?.hypervolume_note ? `No hypervolume: ${pareto.hypervolume_note}.` : "No trial has raised the hypervolume yet.";
      canvas.hidden = !steps.length;
      if (!steps.length) return;
      const last = drawHypervolume(canvas, steps, n);
      canvas.dataset.steps = String(steps.length);
      canvas.dataset.last = String(last);
      canvas.setAttribute("aria-label", `The hypervolume after each trial, by trial number: ${fmt(last)} after trial ${steps[steps.length - 1][0]}`);
    },
  };
}
