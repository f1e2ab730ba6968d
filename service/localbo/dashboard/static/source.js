// Where a trial came from, as a badge: the policy's own points plain, the others named. "fallback": the
// policy failed or was late and a random point went out; "fallback-safe": the same in safe mode, where the
// safest known point is asked again instead (never a random one); "seed": a safe point the study was
// given at creation; "repeat-safe": in safe mode the policy asked a point asked before again; "stale-retry": a stale trial's point offered again; "external": told from outside.

import { html } from "./html.js";

const NAMED = {
  fallback: ["fallback", "the policy failed or was late: a random point"],
  "fallback-safe": ["fallback (safe)", "safe mode: the policy failed or was late, the safest known point asked again"],
  seed: ["seed", "safe mode: a safe point given at creation"],
  "repeat-safe": ["repeat (safe)", "safe mode: the policy asked a point asked before again (a seed still running, or the point it starts from)"],
  "stale-retry": ["stale retry", "a stale trial's point offered again"],
  external: ["external", "told from outside (POST .../trials)"],
};

export const sourceText = (source) => NAMED[source]?.[0] ?? source ?? "";

export function sourceBadge(source) {
  const named = NAMED[source];
  if (!named) return html`${source ?? ""}`;
  return html`<span class="badge source-${source}" data-testid="source" data-source="${source}" title="${named[1]}">${named[0]}</span>`;
}
