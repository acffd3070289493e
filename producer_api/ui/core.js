// The page's plumbing: the API token, HTTP with problem+json errors, showing errors, DOM helpers.
// Server data only ever reaches the page through textContent and attributes (never innerHTML).

const TOKEN_KEY = "jobpost.token";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** A failed call: `status` 0 when the API could not be reached, `problem` the problem+json body. */
export class ApiError extends Error {
  constructor(status, problem, retryAfter = 0) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter; // seconds, from a 429's or 503's Retry-After
  }

  /** One line a person can act on. */
  describe() {
    if (this.status === 0) return "Cannot reach the API (network error). Is make run still running?";
    if (this.status === 401) return UNAUTHORIZED;
    if (this.status === 403) return `${FORBIDDEN} (${this.problem.detail || "403"})`;
    const { title, detail } = this.problem;
    const line = title && detail && title !== detail ? `${title}: ${detail}` : detail || title || "";
    return /[.!?]$/.test(line) ? line : `${line}.`;
  }

  /** Validation messages by field name (`loc[1]` of each error), for a 422. */
  /** Messages by the body field they are about: the API's own checks name it in `loc`
   * (["body", "locations", 0, "country"]), a board's refusal in `pointer` ("/locations/0/city");
   * a location's parts are shown at the editor's fields of the same name. */
  fieldErrors() {
    const byField = {};
    for (const e of this.problem.errors || []) {
      const path = Array.isArray(e.loc) && e.loc[0] === "body" ? e.loc.slice(1)
        : typeof e.pointer === "string" ? e.pointer.split("/").slice(1) : [];
      const field = path[0] === "locations" ? (typeof path[2] === "string" ? path[2] : "country") : path[0];
      const message = e.board ? `${e.board}: ${e.detail}` : e.msg || e.detail;
      if (typeof field === "string") (byField[field] ||= []).push(message);
    }
    return byField;
  }
}

export const UNAUTHORIZED =
  "That token was not accepted by the API (401). Check it against the token make run printed " +
  "(or JOBPOST_API_TOKENS) and sign in again.";

export const FORBIDDEN = "This token may not do that: its credential lacks the scope";

const unauthorizedListeners = [];
/** `listener(error)` runs whenever a call answers 401: the page goes back to the sign-in form. */
export function onUnauthorized(listener) {
  unauthorizedListeners.push(listener);
}

/** Calls the API on this origin with the session's token; JSON in, JSON out, ApiError on failure. */
export async function api(method, path, { body, headers = {} } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers } };
  const bearer = token.get();
  if (bearer) init.headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, { title: "Network error", detail: "the API cannot be reached" });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const problem = data && typeof data === "object" ? data : { title: `HTTP ${response.status}`, detail: text };
    const error = new ApiError(response.status, problem, Number(response.headers.get("Retry-After")) || 0);
    if (response.status === 401) unauthorizedListeners.forEach((listener) => listener(error));
    throw error;
  }
  return data;
}

/** Creates an element: `el("td", {class: "x", dataset: {testid: "y"}}, "text", child, ...)`. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "dataset") {
      for (const [key, data] of Object.entries(value)) if (data !== undefined && data !== null) node.dataset[key] = data;
    }
    else if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Shows `message` in the error element `node` (hides it when empty). */
export function showError(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

/** Runs `action` with `button` disabled and marked busy, so a double click sends one request. */
export async function busy(button, action) {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    return await action();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

export const BOARDS = { linkedin: "LinkedIn", indeed: "Indeed" };
export const DESTINATIONS = { ...BOARDS, search: "Search" };

export function clock(millis) {
  if (millis === null || millis === undefined) return "";
  return new Date(millis).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

export function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

const MAX_BACKOFF_MS = 30_000;

/**
 * Calls `tick` now and every `ms` while the page is visible, until the returned stop() is called.
 * A hidden tab polls not at all (no timer runs) and ticks at once when it is shown again; a
 * failing tick waits twice as long each time (at most 30 s, at least the answer's Retry-After),
 * so many open tabs never hammer an API that is struggling.
 */
export function every(ms, tick) {
  let timer = null;
  let running = false;
  let stopped = false;
  let wait = ms;
  const visible = () => document.visibilityState === "visible";
  const loop = async () => {
    timer = null;
    if (stopped || running || !visible()) return;
    running = true;
    try {
      await tick();
      connection(null);
      wait = ms;
    } catch (error) {
      connection(error);
      wait = Math.max(Math.min(wait * 2, MAX_BACKOFF_MS), (error.retryAfter || 0) * 1000);
    } finally {
      running = false;
    }
    if (!stopped && visible()) timer = setTimeout(loop, wait);
  };
  const shown = () => {
    if (visible() && timer === null) loop();
    else if (!visible() && timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
  };
  document.addEventListener("visibilitychange", shown);
  loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", shown);
  };
}

/** The header's connection line: says so while the API cannot be reached, clears once it answers. */
export function connection(error) {
  const line = document.querySelector("[data-testid=connection]");
  if (!error) {
    if (line.dataset.state === "lost") Object.assign(line, { textContent: "" }).dataset.state = "ok";
    return;
  }
  if (error.status === 0) {
    line.textContent = "⚠ Connection to the API lost: retrying…";
    line.dataset.state = "lost";
  }
}
