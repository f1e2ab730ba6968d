// Escaping templates: html`<td>${value}</td>` escapes every interpolation unless it is itself an
// html`` result or raw(...) (a trusted fragment). Arrays are joined, null / undefined / false are empty.

class Safe {
  constructor(text) {
    this.text = text;
  }
  toString() {
    return this.text;
  }
}

export const escape = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// A fragment the caller vouches for (it is inserted as it is).
export const raw = (text) => new Safe(String(text));

function piece(v) {
  if (v instanceof Safe) return v.text;
  if (v === null || v === undefined || v === false) return "";
  if (Array.isArray(v)) return v.map(piece).join("");
  return escape(v);
}

export function html(strings, ...values) {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += piece(values[i]) + strings[i + 1];
  return new Safe(out);
}

const drawn = new WeakMap(); // element -> the markup renderChanged last put there

// Puts a template's result into an element (the only innerHTML assignment the dashboard makes).
export function render(element, fragment) {
  if (!(fragment instanceof Safe)) throw new TypeError("render: expected an html`` result");
  element.innerHTML = fragment.text;
  drawn.delete(element);
  return element;
}

// As render, but an element that already holds this markup is left alone, so that a live redraw with nothing new
// keeps the nodes under the viewer's pointer (a click pressed on one node and released on its replacement is lost),
// their focus and selection. ``always``: draw even so (a view's first draw, whose listeners are its own). Returns
// whether it drew.
export function renderChanged(element, fragment, { always = false } = {}) {
  if (!always && drawn.get(element) === fragment.text) return false;
  render(element, fragment);
  drawn.set(element, fragment.text);
  return true;
}
