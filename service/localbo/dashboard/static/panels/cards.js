// The counts and the best trial (with its candidate id on a finite study), linked to its own page. On a
// study with outcome constraints: the best feasible trial, and how many told trials were feasible or not. On a
// study with several objectives there is no single best: the hypervolume and the front's size instead (from
// the summary, or the front the page read), never a request to /best (a 409 there).

import { html, render } from "../html.js";
import { fmt } from "../format.js";
import { pointText } from "../objectives.js";

// the best completed trial ({index, value}, null when none); feasibleOnly: among the feasible ones
export function bestOf(data, direction, feasibleOnly = false) {
  let best = null;
  let at = null;
  for (let i = 0; i < data.state.length; i++) {
    if (data.state[i] !== "complete" || data.value[i] === null) continue;
    if (feasibleOnly && data.feasible?.[i] !== true) continue;
    const v = data.value[i];
    if (best === null || (direction === "minimize" ? v < best : v > best)) {
      best = v;
      at = i;
    }
  }
  return at === null ? null : { index: at, value: best };
}

export function mount(el, study) {
  return {
    render() {
      const { data, direction } = study;
      const count = { complete: 0, running: 0, failed: 0, stale: 0 };
      let trials = 0;
      for (const s of data.state) {
        if (!s) continue;
        trials++;
        count[s] = (count[s] ?? 0) + 1;
      }
      const { constrained } = study;
      let feasible = 0;
      let infeasible = 0;
      if (constrained) {
        for (let i = 0; i < data.state.length; i++) {
          if (data.state[i] !== "complete") continue;
          if (data.feasible[i] === true) feasible++;
          else if (data.feasible[i] === false) infeasible++;
        }
      }
      const best = study.several ? null : bestOf(data, direction, constrained);
      const card = (label, value, id, note = "") =>
        html`<div class="card"><div class="label">${label}</div><div class="value" data-testid="${id}">${value}</div>${
          note ? html`<div class="dim">${note}</div>` : ""
        }</div>`;
      let note = "";
      if (best) {
        const candidate = data.candidate[best.index];
        note = html`<a href="#/study/${encodeURIComponent(study.name)}/trial/${best.index + 1}">trial #${best.index + 1}</a>${
          candidate !== undefined && candidate !== null ? html` · candidate <span data-testid="best-candidate">${candidate}</span>` : ""
        }`;
      } else if (constrained && count.complete) note = "no feasible trial yet";
      render(
        el,
        html`${card("trials", String(trials), "n-trials")}${card("complete", String(count.complete), "n-complete")}${card(
          "running",
          String(count.running),
          "n-running",
          count.stale ? `${count.stale} stale` : "",
        )}${card("failed", String(count.failed), "n-failed")}${
          constrained
            ? html`${card("feasible", String(feasible), "n-feasible")}${card("infeasible", String(infeasible), "n-infeasible")}`
            : ""
        }${
          study.several
            ? severalCards(study, card)
            : card(
                `${constrained ? "best feasible" : "best"} (${direction === "minimize" ? "lowest" : "highest"})`,
                fmt(best ? best.value : null),
                "best-value",
                note,
              )
        }`,
      );
    },
  };
}

// the hypervolume (its reference point in the note) and the front's size: from the front the page read (it
// is read again with the summary after new results, so the front panel and the cards agree), else the summary
function severalCards(study, card) {
  const summary = study.info?.summary ?? {};
  const { pareto } = study;
  const hypervolume = pareto ? pareto.hypervolume : summary.hypervolume ?? null;
  const size = pareto ? pareto.trials.length : summary.pareto_size ?? null;
  const ref = pareto ? pareto.reference_point : summary.hypervolume_reference_point;
  const inferred = study.pareto ? study.pareto.reference_point_inferred : !study.info?.reference_point;
  const upTo = ref ? `up to ${pointText(ref, study.objectives, fmt)}${inferred ? " (inferred)" : ""}` : "";
  const note = pareto?.hypervolume_note ? `none: ${pareto.hypervolume_note}` : upTo;
  return html`${card("hypervolume", fmt(hypervolume), "hypervolume", note)}${card(
    "on the Pareto front",
    size === null ? "–" : String(size),
    "pareto-size",
    "trials no other beats in every objective",
  )}`;
}
