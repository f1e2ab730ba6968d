// The page's frame around the views: the live badge, the token form and button, the ready mark.

import { clearToken, getToken, server, setToken } from "./api.js";
import { html, render } from "./html.js";

const liveBadge = document.getElementById("live");
const tokenButton = document.getElementById("token-button");

export function setLive(state, why = "") {
  liveBadge.className = `live ${state}`;
  liveBadge.textContent = { live: "● live", retrying: "○ reconnecting…", closed: "○ not live", "": "" }[state] ?? "";
  liveBadge.title = why;
}

// The header's button says what it does here: nothing to do on a server without tokens.
export function showTokenButton() {
  if (getToken()) {
    tokenButton.hidden = false;
    tokenButton.textContent = "change token…";
    tokenButton.title = "Forget the token and enter another";
  } else if (server.auth === "open") {
    tokenButton.hidden = true; // this server asks for no token
  } else {
    tokenButton.hidden = false;
    tokenButton.textContent = "enter token…";
    tokenButton.title = "Enter a bearer token";
  }
}

// marks the view ready once its first frame is painted (canvas strokes rasterise at paint time)
export function ready(view) {
  document.body.dataset.view = view;
  showTokenButton();
  requestAnimationFrame(() =>
    setTimeout(() => {
      document.body.dataset.ready = "1";
      performance.mark(`localbo:${view}-interactive`);
    }),
  );
}

// The token form, for a 401 (none, or refused) or a 403 (this token may not read this); onToken re-routes.
export function askForToken(root, error, onToken) {
  setLive("");
  const refused = getToken() && error.status === 401;
  const forbidden = error.status === 403;
  render(
    root,
    html`<section class="auth" role="alert" data-testid="auth">
      <h1 tabindex="-1">${forbidden ? "This token may not see this" : "A token is needed"}</h1>
      <p>${
        forbidden
          ? error.message
          : refused
            ? "The server refused the token. Enter another one."
            : "This server asks for a bearer token. A token with read scope is enough to watch studies."
      }</p>
      <form id="token-form">
        <label>Bearer token <input name="token" type="password" autocomplete="off" required autofocus></label>
        <label class="check"><input name="remember" type="checkbox"> remember on this computer</label>
        <button type="submit">Use token</button>
        ${forbidden ? html`<a href="#/">back to the studies</a>` : ""}
      </form>
    </section>`,
  );
  root.querySelector("#token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    setToken(String(form.get("token")).trim(), form.get("remember") === "on");
    onToken();
  });
  ready("auth");
  tokenButton.hidden = true; // the form is on the page
}

export function onTokenButton(handler) {
  tokenButton.addEventListener("click", () => {
    clearToken();
    handler();
  });
}
