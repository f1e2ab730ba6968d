// Numbers, times and user units for the views: pure functions, no DOM.

import { fmt } from "./charts.js";

export { fmt };

// seconds as "42 s", "3 min", "2.5 h", "4 d"
export function duration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return "–";
  const a = Math.abs(s);
  if (a < 0.01) return a === 0 ? "0 s" : "< 0.01 s";
  if (a < 1) return `${Number(s.toPrecision(2))} s`; // a sub-second gap between results, not "0 s"
  if (a < 10) return `${Number(s.toFixed(1))} s`;
  if (a < 60) return `${Math.round(s)} s`;
  if (a < 3600) return `${Math.round(s / 60)} min`;
  if (a < 86400) return `${Number((s / 3600).toFixed(1))} h`;
  return `${Number((s / 86400).toFixed(1))} d`;
}

// an ISO time or epoch seconds as milliseconds since the epoch (null when absent)
export function toMs(t) {
  if (t === null || t === undefined || t === "") return null;
  if (typeof t === "number") return t * 1000;
  const ms = Date.parse(t);
  return Number.isFinite(ms) ? ms : null;
}

export function ago(t, now = Date.now()) {
  const ms = toMs(t);
  if (ms === null) return "never";
  const s = Math.max(0, (now - ms) / 1000);
  return s < 86400 * 30 ? `${duration(s)} ago` : new Date(ms).toLocaleDateString();
}

// "in 3 min" / "3 min ago" for a moment that may be in the future (a lease's expiry)
export function relative(t, now = Date.now()) {
  const ms = toMs(t);
  if (ms === null) return "–";
  const s = (ms - now) / 1000;
  return s >= 0 ? `in ${duration(s)}` : `${duration(-s)} ago`;
}

// date and time, in the viewer's locale ("24/11/2026, 12:03:04")
export function dateTime(t) {
  const ms = toMs(t);
  return ms === null ? "" : new Date(ms).toLocaleString();
}

// a parameter's value in user units from its coordinate (as localbo.space.Param.from_unit; a categorical's
// coordinate is its choice's position in the list, from perParameter)
export function fromUnit(spec, u) {
  u = Math.min(Math.max(u, 0), 1);
  if (spec.type === "categorical") return spec.choices[Math.round(u * (spec.choices.length - 1))];
  if (spec.type === "int") {
    const n = spec.high - spec.low + 1;
    return spec.low + Math.min(Math.floor(u * n), n - 1);
  }
  const v = spec.log
    ? Math.exp(Math.log(spec.low) + u * (Math.log(spec.high) - Math.log(spec.low)))
    : spec.low + u * (spec.high - spec.low);
  return Math.min(Math.max(v, spec.low), spec.high);
}

// an outcome constraint ({metric, op, bound}) as text: "purity ≥ 0.95"; its op alone as "≥"
export const opText = (op) => ({ ">=": "≥", "<=": "≤", "==": "=" })[op] ?? op;
export const constraintText = (c) => `${c.metric} ${opText(c.op)} ${fmt(c.bound)}`;

// a linear parameter constraint as a person writes it: "a + b + c = 1", "2 x − y ≤ 0.5"
export function linearText(c) {
  const terms = Object.entries(c.terms ?? {}).map(([name, a], k) => {
    const size = Math.abs(a) === 1 ? "" : `${fmt(Math.abs(a))} `;
    const sign = a < 0 ? (k ? " − " : "−") : k ? " + " : "";
    return `${sign}${size}${name}`;
  });
  return `${terms.join("")} ${opText(c.op)} ${fmt(c.bound)}`;
}

// whether a metric's value meets a constraint (the server decides feasibility; this only says which bound a
// trial missed, so equality is to a relative 1e-9)
export function meets(c, v) {
  if (typeof v !== "number") return null;
  if (c.op === ">=") return v >= c.bound;
  if (c.op === "<=") return v <= c.bound;
  if (c.op === "==") return Math.abs(v - c.bound) <= 1e-9 * Math.max(1, Math.abs(c.bound));
  return null;
}

// a value as text: numbers formatted, choices (strings, booleans) as they are
export const cell = (v) => (typeof v === "number" ? fmt(v) : String(v ?? ""));

// a value in full precision: the shortest text that reads back as the same double (-0.6999966 stays
// -0.6999966, never "-0.7"); choices as they are; "–" for none
export const exact = (v) => (v === null || v === undefined ? "–" : typeof v === "number" ? (Number.isFinite(v) ? String(v) : "–") : String(v));

// a point's unit coordinates, one per parameter: a categorical's one-hot block (argmax, the first on ties)
// becomes its choice's position in [0, 1], so charts and the table index points by parameter
export function perParameter(specs) {
  if (!specs.some((s) => s.type === "categorical")) return (x) => x;
  return (x) => {
    if (!x) return x;
    const out = [];
    let at = 0;
    for (const s of specs) {
      if (s.type !== "categorical") {
        out.push(x[at]);
        at += 1;
        continue;
      }
      const k = s.choices.length;
      let best = 0;
      for (let j = 1; j < k; j++) if (x[at + j] > x[at + best]) best = j;
      out.push(k > 1 ? best / (k - 1) : 0);
      at += k;
    }
    return out;
  };
}
