/* Error-span annotation screen (ESA and MQM): spans by mouse drag or by keyboard alone, snapped to the
 * tokens the server rendered (whole words; characters in scripts written without spaces), with their offsets
 * in data-s/data-e, so this script never computes an offset itself. Pre-filled (ESA-AI) spans carry their
 * ai_index while kept or edited; deleting one drops it. A draft of the spans and score is kept in
 * localStorage (a reload resumes it); the submission goes through the review screen's outbox (review.js):
 * kept on this device and retried with the same idempotency key until the server answers. Text from the page
 * is only ever set as textContent. */
(function () {
  "use strict";
  const screen = window.XQStartScreen && window.XQStartScreen("spans-config");
  if (!screen) return;
  const { cfg, Outbox, Timer, say, send } = screen;

  const DRAFT = "xqmeval.spans.draft:" + cfg.user + ":" + cfg.annotation;
  const form = document.getElementById("spans-form");
  const list = document.getElementById("span-list");
  const count = document.getElementById("span-count");
  const message = document.getElementById("spans-message");
  const selStatus = document.getElementById("selection-status");
  const help = document.getElementById("help");
  const scoreInput = document.getElementById("score");
  const scoreRange = document.getElementById("score-range");
  const mqmOut = document.getElementById("mqm-score");
  const newCategory = document.getElementById("new-category");
  const WEIGHTS = { minor: 1, major: 5, critical: Number(cfg.criticalWeight || 25) };

  const sides = {};
  for (const el of document.querySelectorAll(".tokens")) {
    const words = Array.from(el.querySelectorAll(".tok:not(.sp)"));
    sides[el.dataset.side] = {
      el, words, all: Array.from(el.querySelectorAll(".tok")),
      rtl: el.getAttribute("dir") === "rtl", cursor: 0, anchor: null,
    };
  }

  let spans = [];
  let undoStack = [];
  let busy = false;
  let attempt = 0;

  function clone(x) { return JSON.parse(JSON.stringify(x)); }
  function s(tok) { return Number(tok.dataset.s); }
  function e(tok) { return Number(tok.dataset.e); }
  function textOf(side, start, end) {
    return sides[side].all.filter((t) => s(t) >= start && e(t) <= end).map((t) => t.textContent).join("");
  }

  function saveDraft() {
    try {
      localStorage.setItem(DRAFT, JSON.stringify({ spans, score: scoreInput ? scoreInput.value : null }));
    } catch (err) { /* storage blocked: the page still works */ }
  }
  function change(mutator) {
    undoStack.push(clone(spans));
    if (undoStack.length > 200) undoStack.shift();
    mutator();
    spans.sort((a, b) => (a.side === b.side ? a.start - b.start : a.side < b.side ? -1 : 1));
    saveDraft();
    render();
  }
  function undo() {
    if (!undoStack.length) { selStatus.textContent = "Nothing to undo."; return; }
    spans = undoStack.pop();
    saveDraft();
    render();
    selStatus.textContent = "Undone.";
  }

  function severityChoice() {
    const checked = form.querySelector("input[name=new-severity]:checked");
    return checked ? checked.value : cfg.severities[0];
  }

  /* A new span replaces those it overlaps on its side; overlapping exactly one pre-filled span, it is that
   * span edited (it keeps its ai_index). */
  function addSpan(side, start, end, severity) {
    if (!cfg.severities.includes(severity)) return;
    change(() => {
      const hit = spans.filter((x) => x.side === side && x.start < end && start < x.end);
      const ai = hit.filter((x) => x.ai_index != null);
      spans = spans.filter((x) => !hit.includes(x));
      spans.push({
        side, start, end, severity,
        category: cfg.protocol === "mqm" ? (newCategory ? newCategory.value : cfg.categories[0]) : "",
        ai_index: ai.length === 1 ? ai[0].ai_index : null,
      });
    });
    selStatus.textContent = "Marked " + severity + ": " + textOf(side, start, end);
  }

  function spanAt(side, tok) {
    return spans.find((x) => x.side === side && x.start <= s(tok) && e(tok) <= x.end);
  }

  function render() {
    for (const [side, st] of Object.entries(sides)) {
      for (const tok of st.all) {
        const span = spans.find((x) => x.side === side && x.start <= s(tok) && e(tok) <= x.end);
        tok.classList.remove("err-minor", "err-major", "err-critical", "ai");
        if (span) {
          tok.classList.add("err-" + span.severity);
          if (span.ai_index != null) tok.classList.add("ai");
        }
      }
      paintSelection(side);
    }
    list.replaceChildren();
    spans.forEach((span, i) => {
      const li = document.createElement("li");
      li.dataset.index = String(i);
      const excerpt = document.createElement("bdi");
      excerpt.className = "excerpt";
      excerpt.textContent = textOf(span.side, span.start, span.end);
      const where = document.createElement("span");
      where.className = "muted small";
      where.textContent = span.side === "source" ? "source (omission)" : "translation";
      const sev = document.createElement("select");
      sev.setAttribute("aria-label", "Severity of error " + (i + 1));
      sev.className = "span-severity";
      for (const v of cfg.severities) sev.append(new Option(v, v, false, v === span.severity));
      sev.addEventListener("change", () => change(() => { spans[i].severity = sev.value; }));
      li.append(excerpt, " ", where, " ", sev);
      if (cfg.protocol === "mqm") {
        const cat = document.createElement("select");
        cat.setAttribute("aria-label", "Category of error " + (i + 1));
        cat.className = "span-category";
        for (const v of cfg.categories) cat.append(new Option(v, v, false, v === span.category));
        cat.addEventListener("change", () => change(() => { spans[i].category = cat.value; }));
        li.append(" ", cat);
      }
      if (span.ai_index != null) {
        const badge = document.createElement("span");
        badge.className = "badge";
        badge.textContent = "suggested by the metric";
        li.append(" ", badge);
      }
      const del = document.createElement("button");
      del.type = "button";
      del.className = "span-delete";
      del.textContent = "Delete";
      del.setAttribute("aria-label", "Delete error " + (i + 1));
      del.addEventListener("click", () => change(() => { spans.splice(i, 1); }));
      li.append(" ", del);
      list.append(li);
    });
    count.textContent = String(spans.length);
    if (mqmOut) {
      const total = spans.reduce((n, x) => n + (WEIGHTS[x.severity] || 0), 0);
      mqmOut.textContent = String(Math.max(-25, -total));
    }
  }

  function paintSelection(side) {
    const st = sides[side];
    const [lo, hi] = selectionRange(side);
    st.words.forEach((tok, i) => {
      tok.classList.toggle("cursor", document.activeElement === st.el && i === st.cursor);
      tok.classList.toggle("sel", lo !== null && i >= lo && i <= hi);
    });
  }
  function selectionRange(side) {
    const st = sides[side];
    if (st.anchor === null) return [null, null];
    return [Math.min(st.anchor, st.cursor), Math.max(st.anchor, st.cursor)];
  }
  function markSelection(side, severity) {
    const st = sides[side];
    if (!st.words.length) return;
    let [lo, hi] = selectionRange(side);
    if (lo === null) { lo = hi = st.cursor; }
    addSpan(side, s(st.words[lo]), e(st.words[hi]), severity);
    st.anchor = null;
    paintSelection(side);
  }

  /* ---- mouse: press on a word, drag, release ---- */
  let drag = null;
  for (const [side, st] of Object.entries(sides)) {
    st.el.addEventListener("mousedown", (ev) => {
      const tok = ev.target.closest(".tok:not(.sp)");
      if (!tok || ev.button !== 0) return;
      ev.preventDefault();
      st.el.focus();
      const i = st.words.indexOf(tok);
      drag = { side, from: i, moved: false };
      st.anchor = i; st.cursor = i;
      paintSelection(side);
    });
    st.el.addEventListener("mouseover", (ev) => {
      if (!drag || drag.side !== side) return;
      const tok = ev.target.closest(".tok:not(.sp)");
      if (!tok) return;
      const i = st.words.indexOf(tok);
      if (i !== st.cursor) { drag.moved = true; st.cursor = i; paintSelection(side); }
    });
    st.el.addEventListener("focus", () => paintSelection(side));
    st.el.addEventListener("blur", () => paintSelection(side));
  }
  document.addEventListener("mouseup", (ev) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    const st = sides[d.side];
    const tok = ev.target.closest && ev.target.closest(".tok:not(.sp)");
    if (!d.moved) {
      const existing = tok ? spanAt(d.side, tok) : null;
      if (existing) {  // a click on a marked word selects its error in the list
        st.anchor = null;
        paintSelection(d.side);
        const li = list.querySelector('li[data-index="' + spans.indexOf(existing) + '"] select');
        if (li) li.focus();
        return;
      }
    }
    markSelection(d.side, severityChoice());
  });

  /* ---- keyboard ---- */
  function move(side, forward, extend) {
    const st = sides[side];
    if (!st.words.length) return;
    if (extend && st.anchor === null) st.anchor = st.cursor;
    if (!extend) st.anchor = null;
    st.cursor = Math.max(0, Math.min(st.words.length - 1, st.cursor + (forward ? 1 : -1)));
    paintSelection(side);
    const [lo, hi] = selectionRange(side);
    selStatus.textContent = lo === null ? st.words[st.cursor].textContent
      : "Selected: " + textOf(side, s(st.words[lo]), e(st.words[hi]));
  }
  function cycleSeverity(side) {
    const st = sides[side];
    const span = st.words.length ? spanAt(side, st.words[st.cursor]) : null;
    if (!span) { selStatus.textContent = "No error under the cursor."; return; }
    const i = spans.indexOf(span);
    const next = cfg.severities[(cfg.severities.indexOf(span.severity) + 1) % cfg.severities.length];
    change(() => { spans[i].severity = next; });
    selStatus.textContent = "Now " + next + ": " + textOf(side, span.start, span.end);
  }
  function deleteAtCursor(side) {
    const st = sides[side];
    const span = st.words.length ? spanAt(side, st.words[st.cursor]) : null;
    if (!span) { selStatus.textContent = "No error under the cursor."; return; }
    change(() => { spans.splice(spans.indexOf(span), 1); });
    selStatus.textContent = "Deleted: " + textOf(side, span.start, span.end);
  }

  document.addEventListener("keydown", (ev) => {
    const typing = ev.target instanceof HTMLElement && ev.target.matches("input[type=text], input[type=number], textarea, select");
    if (ev.key === "Escape") {
      if (!help.hidden) { help.hidden = true; ev.preventDefault(); }
      return;
    }
    if (!help.hidden) { if (ev.key === "?") { help.hidden = true; ev.preventDefault(); } return; }
    if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "z" && !typing) { ev.preventDefault(); undo(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (typing) {
      if (ev.key === "Enter" && ev.target === scoreInput) { ev.preventDefault(); submit(); }
      return;
    }
    const textEl = ev.target instanceof HTMLElement ? ev.target.closest(".tokens") : null;
    const side = textEl ? textEl.dataset.side : null;
    if (side && (ev.key === "ArrowRight" || ev.key === "ArrowLeft")) {
      ev.preventDefault();
      move(side, (ev.key === "ArrowRight") !== sides[side].rtl, ev.shiftKey);
      return;
    }
    if (side && (ev.key === "Home" || ev.key === "End")) {
      ev.preventDefault();
      const st = sides[side];
      st.anchor = ev.shiftKey ? (st.anchor === null ? st.cursor : st.anchor) : null;
      st.cursor = ev.key === "Home" ? 0 : st.words.length - 1;
      paintSelection(side);
      return;
    }
    if (side && /^[1-3]$/.test(ev.key)) {
      const severity = cfg.severities[Number(ev.key) - 1];
      if (severity) { ev.preventDefault(); markSelection(side, severity); }
      return;
    }
    if (side && (ev.key === "Delete" || ev.key === "Backspace")) { ev.preventDefault(); deleteAtCursor(side); return; }
    if (side && ev.key.toLowerCase() === "s") { ev.preventDefault(); cycleSeverity(side); return; }
    if (ev.key.toLowerCase() === "u") { ev.preventDefault(); undo(); return; }
    if (ev.key === "?") { ev.preventDefault(); help.hidden = false; document.getElementById("help-close").focus(); return; }
    if (ev.key === "Enter" && (side || ev.target === document.body)) { ev.preventDefault(); submit(); }
  });

  /* ---- score ---- */
  if (scoreInput && scoreRange) {
    scoreRange.addEventListener("input", () => { scoreInput.value = scoreRange.value; saveDraft(); });
    scoreInput.addEventListener("input", () => {
      if (scoreInput.value !== "") scoreRange.value = scoreInput.value;
      saveDraft();
    });
  }

  /* ---- submit through the outbox ---- */
  async function submit() {
    if (busy) return;
    let score = null;
    if (cfg.protocol === "esa") {
      const raw = scoreInput.value.trim();
      score = raw === "" ? NaN : Number(raw);
      if (!(score >= 0 && score <= 100)) {
        message.textContent = "Give the translation a score from 0 to 100 before submitting.";
        scoreInput.focus();
        return;
      }
    }
    message.textContent = "";
    const key = cfg.key + (attempt ? "-" + attempt : "");
    const body = {
      spans: spans.map((x) => ({ side: x.side, start: x.start, end: x.end, severity: x.severity, category: x.category || "", ai_index: x.ai_index })),
      score: score, active_ms: Timer.ms(), idempotency_key: key, client_user: cfg.user,
    };
    const entry = { id: "spans:" + key, url: cfg.submitUrl, body };
    busy = true;
    const result = await send(entry);
    busy = false;
    if (result.ok) {
      try { localStorage.removeItem(DRAFT); } catch (err) { /* blocked */ }
      say("Saved ✓ — loading the next item…", "ok");
      window.location.assign(cfg.nextUrl);
      return;
    }
    if (!result.kept) { Outbox.remove(entry.id); attempt += 1; }
    say("Not saved: ", "error", result.detail);
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); submit(); });
  document.getElementById("undo-button").addEventListener("click", undo);
  document.getElementById("help-button").addEventListener("click", () => { help.hidden = false; document.getElementById("help-close").focus(); });
  document.getElementById("help-close").addEventListener("click", () => { help.hidden = true; });

  /* ---- start: a draft of this page (reload), else what the server holds, else the pre-filled spans ---- */
  let draft = null;
  try { draft = JSON.parse(localStorage.getItem(DRAFT) || "null"); } catch (err) { draft = null; }
  spans = draft && Array.isArray(draft.spans) ? draft.spans : clone(cfg.spans || []);
  if (scoreInput) {
    const value = draft && draft.score != null && draft.score !== "" ? draft.score : (cfg.score != null ? String(Math.round(cfg.score)) : "");
    scoreInput.value = value;
    if (value !== "") scoreRange.value = value;
  }
  render();
  if (draft) selStatus.textContent = "Resumed your unsaved work on this item.";

  (async () => {  // submissions left in the outbox by an earlier page
    for (const entry of Outbox.all()) {
      if (entry.id.startsWith("spans:") && !entry.id.startsWith("spans:" + cfg.key)) await Outbox.deliver(entry);
    }
  })();
})();
