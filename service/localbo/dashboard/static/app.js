// The dashboard's entry: the routes, the token button, and what a failed view shows.
//   #/                         the studies list (views/list.js)
//   #/study/NAME               a study (views/study.js, which mounts the panels in panels/)
//   #/study/NAME/trial/N       one trial (views/trial.js)
//   #/compare?studies=A,B,C    up to 4 studies side by side (views/compare.js)

import { AuthError } from "./api.js";
import { html, render } from "./html.js";
import { route, startRouter } from "./router.js";
import { askForToken, onTokenButton, ready, setLive } from "./shell.js";
import { listView } from "./views/list.js";
import { compareView } from "./views/compare.js";
import { studyView } from "./views/study.js";
import { trialView } from "./views/trial.js";

const root = document.getElementById("main");
const name = (m) => decodeURIComponent(m[1]);

const router = startRouter({
  root,
  crumbs: document.getElementById("crumbs"),
  routes: [
    route(/^#\/study\/([^/]+)\/trial\/(\d+)$/, trialView, (m) => ({ name: name(m), number: Number(m[2]) })),
    route(/^#\/study\/([^/]+)\/?$/, studyView, (m) => ({ name: name(m) })),
    route(/^#\/compare\/?$/, compareView), // its query: the studies
  ],
  fallback: route(/^/, listView),
  onError(error, { retry }) {
    setLive("");
    if (error instanceof AuthError) return askForToken(root, error, retry);
    render(root, html`<h1 tabindex="-1">Something went wrong</h1><div class="alert" role="alert">${error.message || String(error)}</div><p><a href="#/">back to the studies</a></p>`);
    ready("error");
    return null;
  },
});

onTokenButton(() => {
  router.leave(); // the page's streams and requests end with the old token
  askForToken(root, { status: 401, message: "" }, router.reload);
});
