// The playground: sign-in, the posting editor, title search; the timeline and operations
// live in their own modules. No build step, no dependency: an ES module the API serves.

import { api, busy, clock, el, onUnauthorized, showError, token, UNAUTHORIZED } from "./core.js";
import { Operations } from "./ops.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const FIELDS = ["title", "description", "notes", "city", "country", "workplace", "apply_url"];
// What a new posting starts with: a real-looking ad both boards would list (tests/postings.py
// writes the same kind), so "Create posting" works at once and shows what a listing needs.
const NEW_POSTING = {
  title: "Senior Data Engineer",
  description:
    "Join the team that moves every order, payment and delivery event through Kafka. As our Senior " +
    "Data Engineer you will design streaming pipelines in Python and SQL and own their reliability. " +
    "You work in Berlin with a small team that ships every week.",
  notes: "",
  city: "Berlin",
  country: "DE",
  workplace: "hybrid",
  apply_url: "https://careers.example.com/jobs/senior-data-engineer-berlin",
};

const timeline = new Timeline({
  container: $("timeline"), notes: $("timeline-notes"), status: $("timeline-status"), empty: $("timeline-empty"),
  error: $("timeline-error"),
});
const operations = new Operations({
  boards: $("boards"), lagRows: $("lag-rows"), lagError: $("lag-error"), letters: $("dead-letters"),
  open: (id) => openPosting(id),
});
let current = null; // the posting shown in the editor: {id, version, status, last_update_time_millis}

// Sign-in -------------------------------------------------------------------------------------

async function signIn(value) {
  token.set(value);
  let boards;
  try {
    boards = await api("GET", "/ops/boards");
  } catch (error) {
    if (error.status === 401) return; // onUnauthorized has said so at the form
    if (error.status === 0) {
      token.clear();
      showError($("signin-error"), error.describe());
      return;
    }
    // The token was accepted (a 401 comes first); only the switches are missing.
    boards = { available: false, boards: {}, problem: error.describe() };
  }
  showError($("signin-error"), "");
  $("signin").hidden = true;
  $("workspace").hidden = false;
  document.querySelector("[data-testid=session]").hidden = false;
  operations.start(boards);
  const linked = new URLSearchParams(location.hash.slice(1)).get("posting");
  if (current) timeline.show(current.id);
  else if (linked) await openPosting(linked);
  else fill(null);
  $("f-title").focus();
}

function signOut(message) {
  token.clear();
  timeline.show(null);
  operations.stop();
  $("workspace").hidden = true;
  document.querySelector("[data-testid=session]").hidden = true;
  $("signin").hidden = false;
  showError($("signin-error"), message);
  $("token").value = "";
  $("token").focus();
}

onUnauthorized(() => signOut(UNAUTHORIZED));

$("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("token").value.trim();
  if (!value) {
    showError($("signin-error"), "Enter the API token first.");
    $("token").focus();
    return;
  }
  busy(event.submitter || $("signin-form").querySelector("button"), () => signIn(value));
});
$("sign-out").addEventListener("click", () => signOut(""));

// The posting editor --------------------------------------------------------------------------

function setCurrent(posting) {
  current = posting;
  const meta = $("posting-meta");
  const active = posting && posting.status !== "deleted";
  if (!posting) {
    meta.replaceChildren("New posting: not saved yet.");
    delete meta.dataset.id;
  } else {
    meta.replaceChildren(
      el("code", {}, posting.id),
      ` · version ${posting.version ?? "?"} · `,
      el("span", { class: `badge ${active ? "s-delivered" : "s-closed"}` }, active ? "● active" : "■ deleted"),
      posting.last_update_time_millis ? ` · updated ${clock(posting.last_update_time_millis)}` : "",
    );
    Object.assign(meta.dataset, { id: posting.id, version: posting.version, status: posting.status });
  }
  $("save").textContent = active ? `Replace version ${posting.version}` : "Create posting";
  $("delete").hidden = !active;
  // The open posting is in the address (never the token), so a reload or a link shows it again.
  const address = posting ? `#posting=${encodeURIComponent(posting.id)}` : location.pathname + location.search;
  history.replaceState(null, "", address);
  timeline.show(posting ? posting.id : null);
}

/** The editor's fields from a posting as the API returns it (none: a new posting's defaults). */
function fill(posting) {
  const place = (posting && posting.locations && posting.locations[0]) || {};
  const values = posting
    ? { ...posting, city: place.city || "", country: place.country || "", workplace: posting.workplace || "on_site" }
    : NEW_POSTING;
  for (const field of FIELDS) $(`f-${field}`).value = values[field] || "";
}

/** The body of a create or replace: the editor's fields as the API names them. */
function bodyOfForm() {
  const value = (field) => $(`f-${field}`).value.trim();
  const place = { country: value("country") };
  if (value("city")) place.city = value("city");
  return {
    title: $("f-title").value,
    description: $("f-description").value,
    notes: $("f-notes").value,
    locations: [place],
    workplace: value("workplace"),
    ...(value("apply_url") ? { apply_url: value("apply_url") } : {}),
  };
}

