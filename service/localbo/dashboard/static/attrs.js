// Free-form attributes (a study's metadata, a trial's record) as a key / value table: scalars as text, nested
// objects and arrays as indented JSON in a box that scrolls inside itself. Bounded: at most MAX_KEYS keys,
// each value cut to MAX_CHARS characters (the cut is said). Every key and value goes through html`` (escaped).

import { html } from "./html.js";

export const MAX_KEYS = 60;
export const MAX_CHARS = 2000;

const cut = (text) => (text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}… (${text.length - MAX_CHARS} more characters)` : text);

function valueOf(v) {
  if (v === null || v === undefined) return html`<span class="dim">null</span>`;
  if (typeof v === "object") {
    const text = JSON.stringify(v, null, 2) ?? "";
    // focusable: a box that scrolls can be scrolled from the keyboard
    return html`<pre class="json" tabindex="0">${cut(text)}</pre>`;
  }
  return html`<span class="wrap">${cut(String(v))}</span>`;
}

// obj: a plain object; testid names the table; empty: what an empty object shows
export function attrsTable(obj, { testid = "attrs", empty = "none" } = {}) {
  const entries = obj && typeof obj === "object" ? Object.entries(obj) : [];
  if (!entries.length) return html`<p class="dim" data-testid="${testid}-empty">${empty}</p>`;
  const shown = entries.slice(0, MAX_KEYS);
  return html`<table class="kv attrs" data-testid="${testid}">${shown.map(
    ([k, v]) => html`<tr data-testid="attr" data-key="${k}"><th scope="row">${cut(k)}</th><td data-testid="attr-value">${valueOf(v)}</td></tr>`,
  )}</table>${
    entries.length > shown.length ? html`<p class="dim">and ${entries.length - shown.length} more keys (the API has them all)</p>` : ""
  }`;
}
