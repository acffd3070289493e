// A posting's timeline: one column per version, one lane per destination, polled every second
// (EventSource cannot send the Authorization header).

import { api, clock, DESTINATIONS, el, every, plural, showError } from "./core.js";

const POLL_MS = 1000;
const SYMBOL = {
  delivered: "✓",
  closed: "■",
  retrying: "↻",
  dead_lettered: "✕",
  skipped: "↷",
  pending: "…",
  submitted: "⧗",
  paused: "⏸",
  waiting: "→",
};
const LABEL = {
  delivered: "delivered",
  closed: "closed",
  retrying: "retrying",
  dead_lettered: "dead-lettered",
  skipped: "skipped",
  pending: "pending",
  submitted: "submitted",
  paused: "paused",
};

export class Timeline {
  constructor({ container, notes, status, empty, error }) {
    Object.assign(this, { container, notes, status, empty, error });
    this.postingId = null;
    this.stopPolling = null;
    this.shown = "";
    setInterval(() => this.countDown(), 250);
    container.addEventListener("scroll", () => this.shade(), { passive: true });
  }

  /** Follows `postingId` from now on (null: follows nothing). */
  show(postingId) {
    if (postingId === this.postingId) return;
    this.stop();
    this.postingId = postingId;
    this.shown = "";
    this.container.replaceChildren();
    this.notes.replaceChildren();
    this.container.hidden = true;
    this.empty.hidden = Boolean(postingId);
    this.status.textContent = "";
    showError(this.error, "");
    if (postingId) this.stopPolling = every(POLL_MS, () => this.refresh(postingId));
  }

  stop() {
    if (this.stopPolling) this.stopPolling();
    this.stopPolling = null;
  }

  async refresh(postingId) {
    let timeline;
    try {
      timeline = await api("GET", `/postings/${encodeURIComponent(postingId)}/timeline`);
    } catch (error) {
      if (postingId !== this.postingId) return;
      if (error.status === 404) {
        this.status.textContent = "Waiting for the posting to appear…";
        return;
      }
      this.status.textContent = "⚠ Not updating";
      showError(this.error, `The timeline could not be loaded. ${error.describe()}`);
      throw error;
    }
    if (postingId !== this.postingId) return;
    showError(this.error, "");
    this.status.dataset.state = "live";
    this.status.textContent = `● Live · ${postingId} · checked ${clock(Date.now())}`;
    const json = JSON.stringify(timeline);
    if (json !== this.shown) {
      this.shown = json;
      this.render(timeline);
    }
  }

  render(timeline) {
    const box = this.container;
    const atEnd = box.scrollLeft + box.clientWidth >= box.scrollWidth - 4;
    const lanes = Object.keys(DESTINATIONS).filter((d) => timeline.lanes[d]);
    const waits = lanes.some((d) => timeline.lanes[d].waiting_for !== null);
    const table = el(
      "table",
      { class: "timeline", dataset: { posting: timeline.posting_id, version: timeline.version } },
      el("caption", { class: "visually-hidden" }, `Versions of ${timeline.posting_id} by destination`),
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          el("th", { scope: "col", class: "corner" }, "Destination"),
          timeline.versions.map(versionHeader),
          waits && el("th", { scope: "col", class: "next" }, "Next"),
        ),
      ),
      el("tbody", {}, lanes.map((d) => laneRow(d, timeline.lanes[d], timeline.versions, waits))),
    );
    box.replaceChildren(table);
    const open = Boolean(this.notes.querySelector("details[open]"));
    this.notes.replaceChildren(
      ...[
        timeline.deleted && el("p", { class: "meta" }, "■ This posting is deleted: each lane ends closed."),
        events(timeline.events || [], open),
      ].filter(Boolean),
    );
    box.hidden = false;
    if (atEnd) this.scrollToEnd(table);
    this.shade();
    this.countDown();
  }

  /** Shows the newest versions, a whole column next to the sticky lane names (no half cell). */
  scrollToEnd(table) {
    const box = this.container;
    const left = table.getBoundingClientRect().left;
    const lanesEnd = table.querySelector("th.corner").getBoundingClientRect().right - left;
    const overflow = table.offsetWidth - box.clientWidth;
    if (overflow <= 0) return;
    for (const column of table.querySelectorAll("thead th:not(.corner)")) {
      const target = column.getBoundingClientRect().left - left - lanesEnd - 3;
      if (target >= overflow) {
        table.style.marginRight = `${target - overflow}px`;
        box.scrollLeft = target;
        return;
      }
    }
    box.scrollLeft = box.scrollWidth;
  }

  shade() {
    this.container.classList.toggle("scrolled", this.container.scrollLeft > 0);
  }

  countDown() {
    for (const node of this.container.querySelectorAll("[data-next-at]")) {
      const seconds = Math.ceil((Number(node.dataset.nextAt) - Date.now()) / 1000);
      node.textContent = seconds > 0 ? `next attempt in ${seconds} s` : "next attempt now";
    }
  }
}

