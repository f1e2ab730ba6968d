// One trial's page (#/study/NAME/trial/N): parameters in user units, value, state, failure reason,
// source, client id, times, lease and candidate id; on a study that names its metrics, every metric told
// (the objective's direction, each constraint's bound and whether the value met it) and whether it was feasible.
// On a study with several objectives: every objective's value at the top, and whether the trial is on the
// Pareto front (GET .../pareto; never asked of a single-objective study, which has no front to draw). Its note (issue 27,
// item 6) under its state, with an editor when the viewer's token may write (GET .../access).

import { HttpError, get, subscribe } from "../api.js";
import { html, renderChanged } from "../html.js";
import { dateTime, exact, fmt, meets, opText, relative, toMs } from "../format.js";
import { ready, setLive } from "../shell.js";
import { directionWord, several } from "../objectives.js";
import { sourceBadge } from "../source.js";
import { NO_CLIENT } from "../lanes.js";
import { attrsTable } from "../attrs.js";
import { mayWrite, noteForm, noteText, saveTrialNote, wireNoteForm } from "../notes.js";

// a number in full precision, selected whole by one click or tap (then copied: Ctrl+C, or the menu)
const precise = (v) => html`<span class="exact" title="full precision; a click selects it to copy">${exact(v)}</span>`;

// GET .../trials/N; a server without that route answers the same TrialOut through the list
async function loadTrial(path, number, signal) {
  try {
    return await get(`${path}/trials/${number}`, { signal });
  } catch (error) {
    if (!(error instanceof HttpError) || (error.status !== 404 && error.status !== 405)) throw error;
    const page = await get(`${path}/trials?after=${number - 1}&limit=1`, { signal });
    const trial = page.trials.find((t) => t.number === number);
    if (!trial) throw new HttpError(404, `trial ${number} not found`);
    return trial;
  }
}

// The metrics table's rows: the objectives, then the outcome constraints, then any other metric told
function metricRows(t, study) {
  const values = t.values ?? {};
  const objectives = study?.objectives ?? [];
  const constraints = study?.constraints ?? [];
  const named = new Set([...objectives, ...constraints].map((m) => m.metric));
  const value = (metric) => (metric in values ? precise(values[metric]) : "–");
  const bounds = constraints.length > 0; // a study without outcome constraints has no bound columns
  const row = (metric, role, bound, status) =>
    html`<tr data-testid="metric" data-metric="${metric}"><td>${metric}</td><td class="num" data-testid="metric-value">${value(metric)}</td><td>${role}</td>${
      bounds ? html`<td class="num" data-testid="metric-bound">${bound}</td><td data-testid="metric-status">${status}</td>` : ""
    }</tr>`;
  return [
    ...objectives.map((o, k) =>
      row(o.metric, objectives.length > 1 ? `objective ${k + 1} of ${objectives.length} (${directionWord(o.direction)})` : `objective (${directionWord(o.direction)})`, "", ""),
    ),
    ...constraints.map((c) => {
      const met = meets(c, values[c.metric]);
      const status = met === null ? "" : html`<span class="badge ${met ? "feasible" : "infeasible"}">${met ? "met" : "violated"}</span>`;
      return row(c.metric, "constraint", `${opText(c.op)} ${fmt(c.bound)}`, status);
    }),
    ...Object.keys(values)
      .filter((m) => !named.has(m))
      .map((m) => row(m, "", "", "")),
  ];
}

// several objectives: each one's value and direction, and whether the trial is on the front
function objectivesRow(t, study, front, row) {
  const values = t.values ?? {};
  const rows = study.objectives.map(
    (o) => html`<div data-testid="trial-objective" data-metric="${o.metric}">${o.metric} = <b>${precise(values[o.metric])}</b> <span class="dim">(${directionWord(o.direction)})</span></div>`,
  );
  const place =
    t.state !== "complete" || !front
      ? null
      : front.has(t.number)
        ? html`<span class="badge front">on the front</span>`
        : t.feasible === false
          ? html`<span class="badge infeasible">off the front: infeasible</span>`
          : html`<span class="badge">dominated</span>`;
  return html`${row("objectives", rows, "trial-objectives")}${place ? row("Pareto front", place, "trial-front") : ""}`;
}

