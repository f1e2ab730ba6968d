// Studies side by side (#/compare?studies=a,b,c), for choosing a policy: up to MAX_COMPARED studies, each in
// a colour and a line style of its own; their best-so-far curves on one chart (by trial number or by results
// so far), their distributions of values (panels/edf.js) on another, and a table: policy, trials, best value
// (the study's own: feasible, where it has constraints), the distribution in numbers, fallback points. Studies that do not share a direction are compared within each direction (a pair
// of charts per direction, and a note saying so); a study with several objectives takes part with its first
// objective (the value column) and says so. Read once from GET /studies/NAME and /series; not live.

import { AuthError, get } from "../api.js";
import { html, render } from "../html.js";
import { COLORS, fmt, frameAxes, niceTicks, padRange, prepare, unit } from "../charts.js";
import { exact } from "../format.js";
import { directionWord, several } from "../objectives.js";
import { ready, setLive } from "../shell.js";
import { DASHES, ariaSummary, drawEdf, edfCaption, edfOf, summaryCells, summaryHead } from "../panels/edf.js";

export const MAX_COMPARED = 4;

// the names of a compare link's studies, from the hash's query text ("studies=a,b,c"; names are URL-safe,
// each is encoded all the same)
export function comparedNames(query) {
  const text = typeof query === "string" ? query : "";
  const raw = text.split("&").find((p) => p.startsWith("studies="));
  if (!raw) return [];
  const names = raw.slice("studies=".length).split(",").map((s) => {
    try {
      return decodeURIComponent(s).trim();
    } catch {
      return s.trim();
    }
  });
  return [...new Set(names.filter(Boolean))];
}

export const compareHref = (names) => `#/compare?studies=${names.map(encodeURIComponent).join(",")}`;

// Best so far, direction-aware, over the completed (and, with constraints, feasible) values in trial order:
// [[x, best], ...] at each trial that improved it, x the trial's number or its place among the results.
export function bestSoFar(data, direction, by = "number") {
  const better = direction === "maximize" ? (a, b) => a > b : (a, b) => a < b;
  const out = [];
  let best = null;
  let results = 0;
  for (let i = 0; i < data.number.length; i++) {
    if (data.state[i] !== "complete") continue;
    const v = data.value[i];
    if (typeof v !== "number" || !Number.isFinite(v)) continue;
    results++;
    if (data.feasible?.[i] === false) continue;
    if (best === null || better(v, best)) {
      best = v;
      out.push([by === "results" ? results : data.number[i], v]);
    }
  }
  return { steps: out, best, last: by === "results" ? results : data.number.length };
}

