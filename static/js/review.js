/* Review screen: keyboard-first decisions, sent through an outbox that survives network errors.
 *
 * Every submission gets an idempotency key from the server-rendered page and is written to
 * localStorage (under its user and project) before it is sent; it leaves the outbox only when the server
 * has stored it (2xx) or refused it for good (400/404/409). Retries back off up to 30 s and resume on the
 * next page of the same user: the review page sends that project's, the queue page all of them.
 * Corpus text is rendered by the server (escaped); this script never writes markup built from data.
 */
(function () {
  "use strict";

  /* Unsent work belongs to the user, and the project, it was made for: one storage key each
   * ("xqmeval.outbox.v2:<user id>:<project>"), so on a shared browser a page only ever sees and sends its
   * own user's entries. Every entry records that user (body.client_user) and the server refuses it (403,
   * field client_user) when someone else is logged in; it then stays here for its owner. Entries of the
   * old shared key (v1) have no known owner and are never sent. */
  const PREFIX = "xqmeval.outbox.v2:";

  /* Text from the server or the user (details, names) goes in as textContent of its own <bdi>, so a bidi
   * control character in it cannot reorder the rest of the line. */
  function isolated(text) {
    const bdi = document.createElement("bdi");
    bdi.textContent = text == null ? "" : String(text);
    return bdi;
  }
  window.XQIsolated = isolated;

  function readConfig(id) {
    const node = document.getElementById(id);
    if (!node) return null;
    try { return JSON.parse(node.textContent); } catch (e) { return null; }
  }

  // The signed-in user of any page (base.html puts the id on <body>): whose unsent work this page may send.
  function pageOwner() {
    const id = document.body && document.body.dataset.outboxUser;
    return id ? {user: Number(id)} : null;
  }

  function makeOutbox(user, project) {
    return {
      user: String(user),
      project: project,
      KEY: PREFIX + user + ":" + project,
      all() {
        try { return JSON.parse(localStorage.getItem(this.KEY) || "[]"); } catch (e) { return []; }
      },
      save(list) {
        try {
          if (list.length) localStorage.setItem(this.KEY, JSON.stringify(list));
          else localStorage.removeItem(this.KEY);
        } catch (e) { /* storage full or blocked: still sent below */ }
      },
      put(entry) {
        if (entry.body.client_user == null) entry.body.client_user = Number(this.user);
        this.save(this.all().filter((e) => e.id !== entry.id).concat([entry]));
      },
      remove(id) { this.save(this.all().filter((e) => e.id !== id)); },
      csrf() {
        // The cookie first: a login in another tab rotates it, and the page's own token goes stale.
        const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
        if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
        const input = document.querySelector("input[name=csrfmiddlewaretoken]");
        return input ? input.value : "";
      },
      /* Deliver one entry; resolves {ok:true,data} or {ok:false,status,detail,kept} once it is settled, or
       * {ok:false,cancelled:true} once ``control.cancelled`` is set (the review screen's undo): checked before
       * each attempt, and ``control.wake()`` ends the wait between two. An attempt already under way is
       * let finish, so what it stored is known before anything queued after it is sent. */
      async deliver(entry, onWaiting, control) {
        if (!entry.body || String(entry.body.client_user) !== this.user) {
          return { ok: false, status: 0, kept: true, detail: "recorded for another user; kept for them" };
        }
        let delay = 1000;
        for (;;) {
          if (control && control.cancelled) return { ok: false, cancelled: true };
          let status = 0, data = {};
          try {
            const response = await fetch(entry.url, {
              method: "POST",
              credentials: "same-origin",
              headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": this.csrf() },
              body: JSON.stringify(entry.body),
            });
            status = response.status;
            data = await response.json().catch(() => ({}));
          } catch (e) {
            status = 0;
          }
          if (status >= 200 && status < 300) { this.remove(entry.id); return { ok: true, data }; }
          if (status === 403 && data && data.field === "client_user") {
            // Someone else is logged in now (another tab): keep it for its owner, send nothing more.
            return { ok: false, status, kept: true, detail: data.detail };
          }
          if (status === 400 || status === 404 || status === 409) {
            this.remove(entry.id);
            return { ok: false, status, detail: data.detail || firstError(data) || ("refused (" + status + ")") };
          }
          if (control && control.cancelled) return { ok: false, cancelled: true };
          if (onWaiting) onWaiting(status, delay);
          await new Promise((resolve) => {
            if (control) control.wake = resolve;
            setTimeout(resolve, delay);
          });
          delay = Math.min(delay * 2, 30000);
        }
      },
    };
  }

  /* Every project's outbox of one user (the queue page sends them all). */
  function outboxesOf(user) {
    const mine = PREFIX + user + ":";
    const out = [];
    try {
      for (let i = 0; i < localStorage.length; i++) {
        const k = localStorage.key(i);
        if (k && k.startsWith(mine)) out.push(makeOutbox(user, k.slice(mine.length)));
      }
    } catch (e) { /* storage blocked */ }
    return out;
  }

  const owner = readConfig("review-config") || readConfig("rating-config") || readConfig("spans-config") || pageOwner();
  const Outbox = owner && owner.user != null ? makeOutbox(owner.user, owner.project || "") : null;
  window.XQOutbox = Outbox;

  function firstError(data) {
    if (!data || typeof data !== "object") return "";
    for (const [field, value] of Object.entries(data)) {
      if (Array.isArray(value) && value.length) return field + ": " + value[0];
    }
    return "";
  }

  function waitingText(status, delay) {
    const why = status === 0 ? "Network error" : (status === 401 || status === 403) ? "Not accepted (are you still logged in?)" : "Server error " + status;
    return why + ": kept on this device, retrying in " + Math.round(delay / 1000) + " s…";
  }

  /* The queue page lists this user's unsent decisions and ratings (any project) and sends them. */
  async function sendLeftovers(user) {
    const boxes = outboxesOf(user).filter((box) => box.all().length);
    const total = boxes.reduce((n, box) => n + box.all().length, 0);
    if (!total) return;
    const notice = document.createElement("p");
    notice.id = "outbox-notice";
    notice.className = "notice";
    notice.setAttribute("role", "status");
    const main = document.querySelector("main");
    main.insertBefore(notice, main.firstChild);
    notice.textContent = total + " decision(s) or rating(s) saved on this device were not sent yet; sending…";
    let sent = 0;
    const refused = [];
    for (const box of boxes) {
      for (const entry of box.all()) {
        const result = await box.deliver(entry, (status, delay) => {
          notice.textContent = waitingText(status, delay);
        });
        if (result.ok) sent += 1;
        else refused.push([box.project, result.detail]);
      }
    }
    notice.replaceChildren("Sent " + sent + " saved decision(s) or rating(s)." + (refused.length ? " Not sent:" : " ✓"));
    refused.forEach(([project, detail], i) => {
      notice.append(i ? "; " : " ", isolated(project), ": ", isolated(detail));
    });
  }

  /* Time on item counts only while the page is visible. */
  const Timer = {
    spent: 0,
    since: document.hidden ? null : performance.now(),
    init() {
      document.addEventListener("visibilitychange", () => {
        if (document.hidden && this.since !== null) { this.spent += performance.now() - this.since; this.since = null; }
        else if (!document.hidden && this.since === null) { this.since = performance.now(); }
      });
    },
    ms() { return Math.round(this.spent + (this.since === null ? 0 : performance.now() - this.since)); },
  };
  window.XQTimer = Timer;

  /* The status line of a screen's submissions (#send-status): ``say`` writes a text, then any untrusted
   * text in its own bidi isolate, and marks the line (kind: ok, error). */
  function statusLine(line) {
    return function say(text, kind, untrusted) {
      line.replaceChildren(text);
      if (untrusted !== undefined) line.append(isolated(untrusted));
      line.className = "send-status" + (kind ? " " + kind : "");
    };
  }

  /* The start of the rating and span screens (rating.js, spans.js): the time on the item counts from now;
   * what they share: their page's config, the outbox, the timer, their status line (say) and send(entry),
   * which keeps a submission in the outbox first and retries it while the server cannot take it, the status
   * line saying so. null on a page without that config, or without an outbox. */
  function startScreen(configId) {
    const node = document.getElementById(configId);
    if (!node || !Outbox) return null;
    const cfg = JSON.parse(node.textContent);
    Timer.init();
    const say = statusLine(document.getElementById("send-status"));
    function send(entry) {
      Outbox.put(entry);
      say("Saving…");
      return Outbox.deliver(entry, (status, delay) =>
        say((status === 0 ? "Network error" : "Not accepted (" + status + ")") + ": kept on this device, retrying in " + Math.round(delay / 1000) + " s…", "error"));
    }
    return { cfg, Outbox, Timer, say, send };
  }
  window.XQStartScreen = startScreen;

  /* The start page (GET …/next/ takes no lock): press its Start button once the page is really shown, never
   * while a browser prerenders it, so a prefetch takes nothing. Without JavaScript the button stays. */
  const autostart = document.querySelector("form[data-autostart]");
  if (autostart) {
    const go = () => autostart.requestSubmit();
    if (document.prerendering) document.addEventListener("prerenderingchange", go, {once: true});
    else go();
  }

  const configNode = document.getElementById("review-config");
  if (!configNode) {
    // The queue page: focus the first Start/Resume link so Enter begins reviewing without a mouse.
    const start = document.querySelector("a[data-start]");
    if (start && !document.getElementById("rating-config")) start.focus();
    const queueOwner = pageOwner();
    // the span screen sends its own leftovers (static/js/spans.js)
    if (queueOwner && queueOwner.user != null && !document.getElementById("spans-config")) sendLeftovers(queueOwner.user);
    return;
  }
  const cfg = JSON.parse(configNode.textContent);
  Timer.init();

  const form = document.getElementById("decision-form");
  const say = statusLine(document.getElementById("send-status"));
  const comment = document.getElementById("comment");
  const help = document.getElementById("help");
  const panels = { reject: document.getElementById("reject-panel"), skip: document.getElementById("skip-panel") };
  const key = form.querySelector("input[name=idempotency_key]").value;
  const withdrawButton = document.getElementById("withdraw-button");
  let busy = false;
  /* This page's own submission while it is being sent ({entry, control}): W withdraws it. Every send waits
   * for the one before (one chain), so an undo reaches the server after what it undoes. */
  let current = null;
  let chain = Promise.resolve();

  function openPanel(name) {
    for (const [n, panel] of Object.entries(panels)) panel.dataset.open = String(n === name);
    const checked = panels[name].querySelector("input:checked") || panels[name].querySelector("input");
    if (checked) checked.focus();
  }
  function openPanelName() {
    for (const [n, panel] of Object.entries(panels)) if (panel.dataset.open === "true") return n;
    return null;
  }
  function closePanels() { for (const panel of Object.values(panels)) panel.dataset.open = "false"; }
  function toggleHelp(show) {
    help.hidden = show === undefined ? !help.hidden : !show;
    if (!help.hidden) document.getElementById("help-close").focus();
  }
  function setBusy(value) {
    busy = value;
    for (const b of form.querySelectorAll("button")) b.disabled = value && b !== withdrawButton;
  }
  function isWithdrawal(entry) { return entry.id.startsWith("withdraw:"); }
  function randomKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function send(entry, isCurrent) {
    Outbox.put(entry);
    const job = { entry, control: { cancelled: false, wake: null } };
    if (isCurrent) {
      setBusy(true);
      if (isWithdrawal(entry)) withdrawButton.disabled = true;
      else if (cfg.open) { current = job; withdrawButton.hidden = false; }  // an undo for what is being sent
    }
    const run = chain.then(() => deliverJob(job, isCurrent));
    chain = run.catch(() => {});
    return run;
  }

  async function deliverJob(job, isCurrent) {
    if (job.control.cancelled) return;
    const entry = job.entry;
    say(isCurrent ? (isWithdrawal(entry) ? "Withdrawing…" : "Saving…") : "Sending a decision saved earlier…");
    const result = await Outbox.deliver(entry, (status, delay) => say(waitingText(status, delay), "error"), job.control);
    if (current === job) current = null;
    // withdrawn meanwhile (an attempt under way may still have stored it): stay here for the withdrawal
    if (result.cancelled || job.control.cancelled) return;
    if (result.ok) {
      if (isCurrent && isWithdrawal(entry)) {
        say("Withdrawn ✓ — this item is yours to decide again.", "ok");
        window.location.assign(window.location.href);  // the page as the server now has it: undecided
      } else if (isCurrent) {
        say("Saved ✓ — loading the next item…", "ok");
        window.location.assign(cfg.nextUrl);
      } else {
        say("");
      }
      return;
    }
    setBusy(false);
    say(isWithdrawal(entry) ? "Not withdrawn: " : "Not saved: ", "error", result.detail);
  }

  /* Undo: stop sending this page's decision or skip if it is still on its way (kept on this device), then
   * withdraw whatever of it the server stored, through the same outbox (a lost connection keeps the undo
   * too). The server's rule decides: open rounds only. */
  function withdraw() {
    if (withdrawButton.hidden || withdrawButton.disabled) return;
    if (current) {
      current.control.cancelled = true;
      Outbox.remove(current.entry.id);
      if (current.control.wake) current.control.wake();
      current = null;
    }
    send({
      id: "withdraw:" + randomKey(),
      url: cfg.withdrawalsUrl,
      body: { candidate: cfg.candidate, round: cfg.round, client_user: cfg.user },
    }, true);
  }

  function decide(action) {
    if (busy) return;
    const reason = action === "reject" ? (panels.reject.querySelector("input[name=reason]:checked") || {}).value || "" : "";
    send({
      id: "decision:" + key,
      url: cfg.decisionsUrl,
      body: {
        candidate: cfg.candidate, round: cfg.round, decision: action, reason: reason,
        comment: comment.value, time_spent_ms: Timer.ms(), idempotency_key: key, client_user: cfg.user,
      },
    }, true);
  }
  function skip() {
    if (busy) return;
    const reason = (panels.skip.querySelector("input[name=skip_reason]:checked") || {}).value || "unsure";
    send({ id: "skip:" + key, url: cfg.skipsUrl, body: { candidate: cfg.candidate, round: cfg.round, reason: reason, comment: comment.value, client_user: cfg.user } }, true);
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const action = ev.submitter ? ev.submitter.value : null;
    if (action === "skip") skip();
    else if (action === "withdraw") withdraw();
    else if (action === "accept" || action === "reject") decide(action);
  });
  document.getElementById("reject-open").addEventListener("click", () => openPanel("reject"));
  document.getElementById("skip-open").addEventListener("click", () => openPanel("skip"));
  document.getElementById("help-button").addEventListener("click", () => toggleHelp(true));
  document.getElementById("help-close").addEventListener("click", () => toggleHelp(false));

  document.addEventListener("keydown", (ev) => {
    const typing = ev.target instanceof HTMLElement && ev.target.matches("textarea, input[type=text]");
    if (ev.key === "Escape") {
      ev.preventDefault();
      if (!help.hidden) toggleHelp(false);
      else if (typing) ev.target.blur();
      else closePanels();
      return;
    }
    if (typing) {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        const open = openPanelName();
        if (open === "skip") skip(); else if (open === "reject") decide("reject");
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (!help.hidden) {
      if (ev.key === "?") { ev.preventDefault(); toggleHelp(false); }
      return;
    }
    const open = openPanelName();
    const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (/^[1-9]$/.test(k) && open) {
      const radios = panels[open].querySelectorAll("input[type=radio]");
      const radio = radios[Number(k) - 1];
      if (radio) { radio.checked = true; radio.focus(); }
      ev.preventDefault();
      return;
    }
    const actions = {
      a: () => decide("accept"),
      r: () => openPanel("reject"),
      s: () => openPanel("skip"),
      c: () => comment.focus(),
      n: () => { const link = document.getElementById("next-link"); if (link) window.location.assign(link.href); },
      p: () => { if (cfg.previousUrl) window.location.assign(cfg.previousUrl); },
      w: () => withdraw(),
      "?": () => toggleHelp(true),
      Enter: () => { if (open === "reject") decide("reject"); else if (open === "skip") skip(); },
    };
    if (actions[k]) { ev.preventDefault(); actions[k](); }
  });

  /* Decisions left over from an earlier page (a lost connection, a closed tab) are sent first. */
  (async () => {
    for (const entry of Outbox.all()) {
      if (entry.id === "decision:" + key || entry.id === "skip:" + key) continue;
      const isThisItem = entry.body && entry.body.candidate === cfg.candidate && entry.body.round === cfg.round;
      await send(entry, isThisItem);
      if (isThisItem) return;
    }
  })();
})();
