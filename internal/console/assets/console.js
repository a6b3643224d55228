// The console's own script. Pages work without it; it adds what a browser
// cannot do from HTML alone. It runs under a Content-Security-Policy that
// allows only this origin's files: no inline code, no eval.
(function () {
  "use strict";

  // Copy buttons: <button data-copy="element-id"> copies that element's text.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-copy]");
    if (!b) return;
    var el = document.getElementById(b.getAttribute("data-copy"));
    if (!el || !navigator.clipboard) return;
    navigator.clipboard.writeText(el.textContent.trim()).then(function () {
      var was = b.textContent;
      b.textContent = "Copied";
      setTimeout(function () { b.textContent = was; }, 1500);
    });
  });

  // Confirmations: a form with data-confirm="question" asks before it is sent.
  document.addEventListener("submit", function (ev) {
    var q = ev.target.getAttribute && ev.target.getAttribute("data-confirm");
    if (q && !window.confirm(q)) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
    }
  }, true);
})();

// ---- Assets: upload progress ----
// A form holding <progress data-upload-progress> shows how much of its body
// htmx has sent (htmx:xhr:progress); without JavaScript the form posts as is.
(function () {
  "use strict";
  document.addEventListener("htmx:xhr:progress", function (ev) {
    var form = ev.target && ev.target.closest && ev.target.closest("form");
    var bar = form && form.querySelector("progress[data-upload-progress]");
    if (!bar || !ev.detail || !ev.detail.lengthComputable) return;
    bar.hidden = false;
    bar.max = ev.detail.total;
    bar.value = ev.detail.loaded;
  });
})();
