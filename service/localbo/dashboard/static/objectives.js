// A study's objectives as the views name them: pure helpers, no DOM. A study with 2 to 4 objectives has a
// Pareto front (GET .../pareto) and a hypervolume instead of a best value (GET .../best is a 409 there).

export const several = (info) => (info?.objectives?.length ?? 0) >= 2;

export const directionWord = (direction) => (direction === "maximize" ? "maximise" : "minimise");

// "yield (maximise)"
export const objectiveLabel = (o) => `${o.metric} (${directionWord(o.direction)})`;

// every pair of objective indices, [0, 1], [0, 2], ..., in order (the small multiples of 3 or 4 objectives)
export function pairs(k) {
  const out = [];
  for (let a = 0; a < k; a++) for (let b = a + 1; b < k; b++) out.push([a, b]);
  return out;
}

// a trial's objective values (null when it has no value for one of them: open, failed)
export function objectiveValues(metrics, objectives) {
  if (!metrics) return null;
  const out = objectives.map((o) => metrics[o.metric]);
  return out.every((v) => typeof v === "number" && Number.isFinite(v)) ? out : null;
}

// the reference point's words: "yield 0.71, cost 0.97"
export const pointText = (point, objectives, fmt) =>
  objectives.map((o) => `${o.metric} ${fmt(point?.[o.metric])}`).join(", ");
