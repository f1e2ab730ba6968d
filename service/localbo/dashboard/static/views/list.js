// The studies list (#/): every study the token may read, live through /events, with whether each is
// alive: its last result, trials since its best, results per hour, open and stale trials. A study with
// several objectives shows its objectives instead of a direction and its hypervolume and front size instead
// of a best value (it has none).

import { get, subscribe } from "../api.js";
import { html, render, renderChanged } from "../html.js";
import { ago, dateTime, duration, fmt } from "../format.js";
import { STALL_FACTOR, liveness, summaryStall } from "../liveness.js";
import { directionWord, objectiveLabel, several } from "../objectives.js";
import { ready, setLive } from "../shell.js";
import { MAX_COMPARED, compareHref } from "./compare.js";

// the studies ticked for comparison (kept while the page is open: back from a comparison, they stay ticked)
const chosen = new Set();

function studyRow(s) {
  const m = s.summary;
  const live = liveness(m);
  const state = m.n_running > 0 ? "running" : "idle";
  const trouble = (m.n_fallback ?? 0) > 0 || (m.n_stale ?? 0) > 0 || (m.n_lease_expired ?? 0) > 0 || Boolean(s.last_policy_error);
  const extra = [m.n_running && `${m.n_running} running`, m.n_failed && `${m.n_failed} failed`].filter(Boolean).join(", ");
  const finite = s.space?.kind === "finite";
  const lastResult = live.lastResultAt ?? null;
  // stopped relative to its own cadence (liveness.js' rule: no result for 5x its usual gap, at least 2 min)
  const stop = summaryStall(s);
  const quiet = stop.stopped;
  const fallbacks = m.n_fallback ?? 0;
  return html`<tr data-study="${s.name}" data-trouble="${quiet || trouble ? "1" : "0"}">
    <td class="pick"><input type="checkbox" data-pick="${s.name}" aria-label="compare ${s.name}"${chosen.has(s.name) ? " checked" : ""}></td>
    <td><a href="#/study/${encodeURIComponent(s.name)}">${s.name}</a></td>
    <td>${s.policy}</td>
    <td>${several(s) ? html`<span title="${s.objectives.map(objectiveLabel).join(", ")}">${s.objectives.length} objectives</span>` : s.direction}</td>
    <td class="num">${String(m.n_complete)}${extra ? html` <span class="dim">(${extra})</span>` : ""}</td>
    <td class="num">${several(s) ? frontCell(s) : fmt(m.best_value)}</td>
    <td><span class="badge ${state}">${state}</span>${
      quiet
        ? html` <span class="badge stopped" data-testid="stopped" title="no result for ${duration(stop.silenceS)}: more than ${String(STALL_FACTOR)}× its usual gap of ${duration(stop.gapS)} (${stop.basis})">stopped ${duration(stop.silenceS)}</span>`
        : ""
    }${m.n_stale ? html` <span class="badge stale" data-testid="stale-count" title="trials past their lease">${m.n_stale} stale</span>` : ""}${
      m.n_lease_expired ? html` <span class="badge stale" data-testid="lease-count" title="running trials past their lease">${m.n_lease_expired} past lease</span>` : ""
    }${
      fallbacks
        ? html` <span class="badge source-fallback" data-testid="fallback-count" title="trials handed out as fallback points (the policy failed or was late)">${fallbacks} fallback</span>`
        : ""
    }${
      s.last_policy_error
        ? html` <a class="badge error" data-testid="policy-fell-back" href="#/study/${encodeURIComponent(s.name)}" title="${s.last_policy_error}">policy fell back</a>`
        : ""
    }</td>
    <td title="${dateTime(lastResult)}" data-testid="last-result" class="${quiet ? "quiet" : ""}">${lastResult === null ? "none yet" : ago(lastResult)}</td>
    <td class="num" data-testid="since-improvement">${live.sinceImprovement === null ? "–" : String(live.sinceImprovement)}</td>
    <td class="num" data-testid="per-hour">${live.perHour === null ? "–" : fmt(live.perHour)}</td>
    <td class="num">${finite ? (live.candidatesRemaining === null ? `of ${s.space.candidates}` : `${live.candidatesRemaining} of ${s.space.candidates}`) : ""}</td>
    <td title="${dateTime(m.last_activity)}">${ago(m.last_activity)}</td>
  </tr>`;
}

