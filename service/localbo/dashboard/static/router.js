// Hash routes to views. A view is {mount(root, params, signal) -> unmount | Promise<unmount>, title(params),
// crumbs(params) -> html``}; on navigation the router aborts the old view's requests (signal: pass it to
// api.get), calls its unmount, mounts the next and moves focus to the new page's h1.
// A hash may carry a query after "?" (#/study/NAME?state=failed): routes match the part before it, and the
// view gets it as params.query (the text after "?"); setQuery() changes it in place (shareable, no remount).

import { html, render } from "./html.js";

export function route(pattern, view, params = () => ({})) {
  return { pattern, view, params };
}

// the hash's route and its query ("" when none)
function splitHash() {
  const hash = window.location.hash || "#/";
  const at = hash.indexOf("?");
  return at < 0 ? [hash, ""] : [hash.slice(0, at), hash.slice(at + 1)];
}

// Sets keys of the current hash's query ({key: value}; an empty value removes its key, other keys stay) without
// a navigation: the view stays mounted, and the address bar holds a URL that restores the same state.
export function setQuery(values) {
  const [hash, search] = splitHash();
  const query = new URLSearchParams(search);
  for (const [k, v] of Object.entries(values)) {
    if (v === null || v === undefined || v === "") query.delete(k);
    else query.set(k, v);
  }
  const text = query.toString();
  const url = `${window.location.pathname}${window.location.search}${hash}${text ? `?${text}` : ""}`;
  if (url !== `${window.location.pathname}${window.location.search}${window.location.hash}`) history.replaceState(history.state, "", url);
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
    const [hash, search = ""] = splitHash();
    let match = null;
    const found = routes.find((r) => (match = hash.match(r.pattern))) || fallback;
    const own = match && found !== fallback ? found.params(match) : {};
    const params = { ...own, query: own.query || search };
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
