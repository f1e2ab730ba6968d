// Safe mode (issue 30), near the top of a study that has `safety`: its bound on the chance of breaking a
// constraint (δ), and how many of the completed trials it asked broke one anyway; the seeds and the safe
// fallbacks (the safest known point asked again) and the policy's repeats (a point asked before) counted. Trials told from outside (source "external") are
// not safe mode's choices: they are left out of the count and said so. Hidden without safety.

import { html, render } from "../html.js";

export function mount(el, study) {
  const safety = study.info?.safety;
  el.hidden = !safety;
  if (!safety) return { render() {} };
  return {
    render() {
      const { data } = study;
      let asked = 0;
      let broke = 0;
      let external = 0;
      let seeds = 0;
      let safeFallbacks = 0;
      let repeats = 0;
      for (let i = 0; i < data.state.length; i++) {
        if (data.source[i] === "seed") seeds++;
        else if (data.source[i] === "fallback-safe") safeFallbacks++;
        else if (data.source[i] === "repeat-safe") repeats++;
        if (data.state[i] !== "complete") continue;
        if (data.source[i] === "external") {
          external++;
          continue;
        }
        asked++;
        if (data.feasible[i] === false) broke++;
      }
      render(
        el,
        html`<b>safe mode (δ = ${String(safety.max_violation_probability)})</b>: points are asked only where every constraint${study.info?.failures === "avoid" ? " (and no failure)" : ""} is predicted to hold with probability at least ${String(Number((1 - safety.max_violation_probability).toPrecision(12)))} ·
          <span data-testid="safe-violations" class="${broke ? "safe-broke" : ""}">safe-mode violations: ${broke} of ${asked}</span>${
            external ? html` <span class="dim">(${external} told from outside not counted)</span>` : ""
          } · <span data-testid="safe-seeds">${seeds} seed${seeds === 1 ? "" : "s"}</span>${
            safeFallbacks ? html` · <span data-testid="safe-fallbacks">${safeFallbacks} safe fallbacks (the safest known point asked again)</span>` : ""
          }${repeats ? html` · <span data-testid="safe-repeats">${repeats} repeat${repeats === 1 ? "" : "s"} (a known safe point asked again by the policy)</span>` : ""}`,
      );
    },
  };
}