function versionHeader(v) {
  return el(
    "th",
    { scope: "col", class: `version op-${v.op.toLowerCase()}`, dataset: { testid: `version-${v.version}` } },
    el("span", { class: "vnum" }, `v${v.version}`),
    el("span", { class: "op" }, v.op.toLowerCase()),
    el("span", { class: "when" }, clock(v.at)),
    el("span", { class: "vtitle", title: v.title || "" }, v.title || "—"),
  );
}

function laneRow(destination, lane, versions, waits) {
  const name = DESTINATIONS[destination];
  const header = el(
    "th",
    { scope: "row", class: "lane" },
    el("span", { class: "lane-name" }, name),
    lane.closed && el("span", { class: "badge s-closed", dataset: { testid: `closed-${destination}` } }, "■ closed"),
    lane.listing && listingBadge(destination, lane.listing),
  );
  const cells = versions.map((v, i) => cell(destination, lane.cells[i] || { version: v.version, state: "pending" }));
  let extra = null;
  if (waits) {
    extra =
      lane.waiting_for === null
        ? el("td", { class: "cell none" })
        : el(
            "td",
            {
              class: "cell s-waiting",
              dataset: { testid: `waiting-${destination}`, state: "waiting", version: lane.waiting_for },
            },
            el("span", { class: "state" }, el("span", { class: "sym", "aria-hidden": "true" }, SYMBOL.waiting), "waiting"),
            el("span", { class: "detail" }, `waiting for v${lane.waiting_for}`),
          );
  }
  return el(
    "tr",
    { dataset: { testid: `lane-${destination}`, closed: String(Boolean(lane.closed)) } },
    header,
    cells,
    extra,
  );
}

const LISTING = {
  submitted: "submitted",
  received: "received",
  live: "live",
  closed: "closed",
  closed_by_board: "closed by the board",
  expired: "expired",
  rejected: "rejected",
};

/** The job at the board: its status in the board's terms, a link to its page where the board
 * gives one (else its id), and the board's reason. */
function listingBadge(destination, listing) {
  const label = LISTING[listing.status] || listing.status;
  const where = listing.url
    ? el(
        "a",
        { href: listing.url, target: "_blank", rel: "noopener noreferrer", dataset: { testid: `listing-link-${destination}` } },
        listing.id || listing.url,
      )
    : listing.id && el("span", { class: "listing-id", dataset: { testid: `listing-id-${destination}` } }, listing.id);
  return el(
    "span",
    {
      class: `listing l-${listing.status}`,
      dataset: { testid: `listing-${destination}`, status: listing.status },
      title: listing.reason || "",
    },
    el("span", { class: "listing-status" }, label),
    where,
    listing.reason && el("span", { class: "detail" }, listing.reason),
  );
}

function cell(destination, c) {
  const details = [];
  const attempts = plural(c.attempts || 0, "attempt");
  switch (c.state) {
    case "delivered":
      details.push(clock(c.at), attempts);
      break;
    case "closed":
      details.push("posting closed", clock(c.at));
      break;
    case "retrying":
      details.push(`attempt ${c.attempts}`, errorLine(c.error));
      if (c.next_attempt_at) details.push(el("span", { class: "countdown", dataset: { nextAt: c.next_attempt_at } }));
      break;
    case "dead_lettered":
      details.push(errorLine(c.error), attempts, clock(c.at));
      break;
    case "skipped":
      details.push(c.error || "superseded: not sent");
      break;
    case "submitted":
      details.push("the board's task has not ended yet", attempts);
      break;
    case "paused":
      details.push(errorLine(c.error), "the board is unavailable: no attempt is charged");
      break;
    default:
      details.push("not attempted yet");
  }
  return el(
    "td",
    {
      class: `cell s-${c.state}`,
      dataset: { testid: `cell-${destination}-${c.version}`, state: c.state, at: c.at ?? undefined },
    },
    el(
      "span",
      { class: "state" },
      el("span", { class: "sym", "aria-hidden": "true" }, SYMBOL[c.state] || "?"),
      LABEL[c.state] || c.state,
    ),
    details.filter(Boolean).map((d) => (d instanceof Node ? d : el("span", { class: "detail" }, d))),
  );
}

function errorLine(error) {
  return error ? el("span", { class: "detail err", title: error }, error) : null;
}

function events(list, open) {
  if (!list.length) return null;
  const recent = list.slice(-12).reverse();
  return el(
    "details",
    { class: "events", open },
    el("summary", {}, `Recent delivery attempts (${list.length})`),
    el(
      "ol",
      {},
      recent.map((e) =>
        el(
          "li",
          {},
          el("span", { class: "when" }, clock(e.at)),
          ` ${DESTINATIONS[e.destination] || e.destination} v${e.version} attempt ${e.attempt}: ${e.outcome}`,
          e.error ? ` (${e.error})` : "",
        ),
      ),
    ),
  );
}
