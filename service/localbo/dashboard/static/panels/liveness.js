// Is it alive, is it stuck: time since the last result, trials since the last improvement, results per
// hour, and (finite studies) the candidates left.

import { html, renderChanged } from "../html.js";
import { ago, dateTime, duration, fmt } from "../format.js";
import { liveness } from "../liveness.js";
import { studyStall } from "./alert.js";

export function mount(el, study) {
  const draw = () => {
    const space = study.info?.space ?? {};
    const candidates = study.finite && !space.allow_repeats ? space.candidates : null;
    const live = liveness(study.info?.summary, study.data, { direction: study.direction, candidates });
    // stopped relative to its own cadence (liveness.js' rule), not after a fixed hour
    const stopped = studyStall(study);
    const item = (label, value, id, title = "") =>
      html`<div class="live-item"><dt>${label}</dt><dd data-testid="${id}" title="${title}">${value}</dd></div>`;
    renderChanged(
      el,
      html`<dl class="liveness-row${stopped.stopped ? " warn" : ""}" data-stopped="${stopped.stopped ? "1" : "0"}">
        ${item("last result", live.lastResultAt === null ? "none yet" : ago(live.lastResultAt), "last-result", live.lastResultAt === null ? "" : dateTime(live.lastResultAt))}
        ${
          study.several
            ? item("trials since the hypervolume grew", live.sinceImprovement === null ? "–" : String(live.sinceImprovement), "since-improvement", "completed trials since the last one that raised the hypervolume")
            : item("trials since the best", live.sinceImprovement === null ? "–" : String(live.sinceImprovement), "since-improvement", "completed trials since the best one")
        }
        <div class="live-item"><dt>results in the last hour</dt><dd title="completed and failed trials in the last 60 minutes"><span data-testid="per-hour">${
          live.perHour === null ? "–" : fmt(live.perHour)
        }</span>${
          stopped.stopped ? html` <span class="stop-note" data-testid="per-hour-stop">but none for ${duration(stopped.silenceS)}</span>` : ""
        }</dd></div>
        ${item("usual gap between results", stopped.gapS === null ? "–" : duration(stopped.gapS), "typical-gap", stopped.gapS === null ? "fewer than 4 results" : stopped.basis)}
        ${study.finite ? item("candidates left", live.candidatesRemaining === null ? "repeats allowed" : String(live.candidatesRemaining), "candidates-left", `of ${space.candidates}`) : ""}
      </dl>`,
    );
  };
  return { render: draw, tick: draw };
}
