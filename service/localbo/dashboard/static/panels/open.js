// Every open trial (running, and stale: its lease ran out, its point is offered again): who asked for it
// (client_id), its age, when its lease expires; stale ones and those whose lease has run out highlighted.

import { get } from "../api.js";
import { html, render, renderChanged } from "../html.js";
import { ago, dateTime, relative, toMs } from "../format.js";

const LIMIT = 200;
const REFRESH_MS = 30000;

export function mount(el, study) {
  let trials = null;
  let error = null;
  let pending = 0;
  let fetchedAt = 0;

  const load = async () => {
    pending = 0;
    try {
      const [running, stale] = await Promise.all(
        ["running", "stale"].map((state) => get(`${study.path}/trials?state=${state}&limit=${LIMIT}`, { signal: study.signal })),
      );
      trials = [...running.trials, ...stale.trials].sort((a, b) => a.number - b.number);
      study.openTrials = trials; // their leases: the banner at the top and the history's stale lane read them
      study.rerender();
      error = null;
    } catch (e) {
      if (study.signal.aborted) return;
      error = String(e.message || e);
    }
    fetchedAt = Date.now();
    try {
      draw();
    } catch (e) {
      study.panelFailed?.("open-panel", e); // drawn after a request: outside the page's boundary call
    }
  };

  const draw = () => {
    if (trials === null && !error) return render(el, html`<h2 id="open-title">Open trials</h2><p class="dim">loading…</p>`);
    const now = Date.now();
    const expired = (t) => t.state === "stale" || (toMs(t.lease_expires_at) !== null && toMs(t.lease_expires_at) <= now);
    const nStale = (trials ?? []).filter(expired).length;
    const link = (n) => `#/study/${encodeURIComponent(study.name)}/trial/${n}`;
    const rows = (trials ?? []).map((t) => {
      const late = expired(t);
      const lease = t.state === "stale" ? "ran out; its point is offered again" : t.lease_expires_at ? (late ? `expired ${relative(t.lease_expires_at, now)}` : `expires ${relative(t.lease_expires_at, now)}`) : "–";
      return html`<tr class="${late ? "is-stale" : ""}" data-stale="${late ? "1" : "0"}">
        <td class="num"><a href="${link(t.number)}">${t.number}</a></td>
        <td><span class="badge ${late ? "stale" : "running"}">${late ? (t.state === "stale" ? "stale" : "lease expired") : "running"}</span></td>
        <td>${t.client_id ?? html`<span class="dim">unknown</span>`}</td>
        <td title="${dateTime(t.created_at)}">${ago(t.created_at, now).replace(" ago", "")}</td>
        <td title="${dateTime(t.lease_expires_at)}">${lease}</td>
        ${study.finite ? html`<td>${t.candidate ?? ""}</td>` : ""}
      </tr>`;
    });
    const count = trials?.length ?? 0;
    // the 10 s tick redraws it for the ages: with none moved, its links stay under the pointer
    renderChanged(
      el,
      html`<div class="panel-head"><h2 id="open-title">Open trials</h2>
        <span class="dim" data-testid="open-count">${count} open${count >= LIMIT ? ` (the first ${LIMIT} of each state)` : ""}${
          nStale ? html` · <b class="stale-note">${nStale} stale or past their lease</b>` : ""
        }</span></div>
      ${error ? html`<p class="alert" role="alert">Could not read the open trials: ${error}</p>` : ""}
      ${
        count
          ? html`<div class="scroll"><table class="grid" data-testid="open-trials"><thead><tr><th scope="col" class="num">#</th><th scope="col">state</th>
              <th scope="col">client</th><th scope="col">age</th><th scope="col">lease</th>${study.finite ? html`<th scope="col">candidate</th>` : ""}</tr></thead>
              <tbody>${rows}</tbody></table></div>`
          : html`<p class="dim">No trial is running.</p>`
      }`,
    );
  };

  load();
  return {
    render() {}, // drawn when its own data arrive
    tick() {
      if (Date.now() - fetchedAt > REFRESH_MS) load();
      else draw();
    },
    onTrials() {
      pending ||= setTimeout(load, 1000); // a burst of tells: one read
    },
    unmount() {
      clearTimeout(pending);
    },
  };
}
