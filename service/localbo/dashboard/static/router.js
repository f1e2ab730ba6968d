// Hash routes to views. A view is {mount(root, params, signal) -> unmount | Promise<unmount>, title(params),
// crumbs(params) -> html``}; on navigation the router aborts the old view's requests (signal: pass it to
// api.get), calls its unmount, mounts the next and moves focus to the new page's h1.

import { html, render } from "./html.js";

export function route(pattern, view, params = () => ({})) {
  return { pattern, view, params };
}

export function startRouter({ root, crumbs, routes, fallback, onError }) {
  let controller = null;
  let unmount = null;
  let navigations = 0;

  // ends the current view: aborts its requests and streams, runs its unmount
  function leave() {
    controller?.abort();
    controller = null;
    const leaving = unmount;
    unmount = null;
    if (leaving) leaving();
  }

  async function go() {
    leave();
    const mine = new AbortController();
    controller = mine;
    const hash = window.location.hash || "#/";
    let match = null;
    const found = routes.find((r) => (match = hash.match(r.pattern))) || fallback;
    const params = match && found !== fallback ? found.params(match) : {};
    const view = found.view;
    document.body.dataset.ready = "";
    document.title = view.title ? `${view.title(params)} · localbo` : "localbo dashboard";
    render(crumbs, view.crumbs ? view.crumbs(params) : html``);
    const first = navigations++ === 0;
    try {
      const done = await view.mount(root, params, mine.signal);
      if (mine.signal.aborted) {
        if (typeof done === "function") done();
        return;
      }
      unmount = typeof done === "function" ? done : null;
      // a screen reader and a keyboard start on the new page's heading, not the link that led there
      if (!first) root.querySelector("h1")?.focus({ preventScroll: false });
    } catch (error) {
      if (mine.signal.aborted || error?.name === "AbortError") return;
      unmount = onError(error, { retry: go }) || null;
    }
  }

  window.addEventListener("hashchange", go);
  go();
  return { reload: go, leave };
}
