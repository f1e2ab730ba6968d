// At the top of the page: the policy's last computation failed or fell back, with its error. In safe mode
// the fallback is the safest known point asked again (source "fallback-safe"), counted apart.

import { html, render } from "../html.js";

export function mount(el, study) {
  return {
    render() {
      const error = study.policy?.last_policy_error ?? study.info?.last_policy_error ?? null;
      if (!error) return render(el, html``);
      const fallbacks = study.data.source.filter((s) => s === "fallback").length;
      const safe = study.data.source.filter((s) => s === "fallback-safe").length;
      render(
        el,
        html`<div class="alert" role="status" data-testid="policy-error"><b>The policy's last computation failed; fallback
          points were handed out</b> (${safe ? `${fallbacks} fallback and ${safe} safe fallback trials (the safest known point asked again)` : `${fallbacks} fallback trials`} so far). Last error: <code class="wrap">${error}</code></div>`,
      );
    },
  };
}
