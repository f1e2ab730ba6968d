// A study's page (#/study/NAME): loads the study, its trials as columns (/series) and its policy view,
// mounts the panels, and keeps them live through the study's event stream.
//
// A panel is a module exporting mount(section, study) -> {render(), unmount?()}: `section` is its own
// element on the page, `study` the shared model below; render() is called on every redraw (at most one
// a frame) and must only read the model. Panels change the model through study.* and then call
// study.rerender().

import { get, subscribe } from "../api.js";
import { html, render } from "../html.js";
import { constraintText, linearText, perParameter } from "../format.js";
import { ready, setLive } from "../shell.js";
import { displayOf } from "../display.js";
import { directionWord, several } from "../objectives.js";
import * as alertPanel from "../panels/alert.js";
import * as livenessPanel from "../panels/liveness.js";
import * as cardsPanel from "../panels/cards.js";
import * as safetyPanel from "../panels/safety.js";
// -- several objectives (issue 31): the front, its hypervolume, the trade-offs ---------------------
import * as frontPanel from "../panels/front.js";
import * as hypervolumePanel from "../panels/hypervolume.js";
import * as tradeoffPanel from "../panels/tradeoff.js";
import * as historyPanel from "../panels/history.js";
import * as constraintsPanel from "../panels/constraints.js";
import * as pathPanel from "../panels/path.js";
import * as policyPanel from "../panels/policy.js";
import * as openPanel from "../panels/open.js";
import * as tablePanel from "../panels/table.js";
import * as metadataPanel from "../panels/metadata.js";
import * as notePanel from "../panels/note.js"; // the study's note (issue 27, item 6)
import { applyNotes, readNotes } from "../notes.js";
import * as timelinePanel from "../panels/timeline.js";
import * as edfPanel from "../panels/edf.js"; // the distribution of values (issue 27, item 11)
// -- analysis panels (owned by the analytics work: slices, surface, importance, parallel) ----------
import * as importancePanel from "../panels/importance.js";
import * as surfacePanel from "../panels/surface.js";
import * as slicesPanel from "../panels/slices.js";
import * as parallelPanel from "../panels/parallel.js";
// -------------------------------------------------------------------------------------------------

// An error boundary per panel: a panel that throws (mounting, drawing, on new trials, on the clock) shows a
// short message in its own section and stops drawing; the rest of the page goes on. Its section says
// data-failed="1" and the message is marked data-testid="panel-error".
export function guarded(id, panel, section, study) {
  let failed = false;
  const fail = (error) => {
    if (failed) return;
    failed = true;
    console.warn(`localbo: the ${id} panel failed`, error);
    if (!section) return;
    section.hidden = false;
    section.dataset.failed = "1";
    const heading = section.querySelector("h2")?.textContent || id.replace(/-panel$/, "").replace(/-/g, " ");
    render(
      section,
      html`<h2>${heading}</h2><p class="panel-error" role="status" data-testid="panel-error">This panel could not be drawn (${
        String(error?.message || error).slice(0, 200)
      }); the rest of the page is unaffected. Reloading the page may help.</p>`,
    );
  };
  let inner = null;
  try {
    inner = panel.mount(section, study);
  } catch (error) {
    fail(error);
  }
  const call = (name) => (...args) => {
    if (failed || !inner?.[name]) return undefined;
    try {
      return inner[name](...args);
    } catch (error) {
      fail(error);
      return undefined;
    }
  };
  return {
    render: call("render"),
    tick: call("tick"),
    onTrials: call("onTrials"),
    unmount: () => {
      try {
        inner?.unmount?.();
      } catch (error) {
        console.warn(`localbo: the ${id} panel failed to unmount`, error);
      }
    },
    fail,
    get failed() {
      return failed;
    },
  };
}

function emptyColumns() {
  return { number: [], state: [], value: [], x: [], source: [], created: [], completed: [], feasible: [], metrics: [], candidate: [], reasons: {} };
}

