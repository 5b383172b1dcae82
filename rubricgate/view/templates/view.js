(function () {
  "use strict";
  var body = document.body;
  function show(row, yes) { if (yes) { row.removeAttribute("hidden"); } else { row.setAttribute("hidden", ""); } }
  function filterRuns() {
    var kind = document.getElementById("kind").value, where = document.getElementById("where").value;
    [].forEach.call(document.querySelectorAll("tr.run"), function (row) {
      show(row, (!kind || row.getAttribute("data-kind") === kind) &&
        (!where || row.getAttribute("data-branch") === where || row.getAttribute("data-pr") === where));
    });
  }
  if (document.getElementById("kind")) {
    document.getElementById("kind").addEventListener("change", filterRuns);
    document.getElementById("where").addEventListener("change", filterRuns);
    var params = new URLSearchParams(location.search);
    if (params.get("kind")) { document.getElementById("kind").value = params.get("kind"); }
    if (params.get("where")) { document.getElementById("where").value = params.get("where"); }
    filterRuns();
  }
  var go = document.getElementById("compare-go");
  if (go) {
    go.addEventListener("click", function () {
      var base = document.getElementById("compare-base").value, head = document.getElementById("compare-head").value;
      if (base && head && base !== head) { location.href = "compare/" + base + ".." + head + ".html"; }
    });
  }
  function text(el, value) { el.textContent = value === null || value === undefined ? "" : String(value); }
  function pct(p, n) { return n ? (100 * p / n).toFixed(1) + "% (" + p + "/" + n + ")" : "n/a"; }
  function paint(data) {
    text(document.getElementById("done"), data.done);
    text(document.getElementById("total"), data.total === null ? "?" : data.total);
    var bar = document.getElementById("bar");
    bar.style.width = (data.total ? Math.min(100, 100 * data.done / data.total) : 0) + "%";
    var rates = document.getElementById("live-rates");
    rates.textContent = "";
    Object.keys(data.rates).forEach(function (dim) {
      var tr = document.createElement("tr"), a = document.createElement("td"), b = document.createElement("td");
      text(a, dim); text(b, pct(data.rates[dim][0], data.rates[dim][1]));
      tr.appendChild(a); tr.appendChild(b); rates.appendChild(tr);
    });
    var recent = document.getElementById("recent");
    recent.textContent = "";
    data.recent.forEach(function (r) {
      var li = document.createElement("li");
      text(li, r.case + " #" + r.trial + ": " + r.outcome + (r.failed.length ? " — failed " + r.failed.join(", ") : ""));
      li.className = r.failed.length ? "bad" : "";
      li.setAttribute("data-case", r.case);
      recent.appendChild(li);
    });
    body.setAttribute("data-done", String(data.done));
    if (data.finished) {
      text(document.getElementById("state"), "finished: " + (data.decision || "no decision"));
      body.setAttribute("data-finished", "1");
    }
    return data.finished;
  }
  var source = body.getAttribute("data-live");
  if (source) {
    var poll = function () {
      fetch(source, {cache: "no-store"}).then(function (r) { return r.json(); }).then(function (data) {
        if (!paint(data)) { setTimeout(poll, 700); }
      }).catch(function () { setTimeout(poll, 1500); });
    };
    poll();
  }
  body.setAttribute("data-ready", "1");
}());