export const trialView = {
  title: (p) => `${p.name} #${p.number}`,
  crumbs: (p) => html`<a href="#/">studies</a> / <a href="#/study/${encodeURIComponent(p.name)}">${p.name}</a> / trial ${p.number}`,
  async mount(root, { name, number }, signal) {
    setLive("");
    const path = `studies/${encodeURIComponent(name)}`;
    let front = null; // several objectives: the front's trial numbers (a Set), once read
    let canWrite = false; // whether this viewer's token may write the note
    let editing = false; // the note's editor is open: redraws wait for it to close (its text is kept)
    const noteRow = (t, row) => {
      if (editing) return row("note", noteForm({ id: "trial-note-input", label: `Note on trial ${t.number}`, value: t.note, testid: "trial-note-form" }), "trial-note");
      const text = t.note ? noteText(t.note, "trial-note-text") : html`<span class="dim">none</span>`;
      const edit = canWrite ? html` <button type="button" class="link" data-edit-note>${t.note ? "edit note" : "add a note"}</button>` : "";
      return row("note", html`${text}${edit}`, "trial-note");
    };
    const draw = (t, force = false) => {
      if (editing && !force) return;
      const studyLink = `#/study/${encodeURIComponent(name)}`;
      const expired = t.state === "stale" || (t.state === "running" && toMs(t.lease_expires_at) !== null && toMs(t.lease_expires_at) <= Date.now());
      const row = (label, value, id) => html`<tr><th scope="row">${label}</th><td data-testid="${id}">${value}</td></tr>`;
      const params = Object.entries(t.params ?? {});
      const objective = study?.objectives?.[0]?.metric;
      const hasMetrics = t.values || study?.objectives || study?.constraints?.length;
      const feasible =
        t.feasible === true || t.feasible === false
          ? html`<span class="badge ${t.feasible ? "feasible" : "infeasible"}">${t.feasible ? "feasible" : "infeasible"}</span>`
          : null;
      // the ageing timer and the stream redraw an open trial: with nothing new on it, its nodes (and the viewer's
      // click or selection on them) stay, and so do the listeners wired below
      const drew = renderChanged(
        root,
        html`<h1 tabindex="-1">Trial ${t.number} of ${name}</h1>
        <p class="meta"><a href="${studyLink}">back to the study</a>${
          t.number > 1 ? html` · <a href="${studyLink}/trial/${t.number - 1}">‹ trial ${t.number - 1}</a>` : ""
        } · <a href="${studyLink}/trial/${t.number + 1}">trial ${t.number + 1} ›</a></p>
        <div class="two">
          <section class="panel" aria-labelledby="trial-facts"><h2 id="trial-facts">The trial</h2>
            <div class="scroll"><table class="kv" data-testid="trial">
            ${row("state", html`<span class="badge ${expired ? "stale" : t.state}">${t.state}${expired && t.state === "running" ? " (lease expired)" : ""}</span>`, "trial-state")}
            ${several(study) ? objectivesRow(t, study, front, row) : row(objective ? `value (${objective})` : "value", precise(t.value), "trial-value")}
            ${noteRow(t, row)}
            ${feasible ? row("feasibility", feasible, "trial-feasible") : ""}
            ${t.reason ? row("failure reason", html`<div class="reason-full">${t.reason}</div>`, "trial-reason") : ""}
            ${t.candidate !== null && t.candidate !== undefined ? row("candidate", t.candidate, "trial-candidate") : ""}
            ${row("source", sourceBadge(t.source), "trial-source")}
            ${row("client", t.client_id ?? NO_CLIENT, "trial-client")}
            ${row("asked", dateTime(t.created_at), "trial-created")}
            ${row("finished", t.completed_at ? dateTime(t.completed_at) : "not yet", "trial-completed")}
            ${row("lease", t.lease_expires_at ? html`${dateTime(t.lease_expires_at)} <span class="dim">(${relative(t.lease_expires_at)})</span>` : "–", "trial-lease")}
            </table></div>
          </section>
          <section class="panel" aria-labelledby="trial-params"><h2 id="trial-params">Parameters</h2>
            <div class="scroll"><table class="grid compact" data-testid="trial-params"><thead><tr><th scope="col">parameter</th><th scope="col" class="num">value</th></tr></thead>
            <tbody>${params.map(([k, v]) => html`<tr><td>${k}</td><td class="num">${precise(v)}</td></tr>`)}</tbody></table></div>
          </section>
        </div>${
          hasMetrics
            ? html`<section class="panel" aria-labelledby="trial-metrics-title"><h2 id="trial-metrics-title">Metrics</h2>
          <div class="scroll"><table class="grid compact" data-testid="trial-metrics"><thead><tr><th scope="col">metric</th><th scope="col" class="num">value</th><th scope="col">role</th>${
            study?.constraints?.length ? html`<th scope="col" class="num">bound</th><th scope="col">bound met</th>` : ""
          }</tr></thead>
          <tbody>${metricRows(t, study)}</tbody></table></div>
          ${t.values ? "" : html`<p class="dim" data-testid="metrics-none">${t.state === "failed" ? "A failed trial carries no metrics." : "No metrics told yet."}</p>`}
        </section>`
            : ""
        }
        <section class="panel" aria-labelledby="trial-attrs-title"><h2 id="trial-attrs-title">Attributes</h2>
          <p class="dim">Everything the API holds for this trial (GET …/trials/${t.number}), as it sent it.</p>
          <div class="scroll">${attrsTable(t, { testid: "trial-attrs" })}</div>
        </section>`,
        { always: force },
      );
      if (!drew) return;
      const form = root.querySelector("[data-testid=trial-note-form]");
      if (form) {
        wireNoteForm(form, {
          async save(text) {
            trial = await saveTrialNote(path, t.number, text);
          },
          done() {
            editing = false;
            draw(trial, true);
            root.querySelector("[data-edit-note]")?.focus();
          },
        });
      }
      root.querySelector("[data-edit-note]")?.addEventListener("click", () => {
        editing = true;
        draw(trial, true);
      });
    };
    // the study names the metrics, the objective's direction and the constraints' bounds; a trial page
    // shows without them when the study cannot be read
    const [first, study, write] = await Promise.all([
      loadTrial(path, number, signal),
      get(path, { signal }).catch(() => null),
      mayWrite(path, signal),
    ]);
    canWrite = write;
    let trial = first;
    const readFront = async () => {
      if (!several(study)) return;
      try {
        front = new Set((await get(`${path}/pareto`, { signal })).trials.map((p) => p.number));
      } catch {
        front = null; // the trial shows without it
      }
    };
    await readFront();
    draw(trial, true);
    ready("trial");
    // an open trial changes: its state, value and lease come live; the lease's clock ages on screen; a note
    // written elsewhere shows when the study's notes_version moves
    const open = () => trial.state === "running" || trial.state === "stale";
    let notesVersion = null;
    const unsubscribe = subscribe(
      `${path}/events`,
      () => ({ after: String(number) }),
      async (event, payload) => {
        if (event === "study") {
          const moved = notesVersion !== null && payload.notes_version !== notesVersion;
          notesVersion = payload.notes_version;
          if (!moved) return;
        } else if (event !== "trials" || !payload.number.includes(number)) return;
        try {
          trial = await loadTrial(path, number, signal);
          await readFront();
          draw(trial);
        } catch {
          // the next event tries again
        }
      },
      setLive,
      signal,
    );
    const ageing = setInterval(() => open() && draw(trial), 10000);
    return () => {
      unsubscribe();
      clearInterval(ageing);
      setLive("");
    };
  },
};
