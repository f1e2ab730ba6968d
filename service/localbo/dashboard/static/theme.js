// The charts' colours, read from CSS custom properties (style.css: --chart-*, --value-scale; one set per
// colour scheme), so canvas marks follow prefers-color-scheme as the page does. The objects are shared and
// updated in place: a panel reads COLORS.axis (or INK.text, or the value scale) when it draws. The defaults
// are the light scheme's, used until the style sheet is read.

export const COLORS = {
  point: "rgba(0, 114, 178, 0.8)",
  best: "#000000",
  running: "#A65F00",
  failed: "#C03A00",
  infeasible: "#AA3377", // hollow marks: a value that broke an outcome constraint
  stale: "#666666", // open trials whose lease ran out
  grid: "#e3e3e3",
  axis: "#555555",
  text: "#222222",
  halo: "rgba(255, 255, 255, 0.85)", // behind labels drawn over marks, and marks' rims
  pale: "rgba(0, 0, 0, 0.12)", // marks outside a selection, shaded bands
  lines: ["#0072B2", "#A65F00", "#117733", "#AA3377", "#C03A00", "#332288", "#000000", "#666600"],
};

// the analysis panels' ink (panels/scales.js)
export const INK = { text: "#222222", axis: "#555555", grid: "#e6e6e6", failed: "#C03A00", centre: "#000000", point: "#0072B2" };

// the value scale's stops, index 0 the best value (panels/scales.js)
export const VALUE_SCALE = ["#0d0887", "#41049d", "#6a00a8", "#8f0da4", "#b12a90", "#cc4778", "#e16462"];

const VARS = {
  point: "--chart-point",
  best: "--chart-best",
  running: "--chart-running",
  failed: "--chart-failed",
  infeasible: "--chart-infeasible",
  stale: "--chart-stale",
  grid: "--chart-grid",
  axis: "--chart-axis",
  text: "--chart-text",
  halo: "--chart-halo",
  pale: "--chart-pale",
};

const media = window.matchMedia?.("(prefers-color-scheme: dark)");
let fresh = false;

const refill = (array, items) => items.length && array.splice(0, array.length, ...items);

// reads the custom properties once per colour scheme (prepare() calls it before every chart draws)
export function syncTheme() {
  if (fresh) return;
  const style = getComputedStyle(document.documentElement);
  const read = (name) => style.getPropertyValue(name).trim();
  if (!read("--chart-axis")) return; // the style sheet is not in yet: the defaults, and try again next time
  for (const [key, name] of Object.entries(VARS)) COLORS[key] = read(name) || COLORS[key];
  refill(COLORS.lines, read("--chart-lines").split(/\s+/).filter(Boolean));
  refill(VALUE_SCALE, read("--value-scale").split(/\s+/).filter(Boolean));
  Object.assign(INK, { text: COLORS.text, axis: COLORS.axis, grid: COLORS.grid, failed: COLORS.failed, centre: COLORS.best, point: COLORS.lines[0] });
  fresh = true;
}

export const dark = () => Boolean(media?.matches);

// the scheme changes: read the colours again and redraw (the study page redraws on resize)
media?.addEventListener?.("change", () => {
  fresh = false;
  syncTheme();
  window.dispatchEvent(new Event("resize"));
});
syncTheme(); // at once where the style sheet is in (html that names a colour may come before any chart)
