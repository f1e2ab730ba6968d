// The policy's declared `display` block (GET .../policy), checked: its unit-cube points per parameter
// (as the trials' `x`, through perParameter); anything malformed is left out, so a policy's picture never
// breaks the page. A categorical's one-hot block has no box of its own: its bounds are null.
// The page never reads the policy's private `state`.

export function displayOf(raw, specs, toParams) {
  if (!raw || typeof raw !== "object") return null;
  const width = specs.reduce((n, s) => n + (s.type === "categorical" ? s.choices.length : 1), 0);
  const point = (u) => (Array.isArray(u) && u.length === width && u.every(Number.isFinite) ? toParams(u) : null);
  const centre = point(raw.centre);
  let box = null;
  const lower = point(raw.box?.lower);
  const upper = point(raw.box?.upper);
  if (lower && upper) {
    const bound = (b) => b.map((v, j) => (specs[j].type === "categorical" ? null : v));
    box = { lower: bound(lower), upper: bound(upper) };
  }
  const path = (Array.isArray(raw.path) ? raw.path : []).map(point).filter(Boolean).map((x, t) => ({ t, x }));
  const p = raw.progress;
  const progress = p && Number.isFinite(p.done) && Number.isFinite(p.total) ? { done: p.done, total: p.total, label: p.label ?? "" } : null;
  const numbers = raw.numbers && typeof raw.numbers === "object" ? Object.entries(raw.numbers) : [];
  return { phase: typeof raw.phase === "string" ? raw.phase : null, progress, centre, box, path, numbers };
}
