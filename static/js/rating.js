/* Likert rating screen: four dimensions, keys 1–5 and arrows, all four required before submit.
 * Sends through the outbox of review.js (localStorage per user and project, retries with the same
 * idempotency key). */
(function () {
  "use strict";
  const screen = window.XQStartScreen && window.XQStartScreen("rating-config");
  if (!screen) return;
  const { cfg, Outbox, Timer, say, send } = screen;

  const form = document.getElementById("rating-form");
  const message = document.getElementById("rating-message");
  const help = document.getElementById("help");
  const dims = Array.from(form.querySelectorAll(".dimension"));
  const key = form.querySelector("input[name=idempotency_key]").value;
  let active = 0;
  let busy = false;

  function value(dim) {
    const checked = dim.querySelector("input:checked");
    return checked ? Number(checked.value) : null;
  }
  function setValue(dim, v) {
    const radio = dim.querySelector('input[value="' + v + '"]');
    if (radio) { radio.checked = true; dim.classList.remove("missing"); }
  }
  function setActive(i) {
    active = Math.max(0, Math.min(dims.length - 1, i));
    dims.forEach((d, j) => d.classList.toggle("active", j === active));
    dims[active].scrollIntoView({ block: "nearest" });
  }
  function missing() { return dims.filter((d) => value(d) === null); }

  async function submit() {
    if (busy) return;
    const gaps = missing();
    dims.forEach((d) => d.classList.toggle("missing", gaps.includes(d)));
    if (gaps.length) {
      const names = gaps.map((d) => d.querySelector(".dim-name").textContent);
      message.textContent = "Rate all four dimensions before submitting. Missing: " + names.join(", ") + ".";
      setActive(dims.indexOf(gaps[0]));
      return;
    }
    message.textContent = "";
    const body = { item: cfg.item, time_spent_ms: Timer.ms(), idempotency_key: key, client_user: cfg.user };
    dims.forEach((d) => { body[d.dataset.dimension] = value(d); });
    const entry = { id: "rating:" + key, url: cfg.ratingsUrl, body };
    busy = true;
    const result = await send(entry);
    if (result.ok) { say("Saved ✓ — loading the next item…", "ok"); window.location.assign(cfg.nextUrl); return; }
    busy = false;
    say("Not saved: ", "error", result.detail);
  }

  dims.forEach((d, i) => d.addEventListener("click", () => setActive(i)));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); submit(); });
  document.getElementById("help-button").addEventListener("click", () => { help.hidden = false; });
  document.getElementById("help-close").addEventListener("click", () => { help.hidden = true; });

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "Escape" || (ev.key === "?" && !help.hidden)) { help.hidden = true; ev.preventDefault(); return; }
    if (!help.hidden) return;
    const dim = dims[active];
    if (/^[1-5]$/.test(ev.key)) {
      ev.preventDefault();
      setValue(dim, Number(ev.key));
      const next = dims.findIndex((d, j) => j > active && value(d) === null);
      setActive(next === -1 ? Math.min(active + 1, dims.length - 1) : next);
      return;
    }
    const moves = {
      ArrowDown: () => setActive(active + 1),
      ArrowUp: () => setActive(active - 1),
      ArrowRight: () => setValue(dim, Math.min(5, (value(dim) || 2) + 1)),
      ArrowLeft: () => setValue(dim, Math.max(1, (value(dim) || 4) - 1)),
      Enter: () => submit(),
      "?": () => { help.hidden = false; },
    };
    if (moves[ev.key]) { ev.preventDefault(); moves[ev.key](); }
  });

  const firstEmpty = dims.findIndex((d) => value(d) === null);
  setActive(firstEmpty === -1 ? 0 : firstEmpty);

  (async () => {  // ratings left in the outbox by an earlier page
    for (const entry of Outbox.all()) {
      if (entry.id.startsWith("rating:") && entry.id !== "rating:" + key) await Outbox.deliver(entry);
    }
  })();
})();
