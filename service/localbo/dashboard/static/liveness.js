// Is a study alive, is it stuck: from the server's summary when it has the field, otherwise from the
// trials the page holds (the study page) — the same definitions either way:
//   last_result_at            when a trial last completed or failed
//   trials_since_improvement  completed trials numbered after the best one (the first to reach the best value)
//   results_per_hour          completed and failed trials in the last hour
//   candidates_remaining      finite studies: candidates no trial holds yet (null when repeats are allowed)

export function liveness(summary = {}, data = null, { direction = "minimize", now = Date.now(), candidates = null } = {}) {
  const has = (k) => summary && summary[k] !== undefined;
  const out = {
    lastResultAt: has("last_result_at") ? summary.last_result_at : null,
    sinceImprovement: has("trials_since_improvement") ? summary.trials_since_improvement : null,
    perHour: has("results_per_hour") ? summary.results_per_hour : null,
    candidatesRemaining: has("candidates_remaining") ? summary.candidates_remaining : null,
    from: "server",
  };
  if (!data || (has("last_result_at") && has("trials_since_improvement") && has("results_per_hour"))) return out;
  out.from = "page";
  let last = null;
  let recent = 0;
  const done = []; // [completed s, index, value] of complete trials, by number
  const held = new Set();
  for (let i = 0; i < data.state.length; i++) {
    const s = data.state[i];
    if (!s) continue;
    if (data.candidate[i] !== undefined && data.candidate[i] !== null && s !== "stale") held.add(data.candidate[i]);
    if (s !== "complete" && s !== "failed") continue;
    const t = data.completed[i];
    if (t === null || t === undefined) continue;
    if (last === null || t > last) last = t;
    if (now / 1000 - t <= 3600) recent++;
    if (s === "complete" && data.value[i] !== null && data.feasible?.[i] !== false) done.push([t, i, data.value[i]]); // best: feasible
  }
  let best = null;
  let since = 0;
  for (const [, , v] of done) {
    if (best === null || (direction === "minimize" ? v < best : v > best)) {
      best = v;
      since = 0;
    } else since++;
  }
  if (!has("last_result_at")) out.lastResultAt = last === null ? null : last;
  if (!has("trials_since_improvement")) out.sinceImprovement = done.length ? since : null;
  if (!has("results_per_hour")) out.perHour = recent;
  if (!has("candidates_remaining") && candidates !== null) out.candidatesRemaining = Math.max(0, candidates - held.size);
  return out;
}
