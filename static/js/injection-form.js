// The injection start form shows only the chosen backend's fields (progressive enhancement: without
// JavaScript every field shows, and the server ignores the fields the backend does not read).
(function () {
  "use strict";
  const backend = document.querySelector("select[name=backend]");
  if (!backend) return;
  const show = () => {
    for (const box of document.querySelectorAll("[data-backends]")) {
      box.hidden = !box.dataset.backends.split(" ").includes(backend.value);
    }
  };
  backend.addEventListener("change", show);
  show();
})();
