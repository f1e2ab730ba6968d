// Parallel coordinates of the completed trials, coloured by value, with the policy's centre and box.
// The first version: panels/parallel.js (ticks, labels, log axes, brushing) replaces it.

import { html, render } from "../html.js";
import { drawParallel, fmt } from "../charts.js";

export function mount(el, study) {
  render(
    el,
    html`<div class="panel-head"><h2>Parameters of the completed trials<span id="parallel-note" class="dim"></span></h2>
      <span class="dim">coloured by value<span id="parallel-centre" hidden>; the dashed black line is the policy's centre</span><span id="parallel-box" hidden>, the grey bands its box</span></span></div>
    <p class="empty" data-testid="parallel-empty" hidden>No completed trials yet.</p>
    <canvas id="parallel" class="chart tall" role="img" aria-label="Parallel coordinates of the trials"></canvas>`,
  );
  const canvas = el.querySelector("#parallel");
  const empty = el.querySelector("[data-testid=parallel-empty]");
  return {
    render() {
      const { data, specs, names } = study;
      const shown = study.display || {};
      const none = !data.state.some((s) => s === "complete");
      empty.hidden = !none;
      canvas.hidden = none;
      el.querySelector("#parallel-centre").hidden = !shown.centre;
      el.querySelector("#parallel-box").hidden = !shown.box;
      if (none) {
        canvas.dataset.drawn = "0";
        el.querySelector("#parallel-note").textContent = "";
        return;
      }
      const labels = specs.map((s) => (s.type === "categorical" ? [String(s.choices[0]), String(s.choices.at(-1))] : [fmt(s.low), fmt(s.high)]));
      const parallel = drawParallel(canvas, data, names, {
        direction: study.direction,
        centre: shown.centre ?? null,
        box: shown.box ?? null,
        axisLabels: labels,
      });
      canvas.dataset.drawn = parallel.drawn;
      el.querySelector("#parallel-note").textContent =
        parallel.drawn < parallel.total ? `: ${parallel.drawn.toLocaleString()} of ${parallel.total.toLocaleString()} (the best and an even sample of the rest)` : "";
    },
  };
}
