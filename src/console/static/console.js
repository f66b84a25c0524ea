// The hookgate console's only script: while a "Replay all" runs, it asks
// /console/replays/{id} for the progress and updates the numbers on the page.
// Without it the page refreshes itself (a <noscript> refresh) and works the same.
(function () {
  "use strict";
  var section = document.getElementById("replay-progress");
  if (!section || section.getAttribute("data-finished") === "true") {
    return;
  }
  var run = section.getAttribute("data-run");
  function field(name) {
    return section.querySelector('[data-field="' + name + '"]');
  }
  function show(p) {
    field("done").textContent = String(p.done);
    field("total").textContent = p.total === null ? "…" : String(p.total);
    field("delivered").textContent = String(p.delivered);
    field("failed").textContent = String(p.failed);
    if (p.finished) {
      section.setAttribute("data-finished", "true");
      field("status").textContent = p.error ? p.error : "Finished.";
    }
  }
  function poll() {
    fetch("/console/replays/" + encodeURIComponent(run), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (r) {
        if (!r.ok) {
          throw new Error("status " + r.status);
        }
        return r.json();
      })
      .then(function (p) {
        show(p);
        if (!p.finished) {
          setTimeout(poll, 400);
        }
      })
      .catch(function () {
        field("status").textContent = "Lost track of the run; reload the page.";
      });
  }
  poll();
})();
