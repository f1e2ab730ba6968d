// At the top of the study page: what is wrong, in seconds. One line each, only when it holds:
//   stopped    no result for several times the study's own usual gap between results (liveness.js: stall)
//   lease      trials past their lease: `stale` ones, and `running` ones whose lease has run out (the open
//              trials panel reads the leases and puts them in study.openTrials)
//   policy     the policy's last computation failed; fallback points were handed out (last_policy_error)
//   fallback   how many trials were fallback points (sources "fallback" and "fallback-safe"), and of how many
// The lines are marked with data-testid trouble-stall, trouble-lease, policy-error and trouble-fallback.

import { html, renderChanged } from "../html.js";
import { FALLBACKS } from "../charts.js";
import { duration, toMs } from "../format.js";
import { STALL_FACTOR, STALL_FLOOR_S, liveness, resultTimes, stall, typicalGap } from "../liveness.js";

// past its lease: `stale`, or `running` with a lease that has run out
export function expiredTrials(study, now = Date.now()) {
  const out = new Set();
  for (let i = 0; i < study.data.state.length; i++) if (study.data.state[i] === "stale") out.add(i + 1);
  for (const t of study.openTrials ?? []) {
    const lease = toMs(t.lease_expires_at);
    if (t.state === "stale" || (t.state === "running" && lease !== null && lease <= now)) out.add(t.number);
  }
  return out;
}

// the study's cadence verdict from the page's trials (liveness.js' rule)
export function studyStall(study, now = Date.now()) {
  const live = liveness(study.info?.summary, study.data, { direction: study.direction, now });
  const last = toMs(live.lastResultAt);
  const times = resultTimes(study.data);
  return { ...stall(last, typicalGap(times), now, `the median gap between its last ${Math.min(times.length, 50)} results`), results: times.length };
}

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function mount(el, study) {
  el.addEventListener("click", (event) => {
    const to = event.target.closest("[data-scroll]");
    if (!to) return;
    const target = document.getElementById(to.dataset.scroll);
    target?.scrollIntoView({ block: "start" });
    target?.querySelector("h2")?.setAttribute("tabindex", "-1");
    target?.querySelector("h2")?.focus({ preventScroll: true });
  });
  const draw = () => {
    const now = Date.now();
    const { data } = study;
    const items = [];
    let trials = 0;
    let open = 0;
    let fallbacks = 0;
    let safe = 0;
    for (let i = 0; i < data.state.length; i++) {
      const s = data.state[i];
      if (!s) continue;
      trials++;
      if (s === "running" || s === "stale") open++;
      if (FALLBACKS.has(data.source[i])) {
        fallbacks++;
        if (data.source[i] === "fallback-safe") safe++;
      }
    }
    const stopped = studyStall(study, now);
    if (stopped.stopped) {
      items.push(html`<li class="trouble-item bad" data-testid="trouble-stall"><b>Stopped?</b> No result for ${duration(stopped.silenceS)}:
        ${stopped.gapS * STALL_FACTOR >= STALL_FLOOR_S ? `${String(Math.floor(stopped.silenceS / stopped.gapS))}× its usual gap of ${duration(stopped.gapS)}` : `its usual gap is ${duration(stopped.gapS)}`} (${stopped.basis}; the rule: no result for
        ${String(STALL_FACTOR)}× the usual gap and at least ${duration(STALL_FLOOR_S)}).
        ${open ? `${plural(open, "trial is", "trials are")} still out.` : "No trial is out: the workers stopped asking, or the study is done."}</li>`);
    }
    const expired = expiredTrials(study, now);
    if (expired.size) {
      const staleCount = [...expired].filter((n) => data.state[n - 1] === "stale").length;
      const late = expired.size - staleCount;
      const words = [staleCount && `${staleCount} stale (their points are offered again)`, late && `${late} still running past it`].filter(Boolean).join(", ");
      items.push(html`<li class="trouble-item bad" data-testid="trouble-lease"><b>${plural(expired.size, "trial", "trials")} past ${expired.size === 1 ? "its" : "their"} lease</b>
        (${words}): the rig that asked may have stopped. <button type="button" class="link" data-scroll="open-panel">see the open trials</button></li>`);
    }
    const error = study.policy?.last_policy_error ?? study.info?.last_policy_error ?? null;
    if (error) {
      const plain = fallbacks - safe;
      items.push(html`<li class="trouble-item bad alert-line" data-testid="policy-error"><b>The policy's last computation failed; fallback
        points were handed out</b> (${safe ? `${plain} fallback and ${safe} safe fallback trials (the safest known point asked again)` : `${plain} fallback trials`} so far). Last error: <code class="wrap">${error}</code></li>`);
    }
    const summaryCount = study.info?.summary?.n_fallback ?? 0;
    const count = Math.max(fallbacks, summaryCount);
    if (count) {
      items.push(html`<li class="trouble-item warn" data-testid="trouble-fallback"><b>${String(count)} of ${plural(Math.max(trials, count), "trial", "trials")}
        ${count === 1 ? "was a fallback point" : "were fallback points"}</b>: the policy failed or was late, so ${
          safe ? "the safest known point was asked again or a random point went out" : "a random point went out"
        } instead of the policy's choice. They are ringed in the values chart and badged in the table.</li>`);
    }
    const markup = items.length ? html`<ul class="trouble" data-testid="trouble">${items}</ul>` : html``;
    if (!renderChanged(el, markup)) return;
    el.dataset.trouble = items.length ? String(items.length) : "";
  };
  return { render: draw, tick: draw };
}
