// Values by trial: every value, the best so far, failed and running trials in lanes of their own; a
// tooltip (mouse and touch) with the trial's state, value, candidate, failure reason, note and parameters. On a
// study with outcome constraints, infeasible trials are hollow marks and the best so far is the best feasible.

import { html, render } from "../html.js";
import { drawHistory } from "../charts.js";
import { exact, fromUnit } from "../format.js";
import { sourceBadge } from "../source.js";
import { expiredTrials } from "./alert.js";

const TIP_PARAMS = 8;

export function mount(el, study) {
  render(
    el,
    html`<div class="panel-head"><h2 id="history-title">${
      study.several ? `${study.objectives[0].metric} by trial (the first of ${study.objectives.length} objectives)` : "Values by trial"
    }</h2>
      <label class="check"><input id="log" type="checkbox"> log scale</label>
      <span class="legend" data-testid="history-legend"><i class="sw point"></i>value${
        study.constrained ? html` <i class="sw infeasible"></i>infeasible` : ""
      } <i class="sw best"></i>${study.constrained ? "best feasible" : "best"} ${study.several ? `${study.objectives[0].metric} ` : ""}so far <i class="sw failed">×</i>failed <i class="sw running">○</i>running <span data-testid="legend-stale"><i class="sw stale">□</i>stale (past its lease)</span> <span data-testid="legend-fallback"><i class="sw fallback"></i>fallback point</span></span>
    </div>
    <p class="empty" data-testid="history-empty" hidden>No trials yet: the chart appears with the first result.</p>
    <div class="chart-wrap"><canvas id="history" class="chart" role="img" tabindex="0" aria-describedby="tip" aria-label="Values by trial number; the arrow keys step through the trials, Enter opens one"></canvas><div id="tip" class="tip" role="tooltip" hidden></div></div>`,
  );
  const canvas = el.querySelector("#history");
  const tip = el.querySelector("#tip");
  const empty = el.querySelector("[data-testid=history-empty]");
  let drawn = null;
  el.querySelector("#log").addEventListener("change", (e) => {
    study.view.log = e.target.checked;
    study.rerender();
  });

  // the tooltip for trial k (1-based) at (x, y) in the canvas' CSS pixels
  const showTrial = (k, x, y) => {
    const { data } = study;
    if (k < 1 || k > data.value.length || !data.state[k - 1]) return (tip.hidden = true);
    const i = k - 1;
    const reason = data.reasons[String(k)];
    const note = study.notes?.[String(k)];
    const candidate = data.candidate[i];
    // full precision: a tooltip is where a value is read exactly (the trial's page has it to copy)
    const params = data.x[i]
      ? study.names.slice(0, TIP_PARAMS).map((name, j) => html`<div>${name} = ${exact(fromUnit(study.specs[j], data.x[i][j]))}</div>`)
      : [];
    const late = data.state[i] === "running" && expiredTrials(study).has(k);
    render(
      tip,
      html`<div><b>#${k}</b> ${data.state[i]}${late ? " (lease expired)" : ""}${data.value[i] === null ? "" : html` <span data-testid="tip-value">${exact(data.value[i])}</span>`}${
        data.feasible[i] === false ? html` · <span class="tip-infeasible">infeasible</span>` : ""
      }${
        candidate !== undefined && candidate !== null ? html` · candidate ${candidate}` : ""
      }${data.source[i] && data.source[i] !== study.policyName ? html` · ${sourceBadge(data.source[i])}` : ""}</div>${reason ? html`<div class="tip-reason">${reason}</div>` : ""}${
      note ? html`<div class="tip-note" data-testid="tip-note">note: ${note}</div>` : ""
    }${params}${
        study.names.length > TIP_PARAMS ? html`<div class="dim-tip">… ${study.names.length - TIP_PARAMS} more</div>` : ""
      }`,
    );
    tip.hidden = false;
    const width = canvas.clientWidth;
    tip.style.left = `${Math.max(0, Math.min(x + 12, width - tip.offsetWidth - 4))}px`;
    tip.style.top = `${y + 12}px`;
    cursor = k;
  };
  let cursor = 0;
  const show = (event) => {
    if (!drawn) return;
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const n = study.data.value.length;
    const k = Math.round(((x - drawn.box.l) / (drawn.box.r - drawn.box.l)) * n + 0.5);
    showTrial(k, x, event.clientY - rect.top);
  };
  canvas.addEventListener("pointermove", show);
  canvas.addEventListener("pointerdown", show);
  canvas.addEventListener("pointerleave", () => (tip.hidden = true));
  // by keyboard: the arrow keys step through the trials (Home / End: the first / last), Enter opens one
  canvas.addEventListener("keydown", (event) => {
    if (!drawn) return;
    const n = study.data.value.length;
    const step = { ArrowRight: 1, ArrowLeft: -1, Home: -n, End: n }[event.key];
    if (event.key === "Enter" && cursor) {
      window.location.hash = `#/study/${encodeURIComponent(study.name)}/trial/${cursor}`;
      return;
    }
    if (event.key === "Escape") return (tip.hidden = true);
    if (!step) return;
    event.preventDefault();
    let k = Math.min(n, Math.max(1, (cursor || (step > 0 ? 0 : n + 1)) + step));
    while (k >= 1 && k <= n && !study.data.state[k - 1]) k += Math.sign(step);
    if (k < 1 || k > n) return;
    const v = study.data.value[k - 1];
    const y = v !== null && study.data.state[k - 1] === "complete" ? drawn.sy(drawn.tf(v)) : drawn.box.b;
    showTrial(k, drawn.sx(k), y);
  });
  canvas.addEventListener("blur", () => (tip.hidden = true));

  return {
    render() {
      const none = !study.data.state.some(Boolean);
      empty.hidden = !none;
      canvas.parentElement.hidden = none;
      if (none) {
        canvas.dataset.drawn = "0";
        canvas.dataset.infeasible = "0";
        drawn = null;
        return;
      }
      drawn = drawHistory(canvas, study.data, { direction: study.direction, log: study.view.log, highlight: study.brushed, expired: expiredTrials(study) });
      canvas.dataset.drawn = drawn.drawn;
      canvas.dataset.infeasible = drawn.infeasible;
      canvas.dataset.fallbacks = drawn.fallbacks;
      canvas.dataset.stale = drawn.stale;
      canvas.dataset.running = drawn.running;
      el.querySelector("[data-testid=legend-stale]").hidden = !drawn.stale;
      el.querySelector("[data-testid=legend-fallback]").hidden = !drawn.fallbacks;
    },
  };
}
