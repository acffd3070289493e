// Operations: the sandbox's fault switches per board, consumer lag, dead letters and redrive.

import { api, BOARDS, busy, clock, DESTINATIONS, el, every, plural, showError } from "./core.js";

const POLL_MS = 2000;
const MODES = ["none", "error", "timeout", "rate_limit", "reject", "lose_response", "malformed"];

export class Operations {
  constructor({ boards, lagRows, lagError, letters, open }) {
    Object.assign(this, { boardsBox: boards, lagRows, lagError, lettersBox: letters, open });
    this.shownLetters = {};
    this.stopPolling = null;
  }

  /** Shows the boards' fault switches (`boards`: GET /ops/boards) and polls lag and dead letters. */
  start(boards) {
    this.renderBoards(boards);
    this.stop();
    this.stopPolling = every(POLL_MS, () => this.refresh());
  }

  stop() {
    if (this.stopPolling) this.stopPolling();
    this.stopPolling = null;
    this.shownLetters = {};
  }

  async refresh() {
    await Promise.all([this.refreshLag(), ...Object.keys(BOARDS).map((b) => this.refreshLetters(b))]);
  }

  renderBoards({ available, boards, problem }) {
    if (!available) {
      this.boardsBox.replaceChildren(
        el("p", { class: "muted", dataset: { testid: "sandbox-off" } }, problem
          ? `The fault switches could not be read. ${problem}`
          : "The job-board sandbox is not running with this API, so there are no fault switches."),
      );
      return;
    }
    this.boardsBox.replaceChildren(...Object.keys(BOARDS).filter((b) => boards[b]).map((b) => this.faultForm(b, boards[b])));
  }