// curves: [{steps, last, colour, dash}]; one chart, x from 1 to the longest study
function drawBest(canvas, curves, xLabel) {
  const { ctx, w, h } = prepare(canvas, 600, 280);
  const box = { l: 64, r: w - 14, t: 10, b: h - 40 };
  let lo = Infinity;
  let hi = -Infinity;
  let xmax = 1;
  for (const c of curves) {
    xmax = Math.max(xmax, c.last);
    for (const [, v] of c.steps) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (!(lo <= hi)) [lo, hi] = [0, 1];
  const [ylo, yhi] = padRange(lo, hi, 0.05);
  const sx = (k) => box.l + (xmax > 1 ? (k - 1) / (xmax - 1) : 0.5) * (box.r - box.l);
  const sy = (v) => box.b - Math.max(-1, Math.min(2, unit(v, ylo, yhi))) * (box.b - box.t);
  const xTicks = niceTicks(1, xmax, Math.max(2, Math.min(6, Math.floor((box.r - box.l) / 70)))).filter((t) => Number.isInteger(t) && t >= 1);
  const yTicks = niceTicks(ylo, yhi, 5);
  frameAxes(ctx, box, box.b, xTicks, yTicks.length ? yTicks : [ylo, yhi], sx, sy, xLabel, fmt);
  ctx.lineWidth = 2;
  for (const c of curves) {
    if (!c.steps.length) continue;
    ctx.strokeStyle = c.colour;
    ctx.setLineDash(c.dash);
    ctx.beginPath();
    c.steps.forEach(([k, v], j) => {
      if (j === 0) ctx.moveTo(sx(k), sy(v));
      else {
        ctx.lineTo(sx(k), sy(c.steps[j - 1][1]));
        ctx.lineTo(sx(k), sy(v));
      }
    });
    ctx.lineTo(sx(c.last), sy(c.steps[c.steps.length - 1][1]));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = c.colour; // the last improvement: a mark of the study's colour
    const [k, v] = c.steps[c.steps.length - 1];
    ctx.fillRect(sx(k) - 3, sy(v) - 3, 6, 6);
  }
  ctx.setLineDash([]);
  return { sx, sy, box };
}

// a study's key: its colour and line style, as a small line (the legend, the table)
const key = (c) =>
  html`<svg class="cmp-key" width="30" height="10" aria-hidden="true" focusable="false"><line x1="1" y1="5" x2="29" y2="5" stroke="${c.colour}" stroke-width="2.5" stroke-dasharray="${
    c.dash.length ? c.dash.join(" ") : "none"
  }"/></svg>`;

// what the page says about one study it could not read
const missing = (name, error) =>
  html`<li data-testid="compare-missing" data-study="${name}"><b>${name}</b>: ${error.status === 404 ? "no such study" : error.message || String(error)}</li>`;

function skeleton(names, extra) {
  return html`<h1 tabindex="-1">Compare studies</h1>
    <p class="dim" data-testid="compare-note">${
      names.length
        ? `${names.length} ${names.length === 1 ? "study" : "studies"}: ${names.join(", ")}. Read when the page opened; reload it for newer results.`
        : ""
    }</p>
    ${
      extra > 0
        ? html`<p class="alert" role="alert" data-testid="compare-limit">At most ${String(MAX_COMPARED)} studies can be compared at once: this link names ${String(
            names.length + extra,
          )}, so only the first ${String(MAX_COMPARED)} are shown.</p>`
        : ""
    }
    <div id="compare-body"></div>`;
}

export const compareView = {
  title: () => "compare",
  crumbs: () => html`<a href="#/">studies</a> / compare`,
  async mount(root, { query }, signal) {
    const all = comparedNames(query);
    const names = all.slice(0, MAX_COMPARED);
    render(root, skeleton(names, all.length - names.length));
    const body = root.querySelector("#compare-body");
    if (!names.length) {
      render(
        body,
        html`<p class="empty" data-testid="compare-empty">No studies to compare: tick 2 to ${String(MAX_COMPARED)} studies on <a href="#/">the studies list</a> and press Compare.</p>`,
      );
      ready("compare");
      return () => {};
    }
    // every study at once; one that cannot be read is named as such, the others are compared
    const read = await Promise.all(
      names.map((name) => {
        const path = `studies/${encodeURIComponent(name)}`;
        return Promise.all([get(path, { signal }), get(`${path}/series`, { signal })]).then(
          ([info, series]) => ({ name, info, series }),
          (error) => {
            if (error instanceof AuthError || signal.aborted || error?.name === "AbortError") throw error;
            return { name, error };
          },
        );
      }),
    );
    const studies = read
      .map((s, k) => ({ ...s, colour: COLORS.lines[k % COLORS.lines.length], dash: DASHES[k % DASHES.length], k }))
      .filter((s) => !s.error);
    const failed = read.filter((s) => s.error);
    for (const s of studies) {
      s.direction = s.series.direction;
      s.objective = s.info.objectives?.[0]?.metric ?? null;
      s.edf = edfOf(s.series.trials.state.map((st, i) => (st === "complete" ? s.series.trials.value[i] : null)), s.direction);
    }
    const directions = ["minimize", "maximize"].filter((d) => studies.some((s) => s.direction === d));
    const objectives = new Set(studies.map((s) => s.objective ?? "value"));
    const notes = [];
    if (directions.length > 1)
      notes.push(
        html`<li data-testid="compare-directions">These studies do not share a direction (${directions
          .map((d) => `${directionWord(d)}: ${studies.filter((s) => s.direction === d).map((s) => s.name).join(", ")}`)
          .join("; ")}): a better value means the opposite in each, so they are compared within each direction, on charts of their own.</li>`,
      );
    for (const s of studies.filter((s) => several(s.info)))
      notes.push(
        html`<li data-testid="compare-several">${s.name} has ${String(s.info.objectives.length)} objectives: it is compared by its first, ${s.objective} (${directionWord(s.direction)}).</li>`,
      );
    const constrained = studies.filter((s) => (s.info.constraints?.length ?? 0) > 0).map((s) => s.name);
    if (constrained.length)
      notes.push(
        html`<li data-testid="compare-infeasible">${constrained.join(", ")} ${constrained.length === 1 ? "has" : "have"} outcome constraints: the best value counts feasible trials only; the distributions and their columns count every completed trial, infeasible ones included.</li>`,
      );
    if (objectives.size > 1)
      notes.push(html`<li data-testid="compare-objectives">The studies name different objectives (${[...objectives].join(", ")}): their values are compared as numbers.</li>`);

    const table = html`<div class="scroll"><table class="grid" data-testid="compare-table"><caption class="table-caption">Each study in numbers (values of the completed trials)</caption>
      <thead><tr><th scope="col">study</th><th scope="col">policy</th><th scope="col">direction</th><th scope="col" class="num">trials</th>
        <th scope="col" class="num" title="the study's best value (feasible, where it has constraints)">best value</th>${summaryHead({ best: false })}<th scope="col" class="num" title="trials handed out as fallback points (the policy failed or was late)">fallback</th></tr></thead>
      <tbody>${studies.map((s) => {
        const m = s.info.summary ?? {};
        return html`<tr data-study="${s.name}"><td class="nowrap">${key(s)} <a href="#/study/${encodeURIComponent(s.name)}">${s.name}</a></td>
          <td data-testid="compare-policy">${s.info.policy}</td>
          <td>${s.objective ? `${directionWord(s.direction)} ${s.objective}` : directionWord(s.direction)}</td>
          <td class="num" data-testid="compare-trials">${String(m.n_trials ?? s.series.trials.number.length)}</td>
          <td class="num nowrap" data-testid="compare-best-value"><span class="exact">${exact(several(s.info) ? bestSoFar(s.series.trials, s.direction).best : m.best_value)}</span></td>
          ${s.edf ? summaryCells(s.edf, { best: false }) : html`<td class="num" data-testid="edf-n">0</td><td class="num">–</td><td class="num">–</td><td class="num">–</td>`}
          <td class="num" data-testid="compare-fallback">${String(m.n_fallback ?? 0)}</td></tr>`;
      })}</tbody></table></div>`;

    render(
      body,
      html`${failed.length ? html`<ul class="alert" role="alert">${failed.map((s) => missing(s.name, s.error))}</ul>` : ""}
      ${notes.length ? html`<ul class="compare-notes">${notes}</ul>` : ""}
      ${
        studies.length
          ? html`<div class="panel-head compare-controls"><span class="legend" data-testid="compare-legend">${studies.map(
              (s) => html`<span class="cmp-item" data-study="${s.name}">${key(s)}${s.name}</span>`,
            )}</span>
            <label class="check">x axis <select id="compare-by" data-testid="compare-by"><option value="number">trial number</option><option value="results">results so far</option></select></label></div>
          ${directions.map((d) => {
            const group = studies.filter((s) => s.direction === d);
            const title = directions.length > 1 ? ` (${directionWord(d)})` : "";
            return html`<div class="two" data-testid="compare-group" data-direction="${d}">
              <section class="panel" aria-labelledby="best-title-${d}"><h2 id="best-title-${d}">Best so far${title}</h2>
                <canvas class="chart" role="img" data-testid="compare-best" data-direction="${d}" aria-label="${`Best value so far by trial, ${directionWord(d)}: ${group
                  .map((s) => `${s.name} ${fmt(bestSoFar(s.series.trials, d).best)}`)
                  .join(", ")}`}"></canvas>
                <p class="dim">${d === "maximize" ? "Higher is better." : "Lower is better."} Each line steps at a trial that improved its study's best${
                  group.some((s) => (s.info.constraints?.length ?? 0) > 0) ? " (feasible trials only where a study has constraints)" : ""
                }.</p></section>
              <section class="panel" aria-labelledby="edf-title-${d}"><h2 id="edf-title-${d}">Distribution of values${title}</h2>
                <canvas class="chart" role="img" data-testid="compare-edf" data-direction="${d}" aria-label="${group
                  .filter((s) => s.edf)
                  .map((s) => `${s.name}: ${ariaSummary(s.edf)}`)
                  .join("; ")}"></canvas>
                <p class="dim">${edfCaption(d)}${group.some((s) => (s.info.constraints?.length ?? 0) > 0) ? " (infeasible trials included)" : ""}.</p></section>
            </div>`;
          })}
          <section class="panel" aria-labelledby="compare-table-title"><h2 id="compare-table-title">The studies</h2>${table}</section>`
          : html`<p class="empty">None of these studies could be read.</p>`
      }`,
    );

    const by = body.querySelector("#compare-by");
    const draw = () => {
      for (const d of directions) {
        const group = studies.filter((s) => s.direction === d);
        const bestCanvas = body.querySelector(`[data-testid=compare-best][data-direction=${d}]`);
        const edfCanvas = body.querySelector(`[data-testid=compare-edf][data-direction=${d}]`);
        // a chart that cannot be drawn says so in its place; the rest of the page stays
        try {
          const curves = group.map((s) => ({ ...bestSoFar(s.series.trials, d, by.value), colour: s.colour, dash: s.dash, name: s.name }));
          drawBest(bestCanvas, curves, by.value === "results" ? "results so far (completed trials)" : "trial number");
          bestCanvas.dataset.best = JSON.stringify(Object.fromEntries(curves.map((c) => [c.name, c.best])));
          bestCanvas.dataset.curves = String(curves.filter((c) => c.steps.length).length);
        } catch (error) {
          console.warn("localbo: the best-so-far chart failed", error);
          bestCanvas.dataset.failed = "1";
        }
        try {
          const shown = group.filter((s) => s.edf);
          edfCanvas.hidden = !shown.length;
          if (shown.length) drawEdf(edfCanvas, shown.map((s) => ({ edf: s.edf, colour: s.colour, dash: s.dash })), { direction: d });
          edfCanvas.dataset.curves = String(shown.length);
          edfCanvas.dataset.n = JSON.stringify(Object.fromEntries(shown.map((s) => [s.name, s.edf.n])));
        } catch (error) {
          console.warn("localbo: the distribution chart failed", error);
          edfCanvas.dataset.failed = "1";
        }
      }
    };
    // a colour scheme's change redraws (theme.js sends a resize): the keys take the new colours too
    const redraw = () => {
      studies.forEach((s) => (s.colour = COLORS.lines[s.k % COLORS.lines.length]));
      for (const el of body.querySelectorAll("svg.cmp-key line")) {
        const s = studies.find((t) => t.name === el.closest("[data-study]")?.dataset?.study) ?? null;
        if (s) el.setAttribute("stroke", s.colour);
      }
      draw();
    };
    let frame = 0;
    const onResize = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(redraw);
    };
    by?.addEventListener("change", draw);
    window.addEventListener("resize", onResize);
    draw();
    ready("compare");
    setLive("");
    return () => {
      window.removeEventListener("resize", onResize);
      cancelAnimationFrame(frame);
    };
  },
};
