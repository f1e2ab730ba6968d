// Parameter importance as horizontal bars, from GET .../analysis/importance. The headline is the estimate
// from the GP the server fits (gp_method says how it reads the model: the mean squared slope of its posterior
// mean). Beside it, thinner and paler, a rough model-free check: a random forest's out-of-bag permutation
// importance (it measures the variance a parameter explains, not its slope, and is noisy on a few dozen
// points). Where the two disagree by more than DISAGREE (a share) the panel says where and by how much.

import { get } from "../api.js";
import { fmt } from "../charts.js";
import { html, render } from "../html.js";

const SERIES = [
  { key: "gp", method: "gp_method", name: "GP (model-based)", headline: "the estimate", colour: "var(--imp-gp, #0072B2)", height: ".8rem" },
  { key: "forest", method: "forest_method", name: "random forest (model-free)", headline: "a rough check", colour: "var(--imp-check, #A63A00)", height: ".45rem" },
];
export const DISAGREE = 0.1; // a share: where the check and the GP differ by this much, the panel says so

// [{name, gp, forest}] of the parameters whose shares differ by DISAGREE or more, the largest first
export function disagreements(answer) {
  const names = answer?.parameters ?? [];
  const [g, f] = [answer?.gp, answer?.forest];
  if (!Array.isArray(g) || !Array.isArray(f) || g.length !== names.length || f.length !== names.length) return [];
  return names
    .map((name, j) => ({ name, gp: g[j], forest: f[j], gap: Math.abs(g[j] - f[j]) }))
    .filter((d) => Number.isFinite(d.gap) && d.gap >= DISAGREE)
    .sort((a, b) => b.gap - a.gap);
}

