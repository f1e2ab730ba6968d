// The trade-off table of a study with several objectives: one row per trial on the Pareto front (GET
// .../pareto), its number (a link to its page) and each objective's value; sortable by any column with the
// header buttons (mouse or keyboard), the column's direction in aria-sort; a selection brushed on a chart keeps
// only its trials. Hidden on a single-objective study.

import { html, render, renderChanged } from "../html.js";
import { fmt } from "../format.js";
import { directionWord } from "../objectives.js";

export function mount(el, study) {
  el.hidden = !study.several;
  if (!study.several) return { render() {} };
  const objectives = study.objectives;
  const view = { sort: "0", desc: objectives[0].direction === "maximize" }; // the best first in objective 1
  render(
    el,
    html`<div class="panel-head"><h2 id="tradeoff-title">Trade-offs on the front</h2>
      <span class="dim" data-testid="tradeoff-note"></span></div><div id="tradeoff"></div>`,
  );
  const box = el.querySelector("#tradeoff");
  let drawnKey = "";
  box.addEventListener("click", (event) => {
    const button = event.target.closest("[data-sort]");
    if (!button) return;
    const k = button.dataset.sort;
    view.desc = view.sort === k ? !view.desc : k === "number" ? false : objectives[Number(k)].direction === "maximize";
    view.sort = k;
    study.rerender();
  });
  return {
    render() {
      const front = study.pareto?.trials ?? [];
      const brushed = study.brushed; // a selection on a chart filters the front's rows too, as it does the trials table
      const trials = brushed ? front.filter((t) => brushed(t.number - 1)) : front;
      const key = JSON.stringify([trials.map((t) => t.number), front.length, study.pareto?.hypervolume, view]);
      if (key === drawnKey) return;
      drawnKey = key;
      const value = (t) => (view.sort === "number" ? t.number : t.values?.[objectives[Number(view.sort)].metric] ?? -Infinity);
      const rows = [...trials].sort((a, b) => (value(a) - value(b) || a.number - b.number) * (view.desc ? -1 : 1));
      const head = (k, label, title = "") => {
        const sorted = view.sort === k ? (view.desc ? "descending" : "ascending") : null;
        return html`<th scope="col" class="num"${sorted ? html` aria-sort="${sorted}"` : ""}${title ? html` title="${title}"` : ""}><button type="button" class="sort" data-sort="${k}">${label}${
          sorted ? (view.desc ? " ▾" : " ▴") : ""
        }</button></th>`;
      };
      const link = (n) => `#/study/${encodeURIComponent(study.name)}/trial/${n}`;
      const focused = document.activeElement?.dataset?.sort && box.contains(document.activeElement) ? document.activeElement.dataset.sort : null;
      el.querySelector("[data-testid=tradeoff-note]").textContent = !study.pareto
        ? ""
        : brushed
          ? `${trials.length} of the front's ${front.length} trials in the selection`
          : `${trials.length} trials: none is better in every objective than another`;
      const drew = renderChanged(
        box,
        html`<div class="scroll"><table class="grid compact" data-testid="tradeoff"><thead><tr>${head("number", "trial")}${objectives.map((o, j) =>
          head(String(j), `${o.metric} (${directionWord(o.direction)})`),
        )}</tr></thead><tbody>${rows.map(
          (t) => html`<tr data-number="${t.number}"><td class="num"><a href="${link(t.number)}">#${t.number}</a></td>${objectives.map(
            (o) => html`<td class="num" data-metric="${o.metric}">${fmt(t.values?.[o.metric])}</td>`,
          )}</tr>`,
        )}</tbody></table></div>${
          study.pareto && !trials.length
            ? html`<p class="empty" data-testid="tradeoff-empty">${front.length ? "No trial of the front is in the selection." : "No trial on the front yet."}</p>`
            : ""
        }`,
      );
      if (drew && focused) box.querySelector(`[data-sort="${focused}"]`)?.focus();
    },
  };
}
