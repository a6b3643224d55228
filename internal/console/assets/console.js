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
  // ---- Live streams ----
  // <section data-live-stream="URL" data-live-run="run_x"> follows a thread's
  // Server-Sent Events and appends the run's events to its
  // [data-live-timeline], in the shape the server renders them. Text is set
  // with textContent only: what models and tools say is never parsed as
  // HTML. EventSource resumes after the last event it got (Last-Event-ID)
  // when the connection drops; streams close when htmx swaps the page.
  var streams = [];

  function closeStreams() {
    streams.forEach(function (s) { s.close(); });
    streams = [];
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function pretty(v) {
    if (typeof v === "string") {
      try { return JSON.stringify(JSON.parse(v), null, 2); } catch (e) { return v; }
    }
    return JSON.stringify(v, null, 2);
  }

  var finished = { succeeded: true, failed: true, cancelled: true };

  // reloadPage shows the page again in place. Leaving the page meanwhile
  // aborts the request, which is no error.
  function reloadPage() {
    var p = window.htmx.ajax("GET", window.location.pathname, { target: "#page", select: "#page", swap: "outerHTML" });
    if (p && p.catch) p.catch(function () {});
  }

  function follow(section) {
    var url = section.getAttribute("data-live-stream");
    var runID = section.getAttribute("data-live-run");
    var list = section.querySelector("[data-live-timeline]");
    if (!url || !list || !window.EventSource) return;
    var page = section.closest("#page") || document;
    var es = new EventSource(url);
    section.svcStream = es;
    streams.push(es);

    // item starts a timeline entry for event ev.
    function item(ev) {
      var li = el("li", "event event-" + ev.type);
      li.setAttribute("data-seq", ev.seq);
      var head = el("div", "event-head");
      head.appendChild(el("span", "badge", ev.type));
      head.appendChild(document.createTextNode(" "));
      head.appendChild(el("span", "muted", "#" + ev.seq + " · " + ev.at));
      li.appendChild(head);
      return li;
    }

    function details(li, summary, data) {
      var d = el("details");
      d.appendChild(el("summary", null, summary));
      d.appendChild(el("pre", null, pretty(data)));
      li.appendChild(d);
    }

    function line(li, before, code, after) {
      var p = el("p", null, before);
      if (code !== undefined) p.appendChild(el("code", null, code));
      if (after) p.appendChild(document.createTextNode(after));
      li.appendChild(p);
      return p;
    }

    function setStatus(status) {
      var badge = page.querySelector("[data-live-status]");
      if (!badge) return;
      badge.textContent = status;
      badge.className = "status status-" + status;
    }

    // current is the entry streamed text accumulates into: the page's last
    // one when it ends with text still streaming.
    var current = list.lastElementChild;
    if (current && !current.classList.contains("event-message.delta")) current = null;

    function handle(msg) {
      var ev;
      try { ev = JSON.parse(msg.data); } catch (e) { return; }
      if (runID && ev.run_id !== runID) return;
      var data = ev.data || {};
      if (ev.type === "message.delta") {
        if (!current) {
          current = item(ev);
          current.appendChild(el("p", "message-text"));
          list.appendChild(current);
        }
        current.setAttribute("data-seq", ev.seq);
        current.querySelector(".message-text").textContent += data.text || "";
        return;
      }
      var li = item(ev);
      switch (ev.type) {
        case "message.completed":
          if (current) {
            current.querySelector(".message-text").textContent = data.content || "";
            current = null;
          }
          li.appendChild(el("p", "message-role", data.role));
          if (data.content) li.appendChild(el("p", "message-text", data.content));
          (data.tool_calls || []).forEach(function (c) {
            line(li, "Calls ", c.name);
            li.appendChild(el("pre", null, pretty(c.arguments)));
          });
          break;
        case "tool.call":
          current = null;
          line(li, "Tool call ", data.name);
          li.appendChild(el("pre", null, pretty(data.arguments)));
          break;
        case "tool.result":
          current = null;
          var p = line(li, "Tool result of ", data.name);
          if (data.is_error) { p.appendChild(document.createTextNode(" ")); p.appendChild(el("span", "status status-failed", "error")); }
          li.appendChild(el("pre", null, data.content));
          break;
        case "run.status":
          current = null;
          var s = line(li, "Status ");
          s.appendChild(el("span", "status status-" + data.status, data.status));
          if (data.attempt) s.appendChild(document.createTextNode(" · attempt " + data.attempt));
          if (data.error) s.appendChild(el("span", "field-error", " · " + data.error.code + ": " + data.error.message));
          setStatus(data.status);
          break;
        case "approval.requested":
          current = null;
          line(li, "Waiting for a person to approve ", data.name);
          li.appendChild(el("pre", null, pretty(data.arguments)));
          break;
        case "approval.decided":
          current = null;
          line(li, data.timed_out ? "Nobody decided in time on " : (data.decision === "approve" ? "Approved: " : "Denied: "), data.name,
            data.message ? " · " + data.message : "");
          break;
        case "run.error":
          current = null;
          li.appendChild(el("p", "field-error", data.code + ": " + data.message + (data.retrying ? " (retrying)" : "")));
          break;
      }
      details(li, "Event data", data);
      list.appendChild(li);
      if (ev.type === "run.status" && runID && data.status === "waiting" && window.htmx) {
        // The run waits for a decision: show the page again with the
        // forms to make it (the swap ends this stream; the page opens the
        // next one).
        reloadPage();
        return;
      }
      if (ev.type === "run.status" && runID && finished[data.status]) {
        // The run ended: stop following, and show the page again for its
        // usage, attempts and error.
        es.close();
        var note = section.querySelector(".live-note");
        if (note) note.textContent = "The run finished.";
        if (window.htmx) {
          reloadPage();
        }
      }
    }

    ["run.status", "message.delta", "message.completed", "tool.call", "tool.result", "run.error",
      "approval.requested", "approval.decided", "context.compacted"].forEach(function (t) {
      es.addEventListener(t, handle);
    });
  }

  function startStreams(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var found = scope.matches && scope.matches("[data-live-stream]") ? [scope] : [];
    Array.prototype.forEach.call(scope.querySelectorAll("[data-live-stream]"), function (s) { found.push(s); });
    found.forEach(function (s) {
      if (!s.svcStream) follow(s);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { startStreams(document); });
  document.addEventListener("htmx:load", function (ev) { startStreams(ev.detail && ev.detail.elt); });
  document.addEventListener("htmx:beforeSwap", closeStreams);
  window.addEventListener("pagehide", closeStreams);
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