  faultForm(board, faults) {
    const name = BOARDS[board];
    const current = el("p", { class: "meta", dataset: { testid: `faults-${board}` }, role: "status" });
    const showCurrent = (f) => {
      current.textContent = f.mode === "none" ? "✓ Answering normally" : `⚠ Failing: ${f.mode}, probability ${f.probability}`;
      current.dataset.mode = f.mode;
    };
    showCurrent(faults);
    // Visible labels stay short; the accessible names say which board ("LinkedIn fault mode").
    const mode = el("select", { id: `mode-${board}`, name: "mode", "aria-label": `${name} fault mode` },
      MODES.map((m) => el("option", { value: m, selected: m === faults.mode }, m)));
    const probability = el("input", {
      id: `probability-${board}`, name: "probability", type: "number", min: 0, max: 1, step: 0.1,
      "aria-label": `${name} fault probability`,
      value: faults.probability ?? 1, inputmode: "decimal",
    });
    const error = el("p", { class: "error", role: "alert", dataset: { testid: `faults-error-${board}` }, hidden: true });
    const apply = el("button", { type: "submit", "aria-label": `Apply ${name} faults` }, "Apply");
    const form = el("form", { class: "faults", novalidate: true },
      el("fieldset", {},
        el("legend", {}, name),
        current,
        el("div", { class: "fault-fields" },
          el("div", { class: "field" }, el("label", { for: mode.id }, "Mode"), mode),
          el("div", { class: "field" }, el("label", { for: probability.id }, "Probability (0–1)"), probability),
          apply),
        error));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(apply, async () => {
        showError(error, "");
        try {
          const body = { mode: mode.value, probability: Number(probability.value) };
          showCurrent(await api("PUT", `/ops/boards/${board}/faults`, { body }));
        } catch (e) {
          showError(error, `${name} faults were not changed. ${e.describe()}`);
        }
      });
    });
    return form;
  }

  async refreshLag() {
    try {
      const { groups } = await api("GET", "/ops/lag");
      showError(this.lagError, "");
      this.lagRows.replaceChildren(...groups.map((g) =>
        el("tr", { dataset: { testid: `lag-${g.destination}`, lag: g.lag } },
          el("td", {}, g.group),
          el("td", {}, DESTINATIONS[g.destination] || g.destination),
          el("td", { class: "num" }, g.lag === 0 ? "✓ 0" : `▲ ${g.lag}`))));
    } catch (e) {
      showError(this.lagError, `Lag could not be read. ${e.describe()}`);
      throw e;
    }
  }

  async refreshLetters(board) {
    let section = this.lettersBox.querySelector(`[data-board="${board}"]`);
    if (!section) {
      section = el("section", { class: "board-letters", dataset: { board, testid: `letters-${board}` } });
      this.lettersBox.append(section);
      section.append(el("h4", {}, BOARDS[board]), el("div", { class: "letters-body" }),
        el("p", { class: "done", role: "status", dataset: { testid: `redrive-result-${board}` } }),
        el("p", { class: "error", role: "alert", hidden: true, dataset: { testid: `letters-error-${board}` } }));
    }
    const error = section.querySelector(".error");
    let letters;
    try {
      ({ letters } = await api("GET", `/ops/dead-letters/${board}`));
      showError(error, "");
    } catch (e) {
      showError(error, `The dead letters could not be read. ${e.describe()}`);
      throw e;
    }
    const json = JSON.stringify(letters);
    if (json === this.shownLetters[board]) return;
    this.shownLetters[board] = json;
    const focused = document.activeElement?.dataset?.focusKey;
    section.querySelector(".letters-body").replaceChildren(this.lettersTable(board, letters));
    if (focused) section.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`)?.focus();
  }

  lettersTable(board, letters) {
    const open = letters.filter((l) => !l.resolved).length;
    const all = el("button", {
      type: "button", class: "quiet", disabled: open === 0,
      dataset: { testid: `redrive-all-${board}`, focusKey: `all-${board}` },
      onclick: (event) => this.redrive(board, {}, event.currentTarget),
    }, `Redrive all unresolved (${open})`);
    const summary = el("p", { class: "meta letters-summary" },
      letters.length ? `${plural(letters.length, "letter")}, ${open} unresolved` : "✓ No dead letters.", " ", all);
    if (!letters.length) return summary;
    const row = (l) => {
      const key = `${l.partition}-${l.offset}`;
      // A letter that cannot be decoded has no posting id or version; it can still be redriven.
      const posting = l.posting_id ?? `partition ${l.partition}, offset ${l.offset}`;
      const version = l.version === null || l.version === undefined ? "?" : l.version;
      return el("tr", { dataset: { testid: `letter-${l.posting_id ?? key}-${version}`, resolved: String(l.resolved) } },
        el("td", { "data-label": "Posting" }, el("code", {}, posting)),
        el("td", { "data-label": "Version" }, `v${version} ${(l.op || "").toLowerCase()}`),
        el("td", { "data-label": "Error", class: "err" }, l.error || ""),
        el("td", { "data-label": "Attempts", class: "num" }, String(l.attempts)),
        el("td", { "data-label": "When" }, clock(l.at)),
        el("td", { "data-label": "Status" }, l.resolved ? "✓ resolved" : "✕ unresolved"),
        el("td", { class: "row-actions" },
          el("button", {
            type: "button", class: l.resolved ? "quiet" : undefined,
            "aria-label": `Redrive ${posting} v${version}`, dataset: { focusKey: `redrive-${key}` },
            onclick: (event) => this.redrive(board, { partition: l.partition, offset: l.offset }, event.currentTarget),
          }, "Redrive"),
          l.posting_id && el("button", {
            type: "button", class: "quiet", "aria-label": `Open ${l.posting_id}`, dataset: { focusKey: `open-${key}` },
            onclick: () => this.open(l.posting_id),
          }, "Open")));
    };
    const head = ["Posting", "Version", "Error", "Attempts", "When", "Status", "Actions"];
    return el("div", {}, summary,
      el("table", { class: "letters-table" },
        el("caption", { class: "visually-hidden" }, `${BOARDS[board]} dead letters, newest first`),
        el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, letters.map(row))));
  }

  async redrive(board, body, button) {
    const section = this.lettersBox.querySelector(`[data-board="${board}"]`);
    const result = section.querySelector(".done");
    const error = section.querySelector(".error");
    await busy(button, async () => {
      showError(error, "");
      result.textContent = "Asking the consumer…";
      try {
        // 202: requests written; the board's consumer handles each in its posting's lane and
        // reports the outcome as a delivery event carrying the request id (the timeline).
        const { requests } = await api("POST", `/ops/dead-letters/${board}/redrive`, { body });
        if (!requests.length) {
          result.textContent = "Nothing to redrive.";
          return;
        }
        const outcomes = await this.outcomes(board, requests, (text) => { result.textContent = text; });
        result.textContent = describeAll(requests, outcomes);
      } catch (e) {
        result.textContent = "";
        showError(error, `The redrive failed. ${e.describe()}`);
      }
    });
    this.shownLetters[board] = "";
    await this.refreshLetters(board).catch(() => {});
  }

  /** Polls the postings' timelines until each request has a final event (at most a minute). */
  async outcomes(board, requests, progress) {
    const found = {};
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && Object.keys(found).length < requests.length) {
      progress(describeAll(requests, found));
      const postings = [...new Set(requests.filter((r) => !found[r.request_id]).map((r) => r.posting_id))];
      for (const posting of postings) {
        const { events } = await api("GET", `/postings/${encodeURIComponent(posting)}/timeline`);
        for (const e of events) {
          if (e.destination === board && e.request_id && FINAL.has(e.outcome)) found[e.request_id] = e;
        }
      }
      if (Object.keys(found).length < requests.length) await new Promise((r) => setTimeout(r, 1000));
    }
    return found;
  }
}

const FINAL = new Set(["delivered", "closed", "skipped", "dead_lettered"]);

function describeAll(requests, found) {
  return requests.map((r) => {
    const e = found[r.request_id];
    let outcome = "requested, waiting for the consumer…";
    if (e && e.outcome === "skipped") outcome = `skipped (${e.error || "superseded"})`;
    else if (e && e.outcome === "dead_lettered") outcome = `failed again (${e.error})`;
    else if (e) outcome = e.outcome;
    return `${r.posting_id} v${r.version}: ${outcome}`;
  }).join("; ");
}