// several objectives: the hypervolume and how many trials are on the front
function frontCell(s) {
  const m = s.summary;
  const ways = s.objectives.map((o) => `${directionWord(o.direction)} ${o.metric}`).join(", ");
  return html`<span data-testid="list-hypervolume" title="hypervolume (${ways})">${fmt(m.hypervolume)}</span> <span class="dim">hypervolume,
    <span data-testid="list-front">${m.pareto_size ?? 0}</span> on the front</span>`;
}

export const listView = {
  title: () => "studies",
  crumbs: () => html`studies`,
  async mount(root, _params, signal) {
    render(
      root,
      html`<h1 tabindex="-1">Studies</h1><p class="dim" id="list-note"></p>
        <div class="compare-bar" id="compare-bar" hidden><button type="button" id="compare-button" data-testid="compare-button">Compare</button>
          <span id="compare-status" data-testid="compare-status" role="status">Tick 2 to ${String(MAX_COMPARED)} studies to compare them.</span></div>
        <div id="studies"></div>`,
    );
    const list = root.querySelector("#studies");
    const bar = root.querySelector("#compare-bar");
    const status = root.querySelector("#compare-status");
    const say = (text) => (status.textContent = text);
    const counted = () => `${chosen.size} of at most ${MAX_COMPARED} ticked${chosen.size < 2 ? ": tick at least 2 to compare" : ""}.`;
    // at most MAX_COMPARED: a fifth tick is undone and the status says why
    list.addEventListener("change", (event) => {
      const box = event.target.closest?.("input[data-pick]");
      if (!box) return;
      const name = box.dataset.pick;
      if (box.checked && !chosen.has(name) && chosen.size >= MAX_COMPARED) {
        box.checked = false;
        say(`At most ${MAX_COMPARED} studies can be compared at once: untick one of ${[...chosen].join(", ")} first.`);
        return;
      }
      if (box.checked) chosen.add(name);
      else chosen.delete(name);
      say(counted());
    });
    root.querySelector("#compare-button").addEventListener("click", () => {
      if (chosen.size < 2) return say(`Tick at least 2 studies to compare (at most ${MAX_COMPARED}).`);
      window.location.hash = compareHref([...chosen]);
    });
    const show = (studies) => {
      const names = new Set(studies.map((s) => s.name));
      const before = chosen.size;
      for (const name of chosen) if (!names.has(name)) chosen.delete(name); // deleted since
      bar.hidden = studies.length < 2;
      // redrawing the rows keeps a focused tick box focused
      const focused = document.activeElement?.dataset?.pick ?? null;
      const drew = renderChanged(
        list,
        studies.length
          ? html`<div class="scroll"><table class="grid" data-testid="studies"><thead><tr><th scope="col" title="tick 2 to ${String(MAX_COMPARED)} studies, then Compare">compare</th><th scope="col">name</th><th scope="col">policy</th><th scope="col">direction</th>
             <th scope="col" class="num">trials</th><th scope="col" class="num" title="a study with several objectives: its hypervolume and front">best value</th><th scope="col">state</th><th scope="col">last result</th>
             <th scope="col" class="num" title="completed trials since the best one">since best</th><th scope="col" class="num" title="completed and failed trials in the last hour">results in the last hour</th>
             <th scope="col" class="num">candidates left</th><th scope="col">last activity</th></tr></thead>
             <tbody>${studies.map(studyRow)}</tbody></table></div>`
          : html`<p>No studies yet. Create one with the Python client or <code>POST /api/v1/studies</code>.</p>`,
      );
      root.querySelector("#list-note").textContent = `${studies.length} studies`;
      if (drew && focused !== null) [...list.querySelectorAll("input[data-pick]")].find((b) => b.dataset.pick === focused)?.focus();
      if (chosen.size < before) say(counted());
    };
    let current = (await get("studies", { signal })).studies;
    show(current);
    // the stream sends the list again whenever a summary changes; the times age locally
    const unsubscribe = subscribe("events", () => ({}), (event, payload) => event === "studies" && show((current = payload.studies)), setLive, signal);
    const ageing = setInterval(() => show(current), 10000);
    ready("list");
    return () => {
      unsubscribe();
      clearInterval(ageing);
      setLive("");
    };
  },
};
