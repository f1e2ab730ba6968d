// The policy: its name, state version and plan queue, and only what its declared `display` block shows
// (phase, progress, named numbers, centre and box in user units); never its private state keys.

import { html, render } from "../html.js";
import { ago, cell, dateTime, fmt, fromUnit } from "../format.js";

export function mount(el, study) {
  render(el, html`<h2>Policy</h2><div id="policy-body" class="dim">loading…</div>`);
  const body = el.querySelector("#policy-body");
  return {
    render() {
      const view = study.policy;
      if (!view) return;
      if (view.error) {
        body.textContent = `Could not read the policy: ${view.error}`;
        return;
      }
      const { specs, names, data } = study;
      const shown = study.display || {};
      const fallbacks = data.source.filter((s) => s === "fallback").length;
      const safeFallbacks = data.source.filter((s) => s === "fallback-safe").length;
      const rows = [];
      const row = (k, v, id = "") => rows.push(html`<tr><th scope="row">${k}</th><td${id ? html` data-testid="${id}"` : ""}>${v}</td></tr>`);
      row("policy", html`${view.policy} <span class="dim">(state version ${view.policy_state_version})</span>`);
      if (view.state_computed_at) {
        // the state (and all below) is the last suggest's: say how old, in time and in results
        const now = study.info?.summary?.n_complete;
        const since = Number.isFinite(now) && Number.isFinite(view.state_results) ? now - view.state_results : 0;
        const seen = Number.isFinite(view.state_results) ? `, on ${view.state_results} ${view.state_results === 1 ? "result" : "results"}` : "";
        const newer = since > 0 ? html` <span class="dim">(${since} newer ${since === 1 ? "result" : "results"} not in it yet)</span>` : "";
        row("computed", html`<span title="${dateTime(view.state_computed_at)}">${ago(view.state_computed_at)}</span>${seen}${newer}`, "policy-computed");
      }
      if (shown.phase) row("phase", shown.phase, "policy-phase");
      const pr = shown.progress;
      if (pr) {
        const done = Math.max(0, Math.min(pr.done, pr.total));
        row(pr.label || "progress", html`<progress max="${Math.max(pr.total, 0)}" value="${done}"></progress> ${pr.done} of ${pr.total}`, "policy-progress");
      }
      row("planned", `${view.planned.length} ${view.planned.length === 1 ? "point" : "points"} queued${view.planned.length ? ` (next: ${view.planned[0].source})` : ""}`);
      if (fallbacks && !view.last_policy_error) row("fallbacks", `${fallbacks} trials`);
      if (safeFallbacks) row("safe fallbacks", `${safeFallbacks} trials (the safest known point asked again)`, "policy-safe-fallbacks");
      const parts = [html`<table class="kv">${rows}</table>`];
      if (shown.numbers?.length) {
        const value = (v) => (v === null || v === undefined ? "–" : typeof v === "number" ? fmt(v) : String(v));
        parts.push(
          html`<table class="kv" data-testid="policy-numbers">${shown.numbers.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${value(v)}</td></tr>`)}</table>`,
        );
      }
      if (shown.centre) {
        const box = shown.box;
        const range = (j) => (box && box.lower[j] !== null ? `${cell(fromUnit(specs[j], box.lower[j]))} – ${cell(fromUnit(specs[j], box.upper[j]))}` : "–");
        parts.push(html`<h3>Centre</h3><div class="scroll"><table class="grid compact" data-testid="centre"><thead><tr><th scope="col">parameter</th><th scope="col" class="num">value</th><th scope="col" class="num">position in range</th>${
          box ? html`<th scope="col" class="num">box</th>` : ""
        }</tr></thead><tbody>${names.slice(0, 50).map(
          (n, j) =>
            html`<tr><td>${n}</td><td class="num">${cell(fromUnit(specs[j], shown.centre[j]))}</td><td class="num">${fmt(shown.centre[j])}</td>${
              box ? html`<td class="num">${range(j)}</td>` : ""
            }</tr>`,
        )}</tbody></table></div>`);
      }
      render(body, html`${parts}`);
      body.classList.remove("dim");
    },
  };
}
