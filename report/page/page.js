// ckptcheck's HTML report: hover details for the heatmap, details opened
// for printing, a filter for the findings. The page reads well without it.
(function () {
  "use strict";
  var tip = document.getElementById("tip");
  var cells = document.querySelectorAll("[data-tip]");
  // The title attribute is the hover text without script; with script,
  // the tooltip below replaces it (and the browser's own would double it).
  for (var i = 0; i < cells.length; i++) {
    cells[i].removeAttribute("title");
  }
  function show(cell, x, y) {
    tip.textContent = cell.getAttribute("data-tip");
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = x + 14, top = y + 14;
    if (left + w > window.innerWidth - 4) left = Math.max(4, x - w - 14);
    if (top + h > window.innerHeight - 4) top = Math.max(4, y - h - 14);
    tip.style.left = left + window.scrollX + "px";
    tip.style.top = top + window.scrollY + "px";
  }
  function hide() { tip.hidden = true; }
  document.addEventListener("mouseover", function (e) {
    var cell = e.target.closest && e.target.closest("[data-tip]");
    if (cell) show(cell, e.clientX, e.clientY); else hide();
  });
  document.addEventListener("mousemove", function (e) {
    var cell = e.target.closest && e.target.closest("[data-tip]");
    if (cell) show(cell, e.clientX, e.clientY);
  });
  document.addEventListener("focusin", function (e) {
    var cell = e.target.closest && e.target.closest("[data-tip]");
    if (!cell) return hide();
    var r = cell.getBoundingClientRect();
    show(cell, r.right, r.bottom);
  });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") hide(); });

  // Printing shows every details block open, then restores them.
  var closed = [];
  window.addEventListener("beforeprint", function () {
    hide();
    closed = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    closed.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (d) { d.open = false; });
  });

  var filter = document.getElementById("filter");
  if (filter) {
    filter.hidden = false;
    var rows = document.querySelectorAll("#all tbody tr");
    filter.addEventListener("input", function () {
      var q = filter.value.toLowerCase(), shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var hit = rows[i].textContent.toLowerCase().indexOf(q) >= 0;
        rows[i].hidden = !hit;
        if (hit) shown++;
      }
      document.getElementById("filter-count").textContent = q ? shown + " shown" : "";
    });
  }
  document.documentElement.setAttribute("data-ready", String(cells.length));
})();