// trials of an event or the series, by number - 1 (numbers are dense within a study)
export function merge(into, cols, toParams = (x) => x) {
  into.version = (into.version ?? 0) + 1; // panels redraw only what changed since the version they drew
  for (let k = 0; k < cols.number.length; k++) {
    const i = cols.number[k] - 1;
    into.number[i] = cols.number[k];
    into.state[i] = cols.state[k];
    into.value[i] = cols.value[k];
    into.x[i] = toParams(cols.x[k]);
    into.source[i] = cols.source[k];
    into.created[i] = cols.created[k];
    into.completed[i] = cols.completed[k];
    into.feasible[i] = cols.feasible ? cols.feasible[k] : null; // true / false on a study with constraints
    into.metrics[i] = cols.metrics ? cols.metrics[k] : null; // {metric: value} on a study that names its metrics
    if (cols.candidate) into.candidate[i] = cols.candidate[k];
  }
  Object.assign(into.reasons, cols.reasons);
}

// The page's sections, top to bottom; each panel fills its own. The analysis block is where the
// analysis panels go (one <section> each).
function skeleton(name) {
  return html`
  <h1 tabindex="-1">${name}</h1>
  <p class="meta" id="meta"></p>
  <div class="study-note" id="study-note" data-testid="study-note-line" hidden></div>
  <p class="safe-mode" id="safe-mode" data-testid="safe-mode" hidden></p>
  <div id="policy-alert" role="status"></div>
  <section class="liveness" id="liveness" aria-label="Is it alive"></section>
  <div class="cards" id="cards"></div>
  <section class="panel" id="front-panel" aria-labelledby="front-title" hidden></section>
  <div class="two">
    <section class="panel" id="hypervolume-panel" aria-labelledby="hypervolume-title" hidden></section>
    <section class="panel" id="tradeoff-panel" aria-labelledby="tradeoff-title" hidden></section>
  </div>
  <section class="panel" id="history-panel" aria-labelledby="history-title"></section>
  <section class="panel" id="edf-panel" aria-labelledby="edf-title"></section>
  <section class="panel" id="timeline-panel" aria-labelledby="timeline-title"></section>
  <section class="panel" id="constraints-panel" aria-labelledby="constraints-title" hidden></section>
  <div class="two">
    <section class="panel" id="path-panel" hidden></section>
    <section class="panel" id="policy"></section>
  </div>
  <!-- analysis panels: slices, surface, importance, parallel (the analytics work mounts them here) -->
  <div id="analysis">
    <div class="two">
      <section class="panel" id="importance-panel" aria-labelledby="importance-title"></section>
      <section class="panel" id="surface-panel" aria-labelledby="surface-title"></section>
    </div>
    <section class="panel" id="slices-panel" aria-labelledby="slices-title"></section>
    <section class="panel" id="parallel-panel" aria-labelledby="parallel-title"></section>
  </div>
  <!-- end of the analysis panels -->
  <section class="panel" id="open-panel" aria-labelledby="open-title"></section>
  <section class="panel" id="table-panel" aria-labelledby="table-title"></section>
  <section class="panel" id="metadata-panel" aria-labelledby="metadata-title"></section>`;
}

// [element id, panel module]: the order they render in
const PANELS = [
  ["study-note", notePanel],
  ["policy-alert", alertPanel],
  ["liveness", livenessPanel],
  ["safe-mode", safetyPanel],
  ["cards", cardsPanel],
  ["front-panel", frontPanel],
  ["hypervolume-panel", hypervolumePanel],
  ["tradeoff-panel", tradeoffPanel],
  ["history-panel", historyPanel],
  ["edf-panel", edfPanel],
  ["timeline-panel", timelinePanel],
  ["constraints-panel", constraintsPanel],
  ["path-panel", pathPanel],
  ["policy", policyPanel],
  // -- analysis panels ----------------------------------------------------------------------------
  ["importance-panel", importancePanel],
  ["surface-panel", surfacePanel],
  ["slices-panel", slicesPanel],
  ["parallel-panel", parallelPanel],
  // -----------------------------------------------------------------------------------------------
  ["open-panel", openPanel],
  ["table-panel", tablePanel],
  ["metadata-panel", metadataPanel],
];

