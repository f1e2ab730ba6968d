// Is it alive, is it stuck: time since the last result, trials since the last improvement, results per
// hour, and (finite studies) the candidates left.

import { html, render } from "../html.js";
import { ago, dateTime, fmt } from "../format.js";
import { liveness } from "../liveness.js";

export function mount(el, study) {
  const draw = () => {
    const space = study.info?.space ?? {};
    const candidates = study.finite && !space.allow_repeats ? space.candidates : null;
    const live = liveness(study.info?.summary, study.data, { direction: study.direction, candidates });
    const running = study.info?.summary?.n_running ?? 0;
    const quiet = live.lastResultAt !== null && Date.now() - (typeof live.lastResultAt === "number" ? live.lastResultAt * 1000 : Date.parse(live.lastResultAt)) > 3600e3;
    const item = (label, value, id, title = "") =>
      html`<div class="live-item"><dt>${label}</dt><dd data-testid="${id}" title="${title}">${value}</dd></div>`;
    render(
      el,
      html`<dl class="liveness-row${quiet && running ? " warn" : ""}">
        ${item("last result", live.lastResultAt === null ? "none yet" : ago(live.lastResultAt), "last-result", live.lastResultAt === null ? "" : dateTime(live.lastResultAt))}
        ${
          study.several
            ? item("trials since the hypervolume grew", live.sinceImprovement === null ? "–" : String(live.sinceImprovement), "since-improvement", "completed trials since the last one that raised the hypervolume")
            : item("trials since the best", live.sinceImprovement === null ? "–" : String(live.sinceImprovement), "since-improvement", "completed trials since the best one")
        }
        ${item("results / hour", live.perHour === null ? "–" : fmt(live.perHour), "per-hour", "completed and failed trials in the last hour")}
        ${study.finite ? item("candidates left", live.candidatesRemaining === null ? "repeats allowed" : String(live.candidatesRemaining), "candidates-left", `of ${space.candidates}`) : ""}
      </dl>`,
    );
  };
  return { render: draw, tick: draw };
}
