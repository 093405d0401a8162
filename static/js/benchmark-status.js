// Benchmarks page: a static file, not an inline script (the Content-Security-Policy allows 'self' only).
// Poll progress while something is running; text is set with textContent, never as HTML.
(function () {
  const root = document.getElementById("benchmark-status");
  if (!root) return;
  const url = root.dataset.statusUrl;
  async function poll() {
    const data = await (await fetch(url, {credentials: "same-origin"})).json();
    let busy = false;
    if (data.build) {
      const s = document.getElementById("build-status"), p = document.getElementById("build-progress"), d = document.getElementById("build-detail");
      if (s) s.textContent = data.build.status;
      if (p) p.value = data.build.percent;
      if (d) d.textContent = `${data.build.done_segments}/${data.build.total_segments} gold pairs, ${data.build.rebuilt_segments} rebuilt, ${data.build.pseudo_created} pseudo translations written, ${data.build.excluded} excluded, ${data.build.transplanted} transplanted`;
      for (const e of data.build.directions || []) {
        const row = document.querySelector(`#build-directions tr[data-direction="${CSS.escape(e.direction)}"]`);
        if (!row) continue;
        row.querySelector(".d-status").textContent = e.error ? `${e.status} ${e.error}` : e.status;
        for (const k of ["gold_pairs", "rebuilt", "pseudo_created", "excluded", "transplanted"]) row.querySelector(`.d-${k}`).textContent = e[k];
      }
      busy = busy || ["pending", "running"].includes(data.build.status);
    }
    for (const r of data.releases) {
      const row = document.querySelector(`tr[data-version="${CSS.escape(r.version)}"]`);
      if (!row) continue;
      row.querySelector(".release-progress").value = r.progress;
      row.querySelector(".release-stage").textContent = r.stage;
      for (const e of r.directions || []) {
        const d = row.querySelector(`.release-directions tr[data-direction="${CSS.escape(e.direction)}"]`);
        if (!d) continue;
        d.querySelector(".d-status").textContent = e.error ? `${e.status} ${e.error}` : e.status;
        d.querySelector(".d-triplets").textContent = e.triplets;
      }
      busy = busy || r.status === "building" || r.push_status === "pushing";
    }
    if (busy) setTimeout(poll, 2000);
  }
  poll().catch(() => {});
})();