// Candidate ids of a finite study's trials, when the series does not carry them: read from /trials
// (once, then for new trials only).
async function loadCandidates(study, after, signal) {
  for (;;) {
    const page = await get(`${study.path}/trials?after=${after}&limit=10000`, { signal });
    for (const t of page.trials) study.data.candidate[t.number - 1] = t.candidate;
    study.data.version = (study.data.version ?? 0) + 1;
    if (page.next_after === null || page.next_after === undefined) return;
    after = page.next_after;
  }
}

export const studyView = {
  title: (p) => p.name,
  crumbs: (p) => html`<a href="#/">studies</a> / ${p.name}`,
  async mount(root, { name, query }, signal) {
    render(root, skeleton(name));
    const path = `studies/${encodeURIComponent(name)}`;
    // the three reads at once; a policy that cannot be read is shown as such, not a failed page
    const readPolicy = () =>
      get(`${path}/policy`, { signal }).catch((error) => (signal.aborted ? null : { error: String(error.message || error) }));
    const firstPolicy = readPolicy();
    const reading = get(path, { signal });
    // several objectives: the front (GET .../pareto) once the study says so; a single-objective study never asks
    // for it (a 409 there), and no study page asks for /best (a 409 on several objectives)
    const readPareto = () =>
      get(`${path}/pareto`, { signal }).then(
        (pareto) => ({ pareto }),
        (error) => ({ error: signal.aborted ? null : String(error.message || error) }),
      );
    const firstPareto = reading.then((i) => (several(i) ? readPareto() : null), () => null);
    const firstNotes = readNotes(path, signal); // the study's and its trials' notes (null: shown without them)
    const [info, series] = await Promise.all([reading, get(`${path}/series`, { signal })]);
    const names = Object.keys(series.space);
    const specs = names.map((n) => series.space[n]);
    const toParams = perParameter(specs);
    const data = emptyColumns();
    merge(data, series.trials, toParams);
    const study = {
      name,
      path,
      info, // GET /studies/NAME: summary (liveness), last_policy_error, space (finite: its summary)
      direction: series.direction,
      constrained: (info.constraints?.length ?? 0) > 0, // outcome constraints: trials are feasible or not
      constraints: info.constraints ?? [], // [{metric, op, bound}]
      several: several(info), // 2 to 4 objectives: a Pareto front, a hypervolume, no single best
      objectives: info.objectives ?? [], // [{metric, direction}]
      pareto: null, // several objectives: GET .../pareto (the front's trials, hypervolume, reference point, history)
      paretoError: null, // why the last read of it failed
      policyName: series.policy,
      names,
      specs,
      toParams,
      finite: info.space?.kind === "finite",
      data,
      policy: null, // GET .../policy
      display: null, // its display block, checked (display.js)
      view: { log: false }, // panels' own settings
      openTrials: null, // the open trials with their leases (panels/open.js reads them)
      brushed: null, // (i) => boolean: a selection (brushing) that filters the table and highlights the history
      query: query ?? "", // the page's URL query: the table's filters (filters.js)
      note: info.note ?? null, // the study's note; notes: {trial number: note}; notesVersion: as the stream says
      notes: {},
      notesVersion: null,
      canWrite: false, // whether this viewer's token may write notes (panels/note.js asks)
      signal,
      asOf: Date.parse(series.as_of),
      rerender: () => {},
    };
    let last = series.last;
    let since = series.as_of;

    const meta = root.querySelector("#meta");
    const objective = info.objectives?.[0]?.metric;
    const goal = study.several
      ? `${study.objectives.map((o) => `${directionWord(o.direction)} ${o.metric}`).join(", ")} (a Pareto front)`
      : objective ? `${series.direction} ${objective}` : series.direction;
    const linear = info.parameter_constraints?.length ? ` · within ${info.parameter_constraints.map(linearText).join("; ")}` : "";
    meta.textContent = `policy ${series.policy} · ${goal}${
      study.constrained ? ` subject to ${info.constraints.map(constraintText).join(", ")}` : ""
    } · ${names.length} parameters (${names.join(", ")})${linear}${info.failures === "avoid" ? " · failures avoided (the policy steers away from where trials failed)" : ""}${
      study.finite ? ` · ${info.space.candidates} candidates` : ""
    }`;

    // each panel behind its own error boundary (guarded): one panel's failure never takes the page
    const panels = PANELS.map(([id, panel]) => guarded(id, panel, root.querySelector(`#${id}`), study));
    study.panelFailed = (id, error) => panels[PANELS.findIndex(([k]) => k === id)]?.fail(error); // async work of a panel

    let stopped = false;
    let frame = 0;
    let lastEnd = 0;
    let cost = 0;
    const draw = () => {
      frame = 0;
      if (stopped) return;
      const started = performance.now();
      // each panel's share of the redraw, for the benchmark (benchmarks/dashboard.py reads the slowest)
      const spent = {};
      for (const [k, panel] of panels.entries()) {
        const t = performance.now();
        panel.render();
        spent[PANELS[k][0]] = performance.now() - t;
      }
      lastEnd = performance.now();
      cost = lastEnd - started;
      document.body.dataset.renderMs = cost.toFixed(1);
      document.body.dataset.panelMs = JSON.stringify(spent, (_, v) => (typeof v === "number" ? +v.toFixed(1) : v));
    };
    // at most one redraw per frame, and on big studies a pause of a few redraw times between them,
    // so a stream of tells never keeps the page busy
    study.rerender = () => {
      if (frame || stopped) return;
      const wait = Math.max(0, lastEnd + 4 * cost - performance.now());
      frame = setTimeout(() => requestAnimationFrame(draw), wait);
    };

    const loadPolicy = async (redraw = true, reading = readPolicy()) => {
      const policy = await reading;
      if (!policy) return;
      study.policy = policy;
      study.display = displayOf(study.policy?.display, specs, toParams);
      if (redraw) study.rerender();
    };
    const loadPareto = async (reading = readPareto()) => {
      const read = await reading;
      if (!read || signal.aborted) return;
      if (read.pareto) [study.pareto, study.paretoError] = [read.pareto, null];
      else study.paretoError = read.error;
      study.rerender();
    };
    const loadInfo = async () => {
      try {
        study.info = await get(path, { signal });
        study.rerender();
      } catch {
        // the stream says when the study is gone; the last summary stays on screen
      }
    };

    const needCandidates = study.finite && !series.trials.candidate;
    await Promise.all([
      loadPolicy(false, firstPolicy),
      study.several ? loadPareto(firstPareto) : null,
      needCandidates ? loadCandidates(study, 0, signal) : null,
      firstNotes.then((read) => applyNotes(study, read)),
    ]);
    draw();

    let infoTimer = 0;
    const unsubscribe = subscribe(
      `${path}/events`,
      () => ({ after: String(last), since }),
      (event, payload) => {
        if (event === "trials") {
          const before = last;
          merge(data, payload, toParams);
          for (const n of payload.number) if (n > last) last = n;
          since = payload.as_of; // the server's clock: a reconnect resends what finished after it
          study.asOf = Date.parse(payload.as_of) || study.asOf;
          if (needCandidates && last > before) loadCandidates(study, before, signal).then(study.rerender, () => {});
          for (const panel of panels) panel.onTrials?.(payload);
          // the summary (liveness) follows the trials, at most every 2 s
          infoTimer ||= setTimeout(() => {
            infoTimer = 0;
            loadInfo();
            if (study.several) loadPareto();
          }, 2000);
          study.rerender();
        } else if (event === "study") {
          if (payload.policy_state_version !== study.policy?.policy_state_version) loadPolicy();
          else if ((payload.last_policy_error ?? null) !== (study.policy?.last_policy_error ?? null)) loadPolicy();
          if (payload.notes_version !== undefined && payload.notes_version !== study.notesVersion) {
            readNotes(path, signal).then((read) => {
              applyNotes(study, read);
              study.rerender();
            });
          }
        }
      },
      setLive,
      signal,
    );
    // ages and lease clocks move on their own: the panels that show them redraw (panel.tick)
    const ageing = setInterval(() => !stopped && panels.forEach((p) => p.tick?.()), 10000);
    window.addEventListener("resize", study.rerender);
    ready("study");
    return () => {
      stopped = true;
      unsubscribe();
      clearInterval(ageing);
      clearTimeout(infoTimer);
      clearTimeout(frame);
      window.removeEventListener("resize", study.rerender);
      for (const panel of panels) panel.unmount?.();
      setLive("");
    };
  },
};
