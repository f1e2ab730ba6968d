// Talking to /api/v1 with the viewer's bearer token, and reading server-sent events through fetch
// (EventSource cannot send an Authorization header, and a token in the URL would end up in logs).

const KEY = "localbo-token";
export const API = new URL("../api/v1/", window.location.href).pathname;

export class AuthError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

export function getToken() {
  return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
}

export function setToken(token, remember) {
  sessionStorage.setItem(KEY, token);
  if (remember) localStorage.setItem(KEY, token);
  else localStorage.removeItem(KEY);
}

export function clearToken() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

function headers() {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function detail(response) {
  try {
    return (await response.json()).detail || response.statusText;
  } catch {
    return response.statusText;
  }
}

// Whether the server asks for tokens: "unknown" until a request says, "open" once one without a token
// was answered, "tokens" once one was refused for the lack of one (the header's button follows it).
export const server = { auth: "unknown" };

export class HttpError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

// GET API + path; pass the view's signal so the router can abort it on navigation.
export async function get(path, { signal, as = "json" } = {}) {
  const sent = headers();
  const response = await fetch(API + path, { headers: sent, signal });
  if (response.status === 401) server.auth = "tokens";
  else if (response.ok && !sent.Authorization && server.auth === "unknown") server.auth = "open";
  if (response.status === 401 || response.status === 403) throw new AuthError(response.status, await detail(response));
  if (!response.ok) throw new HttpError(response.status, await detail(response));
  if (sent.Authorization && response.ok) server.auth = server.auth === "open" ? "open" : "tokens";
  return as === "blob" ? response.blob() : response.json();
}

// PUT API + path with a JSON body (a note): the answer's JSON; AuthError on 401 / 403, HttpError otherwise.
export async function put(path, body, { signal } = {}) {
  const response = await fetch(API + path, {
    method: "PUT",
    headers: { ...headers(), "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  if (response.status === 401 || response.status === 403) throw new AuthError(response.status, await detail(response));
  if (!response.ok) throw new HttpError(response.status, await detail(response));
  return response.json();
}

// Reads an event stream; calls onEvent(name, data) per event and onState("live" | "retrying" | "closed").
// Reconnects with backoff, asking each time for what came after the last trial it saw (params()).
// A view's signal, when given, ends the stream with the view.
export function subscribe(path, params, onEvent, onState, signal = null) {
  const controller = new AbortController();
  signal?.addEventListener("abort", () => controller.abort(), { once: true });
  let delay = 500;
  (async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch(`${API}${path}?${new URLSearchParams(params())}`, {
          headers: { ...headers(), Accept: "text/event-stream" },
          signal: controller.signal,
          cache: "no-store",
        });
        if (response.status === 401 || response.status === 403) {
          onState("closed", await detail(response));
          return;
        }
        if (!response.ok || !response.body) throw new Error(`events: ${response.status}`);
        onState("live");
        delay = 500;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let name = "message";
            const data = [];
            for (const line of block.split("\n")) {
              if (line.startsWith("event:")) name = line.slice(6).trim();
              else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
            }
            if (data.length) onEvent(name, JSON.parse(data.join("\n")));
            if (name === "gone") return onState("closed", "the study was deleted");
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
      }
      onState("retrying");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  })();
  return () => controller.abort();
}
