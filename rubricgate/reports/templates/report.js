// The only script in the report; the CSP admits it by hash and nothing else.
(function () {
  var box = document.getElementById("only-failures");
  function apply() {
    var rows = document.querySelectorAll('[data-failed="0"]');
    for (var i = 0; i < rows.length; i++) { rows[i].hidden = box.checked; }
  }
  box.addEventListener("change", apply);
  if (location.hash === "#failures") { box.checked = true; }
  apply();
  document.documentElement.setAttribute("data-ready", "1");
})();