// root: an element to fill; answer: the server's body, or {error: "..."} when the request failed.
// Returns the number of bars drawn.
export function drawImportance(root, answer) {
  if (!answer || answer.error) {
    render(root, html`<p class="dim" data-testid="importance-note">No importance: ${answer?.error || "the server gave none"}.</p>`);
    root.dataset.bars = "0";
    return 0;
  }
  const names = answer.parameters || [];
  const shown = SERIES.filter((s) => Array.isArray(answer[s.key]) && answer[s.key].length === names.length);
  if (!shown.length || !names.length) {
    render(
      root,
      html`<p class="dim" data-testid="importance-note">No importance yet (${answer.n_complete ?? 0} completed trials)${answer.note ? html`: ${answer.note}` : "."}</p>`,
    );
    root.dataset.bars = "0";
    return 0;
  }
  const first = answer[shown[0].key];
  const order = names.map((_, j) => j).sort((a, b) => first[b] - first[a]);
  let top = 0;
  for (const s of shown) for (const v of answer[s.key]) if (Number.isFinite(v) && v > top) top = v;
  const bar = (s, v) => {
    const width = Number.isFinite(v) && top > 0 ? Math.max(0.5, (100 * v) / top) : 0;
    return html`<div class="imp-row${s.key === "forest" ? " imp-check" : ""}" style="display:flex;align-items:center;gap:.4rem;min-height:${s.key === "forest" ? ".8rem" : "1.1rem"}">
      <span aria-hidden="true" style="display:inline-block;height:${s.height};width:${width.toFixed(1)}%;max-width:calc(100% - 5rem);background:${s.colour};border-radius:2px;${s.key === "forest" ? "opacity:.75" : ""}"></span>
      <span class="num" data-series="${s.key}" title="${s.name}: ${s.headline}" style="font-variant-numeric:tabular-nums${s.key === "forest" ? ";font-size:.85em" : ""}">${fmt(v)}</span></div>`;
  };
  const keys = shown.map(
    (s) =>
      html`<li data-testid="importance-key-${s.key}"${s.key === "forest" ? html` class="imp-check"` : ""}><span aria-hidden="true" style="display:inline-block;width:.8rem;height:${s.height};background:${s.colour};vertical-align:middle;border-radius:2px"></span>
        <b>${s.key === "gp" ? "The estimate: " : "A rough model-free check, not a second estimate: "}${s.name}</b>${answer[s.method] ? html` (${answer[s.method]})` : ""}</li>`,
  );
  const apart = shown.length === 2 ? disagreements(answer) : [];
  const disagreement = shown.length === 2
    ? html`<p class="${apart.length ? "imp-disagree" : "dim"}" data-testid="importance-disagreement" data-count="${String(apart.length)}">${
        apart.length
          ? html`<b>The rough check disagrees with the GP</b> on ${apart.map(
              (d, k) => html`${k ? ", " : ""}<b>${d.name}</b> (GP ${fmt(d.gp)}, forest ${fmt(d.forest)})`,
            )}: trust the GP's estimate; the forest measures explained variance, not slope, and is noisy on few trials.`
          : `The rough check agrees with the GP to within ${fmt(DISAGREE)} on every parameter.`
      }</p>`
    : "";
  const missing = SERIES.filter((s) => !shown.includes(s)).map((s) => html`<li class="dim">${s.name}: not available for this study</li>`);
  render(
    root,
    html`<ul class="imp-key" style="list-style:none;padding:0;margin:0 0 .5rem" data-testid="importance-key">${keys}${missing}</ul>
      <table class="imp" data-testid="importance" style="width:100%;border-collapse:collapse">
        <thead><tr><th scope="col" style="text-align:left;width:7rem">parameter</th><th scope="col" style="text-align:left">${shown.map((s) => `${s.name}: ${s.headline}`).join(" · ")}</th></tr></thead>
        <tbody>${order.map(
          (j) => html`<tr style="border-top:1px solid #eee"><th scope="row" style="text-align:left;font-weight:500;padding-right:.6rem;overflow-wrap:anywhere;vertical-align:middle">${names[j]}</th><td style="padding:.2rem 0">${shown.map((s) =>
            bar(s, answer[s.key][j]),
          )}</td></tr>`,
        )}</tbody>
      </table>
      ${disagreement}
      <p class="dim" data-testid="importance-note" style="margin:.5rem 0 0">${answer.n_complete} completed trials.${answer.note ? html` ${answer.note}` : ""}</p>`,
  );
  root.dataset.bars = String(order.length * shown.length);
  return order.length * shown.length;
}

// The study page's panel (views/study.js): asks on mount, then again after a policy refit or when the
// completed trials grew by a tenth (at least 5), at most one request at a time and one per 10 s.
export function mount(el, study) {
  render(
    el,
    html`<div class="panel-head"><h2 id="importance-title">${
      study.several ? `What drives ${study.objectives[0].metric} (the first of ${study.objectives.length} objectives)` : "What drives the value"
    }</h2>
      <span class="dim">parameter importance, larger is more important: the GP's estimate, with a rough model-free check under it</span></div>
    <div data-testid="importance-panel"><p class="dim">asking the server…</p></div>`,
  );
  const box = el.querySelector("[data-testid=importance-panel]");
  let asked = { at: -Infinity, version: undefined, complete: -1 };
  let inFlight = false;
  const completed = () => study.data.state.reduce((n, s) => n + (s === "complete" ? 1 : 0), 0);
  async function ask() {
    inFlight = true;
    asked = { at: performance.now(), version: study.policy?.policy_state_version, complete: completed() };
    let answer;
    try {
      answer = await get(`${study.path}/analysis/importance`, { signal: study.signal });
    } catch (error) {
      if (study.signal?.aborted) return;
      answer = { error: String(error.message || error) };
    } finally {
      inFlight = false;
    }
    study.importance = answer; // the surface panel's default pair reads it
    try {
      drawImportance(box, answer);
    } catch (error) {
      study.panelFailed?.("importance-panel", error); // drawn after a request: outside the page's boundary call
    }
    study.rerender();
  }
  ask();
  return {
    render() {
      if (inFlight || performance.now() - asked.at < 10000) return;
      const n = completed();
      const version = study.policy?.policy_state_version;
      if (asked.version === undefined) asked.version = version; // the policy arrived after the first request
      const refit = version !== undefined && version !== asked.version;
      if (refit || n - asked.complete >= Math.max(5, asked.complete / 10)) ask();
    },
  };
}
