// Agreement pages: while the report of the stored decisions is being computed in the background, reload
// every data-refresh-seconds to pick it up. Not while someone types in a form field (the gold form): then
// wait for the next tick, so nothing typed is lost. Without JavaScript a <noscript> meta refresh does it.
(function () {
  "use strict";
  const state = document.getElementById("refresh-state");
  const seconds = state ? Number(state.dataset.refreshSeconds) : 0;
  if (!seconds) return;
  function tick() {
    const active = document.activeElement;
    if (active && active.matches("input, select, textarea")) {
      window.setTimeout(tick, seconds * 1000);
      return;
    }
    window.location.reload();
  }
  window.setTimeout(tick, seconds * 1000);
})();
