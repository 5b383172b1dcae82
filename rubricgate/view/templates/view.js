(function () {
  "use strict";
  var body = document.body;
  function $(id) { return document.getElementById(id); }
  function show(row, yes) { if (yes) { row.removeAttribute("hidden"); } else { row.setAttribute("hidden", ""); } }
  function counted(rows, shown) {
    var out = $("filter-count");
    if (out) { out.textContent = shown < rows.length ? shown + " of " + rows.length + " shown" : ""; }
  }
  // The runs page: search, decision, kind, branch or PR.
  function filterRuns() {
    var text = $("run-search").value.trim().toLowerCase(), status = $("decision-filter").value;
    var kind = $("kind").value, where = $("where").value, rows = document.querySelectorAll("tr.run"), shown = 0;
    [].forEach.call(rows, function (row) {
      var yes = (!kind || row.getAttribute("data-kind") === kind) &&
        (!where || row.getAttribute("data-branch") === where || row.getAttribute("data-pr") === where) &&
        (!status || row.getAttribute("data-status") === status || (status === "partial" && row.getAttribute("data-partial") === "1")) &&
        (!text || row.getAttribute("data-text").indexOf(text) >= 0);
      show(row, yes); shown += yes;
    });
    counted(rows, shown);
  }
  if ($("run-search")) {
    ["run-search", "decision-filter", "kind", "where"].forEach(function (id) {
      $(id).addEventListener(id === "run-search" ? "input" : "change", filterRuns);
    });
    var params = new URLSearchParams(location.search);
    if (params.get("kind")) { $("kind").value = params.get("kind"); }
    if (params.get("where")) { $("where").value = params.get("where"); }
    filterRuns();
  }
  // A run page: outcome, case id, rule cited.
  function filterCases() {
    var outcome = $("outcome-filter").value, text = $("case-filter").value.trim().toLowerCase();
    var rule = $("rule-filter").value, rows = document.querySelectorAll("#cases tr.case"), shown = 0;
    [].forEach.call(rows, function (row) {
      var yes = (!outcome || row.getAttribute("data-outcome") === outcome) &&
        (!text || row.getAttribute("data-case").toLowerCase().indexOf(text) >= 0) &&
        (!rule || (" " + row.getAttribute("data-rules") + " ").indexOf(" " + rule + " ") >= 0);
      show(row, yes); shown += yes;
    });
    counted(rows, shown);
  }
  if ($("outcome-filter")) {
    $("outcome-filter").addEventListener("change", filterCases);
    $("case-filter").addEventListener("input", filterCases);
    $("rule-filter").addEventListener("change", filterCases);
    var wanted = new URLSearchParams(location.search).get("outcome");
    if (wanted) { $("outcome-filter").value = wanted; }
    filterCases();
  }
  // A transcript: [ and ] step to the previous and next failing trial.
  document.addEventListener("keydown", function (e) {
    var tag = (e.target.tagName || "").toLowerCase();
    if (e.altKey || e.ctrlKey || e.metaKey || tag === "input" || tag === "select" || tag === "textarea") { return; }
    var link = e.key === "[" ? $("prev-failing") : e.key === "]" ? $("next-failing") : null;
    if (link) { location.href = link.href; }
  });
  var go = $("compare-go");
  if (go) {
    go.addEventListener("click", function () {
      var base = $("compare-base").value, head = $("compare-head").value;
      if (base && head && base !== head) { location.href = "compare/" + base + ".." + head + ".html"; }
    });
  }
  function text(el, value) { el.textContent = value === null || value === undefined ? "" : String(value); }
  function pct(p, n) { return n ? (100 * p / n).toFixed(1) + "% (" + p + "/" + n + ")" : "n/a"; }
  function paint(data) {
    text($("done"), data.done);
    text($("total"), data.total === null ? "?" : data.total);
    var share = data.total ? Math.min(100, 100 * data.done / data.total) : 0;
    $("bar").style.width = share + "%";
    $("progress").setAttribute("aria-valuenow", String(Math.round(share)));
    var rates = $("live-rates");
    rates.textContent = "";
    Object.keys(data.rates).forEach(function (dim) {
      var tr = document.createElement("tr"), a = document.createElement("td"), b = document.createElement("td");
      text(a, dim); text(b, pct(data.rates[dim][0], data.rates[dim][1]));
      tr.appendChild(a); tr.appendChild(b); rates.appendChild(tr);
    });
    var recent = $("recent");
    recent.textContent = "";
    data.recent.forEach(function (r) {
      var li = document.createElement("li");
      text(li, (r.failed.length ? "✗ " : "✓ ") + r.case + " #" + r.trial + ": " + r.outcome + (r.failed.length ? " — failed " + r.failed.join(", ") : ""));
      li.className = r.failed.length ? "bad" : "";
      li.setAttribute("data-case", r.case);
      recent.appendChild(li);
    });
    body.setAttribute("data-done", String(data.done));
    if (data.finished) {
      text($("state"), "finished: " + (data.decision || "no decision"));
      body.setAttribute("data-finished", "1");
    } else if (data.stopped) {
      text($("state"), "stopped before its summary (killed): nothing was gated");
      body.setAttribute("data-stopped", "1");
    }
    return data.finished || data.stopped;
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
