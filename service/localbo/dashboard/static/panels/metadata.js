// The study's metadata (free-form JSON given at creation), as a key / value table (attrs.js: escaped, bounded).

import { html, render } from "../html.js";
import { attrsTable } from "../attrs.js";

export function mount(el, study) {
  let shown = null;
  const draw = () => {
    const metadata = study.info?.metadata ?? {};
    const key = JSON.stringify(metadata);
    if (key === shown) return; // redrawn only when it changes (the summary is reread as trials come)
    shown = key;
    const n = Object.keys(metadata).length;
    render(
      el,
      html`<h2 id="metadata-title">Metadata <span class="dim">(${n} ${n === 1 ? "key" : "keys"})</span></h2>
        <div class="scroll">${attrsTable(metadata, { testid: "study-metadata", empty: "This study was created without metadata." })}</div>`,
    );
  };
  return { render: draw };
}
