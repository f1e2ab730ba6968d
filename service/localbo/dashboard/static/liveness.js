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

// -- has it stopped, relative to its own cadence ---------------------------------------------------
// The rule: a study has stopped when no result (completed or failed trial) came for STALL_FACTOR times its
// typical gap between results, and for at least STALL_FLOOR_S. The typical gap is the median of the gaps
// between its last CADENCE_RESULTS results (at least MIN_RESULTS results; fewer: no cadence, no verdict).
// A study that sends a result every 2 min has stopped after 10 min of silence; one that sends one an hour,
// after 5 h. The count of results in the last hour cannot hide a stop: the silence is measured from the
// last result, not averaged over a window.
export const STALL_FACTOR = 5;
export const STALL_FLOOR_S = 120;
export const CADENCE_RESULTS = 50;
export const MIN_RESULTS = 4;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// the typical gap (seconds) between the results at these times (epoch seconds, any order); null when too few
export function typicalGap(times) {
  const t = times.filter(Number.isFinite).sort((a, b) => a - b).slice(-CADENCE_RESULTS);
  if (t.length < MIN_RESULTS) return null;
  const gaps = [];
  for (let k = 1; k < t.length; k++) gaps.push(t[k] - t[k - 1]);
  return median(gaps);
}

// the result times (epoch seconds) of the page's trials: completed and failed ones
export function resultTimes(data) {
  const out = [];
  for (let i = 0; i < data.state.length; i++) {
    const s = data.state[i];
    if ((s === "complete" || s === "failed") && Number.isFinite(data.completed[i])) out.push(data.completed[i]);
  }
  return out;
}

// {stopped, silenceS, gapS, thresholdS, basis}: lastResultMs (ms since the epoch) and the typical gap (s)
export function stall(lastResultMs, gapS, now = Date.now(), basis = "") {
  if (lastResultMs === null || lastResultMs === undefined || gapS === null || gapS === undefined || !Number.isFinite(gapS)) {
    return { stopped: false, silenceS: lastResultMs == null ? null : Math.max(0, (now - lastResultMs) / 1000), gapS: null, thresholdS: null, basis };
  }
  const silenceS = Math.max(0, (now - lastResultMs) / 1000);
  const thresholdS = Math.max(STALL_FACTOR * gapS, STALL_FLOOR_S);
  return { stopped: silenceS > thresholdS, silenceS, gapS, thresholdS, basis };
}

// The studies list has only the summary: the server's typical gap when it sends one (typical_result_gap_s),
// else the mean gap since the study was created: (last result - created) / results, from at least
// MIN_RESULTS results (an idle start makes it longer, so it can only call a stop later, never sooner).
export function summaryStall(study, now = Date.now()) {
  const m = study.summary ?? {};
  const last = m.last_result_at ? Date.parse(m.last_result_at) : null;
  const results = (m.n_complete ?? 0) + (m.n_failed ?? 0);
  let gap = Number.isFinite(m.typical_result_gap_s) ? m.typical_result_gap_s : null;
  let basis = gap === null ? "" : "the server's typical gap between results";
  if (gap === null && last !== null && results >= MIN_RESULTS && study.created_at) {
    const since = (last - Date.parse(study.created_at)) / 1000;
    if (since > 0) {
      gap = since / results;
      basis = `the mean gap between its ${results} results since it was created`;
    }
  }
  return stall(last, gap, now, basis);
}
