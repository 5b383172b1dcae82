// The only script in the report; the CSP admits it by hash and nothing else. Filters the case
// tables by text (case id or a rule a finding cited) and to failing cases only; #failures in
// the address starts with failing cases only.
(function () {
  var box = document.getElementById("only-failures"), search = document.getElementById("case-search");
  var count = document.getElementById("filter-count"), passing = document.getElementById("passing-cases");
  function apply() {
    var text = search.value.trim().toLowerCase(), shown = 0, shownPassing = 0;
    var rows = document.querySelectorAll("tr.case");
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i], failed = row.getAttribute("data-failed") === "1";
      var hay = (row.getAttribute("data-case") + " " + row.getAttribute("data-rules")).toLowerCase();
      var show = (!box.checked || failed) && (!text || hay.indexOf(text) >= 0);
      row.hidden = !show;
      shown += show;
      shownPassing += show && !failed;
    }
    if (passing) { passing.hidden = box.checked; if (text && shownPassing) { passing.open = true; } }
    count.textContent = (text || box.checked) ? shown + " of " + rows.length + " cases shown" : "";
  }
  box.addEventListener("change", apply);
  search.addEventListener("input", apply);
  if (location.hash === "#failures") { box.checked = true; }
  apply();
  document.documentElement.setAttribute("data-ready", "1");
  document.body.setAttribute("data-ready", "1");
})();
