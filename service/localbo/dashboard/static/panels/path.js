// Where the policy's centre has been: its declared display.path, one line per parameter.

import { html, render } from "../html.js";
import { drawPath } from "../charts.js";

export function mount(el, study) {
  render(
    el,
    html`<h2>Where the policy's centre has been</h2>
      <canvas id="path" class="chart" role="img" aria-label="The policy's centre, oldest first"></canvas>`,
  );
  const canvas = el.querySelector("#path");
  return {
    render() {
      const trail = study.display?.path;
      el.hidden = !(trail && trail.length);
      if (!el.hidden) canvas.dataset.drawn = drawPath(canvas, trail, study.names);
    },
  };
}