function clearErrors() {
  for (const field of FIELDS) {
    showError($(`error-${field}`), "");
    $(`f-${field}`).removeAttribute("aria-invalid");
  }
  showError($("posting-error"), "");
  $("posting-done").textContent = "";
}

/** Shows a failed write: validation messages at their fields, anything else at the actions. */
function showWriteError(error, action) {
  const byField = error.status === 422 ? error.fieldErrors() : {};
  let first = null;
  for (const [field, messages] of Object.entries(byField)) {
    if (!FIELDS.includes(field)) continue;
    showError($(`error-${field}`), `${messages.join("; ")}`);
    $(`f-${field}`).setAttribute("aria-invalid", "true");
    first ||= $(`f-${field}`);
  }
  if (first) {
    first.focus();
    return;
  }
  let message = `${action} failed. ${error.describe()}`;
  if (error.status === 412) message += " Someone changed it since it was shown: open it again to see the latest.";
  if (error.status === 410) message += " It was deleted meanwhile.";
  showError($("posting-error"), message);
}

$("posting-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const body = bodyOfForm();
  const replacing = current && current.status !== "deleted";
  busy($("save"), async () => {
    clearErrors();
    try {
      const posting = replacing
        ? await api("PUT", `/postings/${encodeURIComponent(current.id)}`, {
            body, headers: { "If-Match": `"${current.version}"` },
          })
        : await api("POST", "/postings", { body, headers: { "Idempotency-Key": crypto.randomUUID() } });
      setCurrent(posting);
      $("posting-done").textContent = replacing
        ? `✓ Replaced: ${posting.id} is now at version ${posting.version}.`
        : `✓ Created ${posting.id} (version ${posting.version}).`;
    } catch (error) {
      showWriteError(error, replacing ? "Replace" : "Create");
    }
  });
});

$("delete").addEventListener("click", (event) => {
  const posting = current;
  busy(event.currentTarget, async () => {
    clearErrors();
    try {
      const deleted = await api("DELETE", `/postings/${encodeURIComponent(posting.id)}`, {
        headers: { "If-Match": `"${posting.version}"` },
      });
      setCurrent({ ...posting, version: deleted.version, status: "deleted" });
      $("posting-done").textContent = `✓ Deleted: version ${deleted.version} closes it at every destination.`;
      $("save").focus();
    } catch (error) {
      showWriteError(error, "Delete");
    }
  });
});

$("new-posting").addEventListener("click", () => {
  clearErrors();
  setCurrent(null);
  fill(null);
  $("f-title").focus();
});

async function openPosting(id, known = null) {
  clearErrors();
  try {
    const posting = await api("GET", `/postings/${encodeURIComponent(id)}`);
    setCurrent(posting);
    fill(posting);
  } catch (error) {
    if (error.status !== 410 && !known) {
      showError($("posting-error"), `Could not open ${id}. ${error.describe()}`);
      return;
    }
    setCurrent(known || { id, version: null, status: "deleted" });
    fill(known);
  }
  $("f-title").focus();
}

// Search --------------------------------------------------------------------------------------

let search = { q: "", cursor: null, count: 0 };

async function runSearch(q, cursor) {
  const params = new URLSearchParams({ q, limit: "20" });
  if (cursor) params.set("cursor", cursor);
  showError($("search-error"), "");
  const results = $("results");
  results.setAttribute("aria-busy", "true");
  try {
    const page = await api("GET", `/postings?${params}`);
    if (!cursor) results.replaceChildren();
    results.append(...page.items.map(resultItem));
    search = { q, cursor: page.next_cursor, count: (cursor ? search.count : 0) + page.items.length };
    const status = $("search-status");
    status.dataset.count = search.count;
    status.textContent = search.count
      ? `${search.count} posting${search.count === 1 ? "" : "s"} match “${q}”${page.next_cursor ? " (more below)" : ""}.`
      : `No postings match “${q}”.`;
    $("more").hidden = !page.next_cursor;
  } catch (error) {
    showError($("search-error"), `Search failed. ${error.describe()}`);
  } finally {
    results.removeAttribute("aria-busy");
  }
}

function resultItem(posting) {
  return el(
    "li",
    { dataset: { testid: `result-${posting.id}`, version: posting.version } },
    el("div", { class: "result-text" },
      el("strong", {}, posting.title),
      el("span", { class: "meta" }, `${posting.id} · v${posting.version}`,
        posting.last_update_time_millis ? ` · ${clock(posting.last_update_time_millis)}` : "")),
    el("button", {
      type: "button", class: "quiet", "aria-label": `Open ${posting.title}`,
      onclick: () => openPosting(posting.id, posting),
    }, "Open"),
  );
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const q = $("q").value.trim();
  if (!q) {
    showError($("search-error"), "Type one or more words of a title.");
    $("q").focus();
    return;
  }
  busy(event.submitter || $("search-form").querySelector("button"), () => runSearch(q, null));
});
$("more").addEventListener("click", (event) => busy(event.currentTarget, () => runSearch(search.q, search.cursor)));

// Start ---------------------------------------------------------------------------------------

const saved = token.get();
if (saved) signIn(saved);
else $("token").focus();
