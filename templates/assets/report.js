/* nsys-diag report: progressive enhancement only. Sorts tables, filters the kernel table,
   collapses long tables behind a "show all" button, opens <details> for printing, highlights
   the current section in the nav. The page reads fully without it. No network, no eval. */
(function () {
  "use strict";
  var COLLAPSE_AT = 25;

  function each(list, fn) { Array.prototype.forEach.call(list, fn); }

  function sortKey(td, numeric) {
    var raw = td ? td.getAttribute("data-sort") : "";
    if (numeric) {
      var f = parseFloat(raw);
      return isNaN(f) ? null : f;
    }
    return (raw === null || raw === "" ? (td ? td.textContent : "") : raw).toLowerCase();
  }

  function compare(a, b, numeric, dir) {
    if (a === null && b === null) { return 0; }
    if (a === null) { return 1; }      /* missing values last, whatever the direction */
    if (b === null) { return -1; }
    if (numeric) { return (a - b) * dir; }
    return a < b ? -dir : a > b ? dir : 0;
  }

  function refresh(table) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var block = table.closest(".table-block");
    var tools = block ? block.querySelector(".table-tools") : null;
    var query = "", category = "";
    if (tools) {
      var input = tools.querySelector(".tbl-filter");
      var select = tools.querySelector(".tbl-category");
      query = input ? input.value.trim().toLowerCase() : "";
      category = select ? select.value : "";
    }
    var filtering = query !== "" || category !== "";
    var expanded = table.getAttribute("data-expanded") === "1";
    var matched = 0;
    each(body.rows, function (tr) {
      var first = tr.cells.length ? tr.cells[0] : null;
      var extra = first && first.querySelector(".row-more");
      var own = first ? first.textContent.slice(0, first.textContent.length - (extra ? extra.textContent.length : 0)) : "";
      var text = first ? own.toLowerCase() + " " + (first.getAttribute("title") || "").toLowerCase() : "";
      var ok = (!query || text.indexOf(query) !== -1) &&
               (!category || (tr.cells[1] && tr.cells[1].textContent.trim() === category));
      tr.hidden = !ok;
      if (ok) { matched += 1; }
      tr.classList.toggle("collapsed-row", ok && !filtering && !expanded && matched > COLLAPSE_AT);
    });
    if (tools) {
      var live = tools.querySelector(".tbl-live");
      if (live) { live.textContent = filtering ? matched + " of " + body.rows.length + " rows match" : ""; }
    }
    var more = block ? block.querySelector("button.more") : null;
    if (more) {
      more.hidden = filtering || body.rows.length <= COLLAPSE_AT;
      more.textContent = expanded ? "Show the top " + COLLAPSE_AT + " only" : "Show all " + body.rows.length + " rows";
    }
  }

  function makeSortable(table) {
    var head = table.tHead;
    if (!head || !head.rows.length) { return; }
    each(head.rows[0].cells, function (th, col) {
      var numeric = th.getAttribute("data-type") === "num";
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;
        if (!th.hasAttribute("aria-sort") && !numeric) { dir = 1; }
        each(head.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var keyed = rows.map(function (tr, i) { return [sortKey(tr.cells[col], numeric), i, tr]; });
        keyed.sort(function (a, b) { return compare(a[0], b[0], numeric, dir) || a[1] - b[1]; });
        keyed.forEach(function (k) { body.appendChild(k[2]); });
        refresh(table);
      });
    });
  }

  function enhanceTable(table) {
    if (table.classList.contains("sortable")) { makeSortable(table); }
    var block = table.closest(".table-block");
    var body = table.tBodies[0];
    if (!block || !body) { return; }
    var tools = block.querySelector(".table-tools");
    if (tools) {
      tools.hidden = false;
      each(tools.querySelectorAll("input, select"), function (el) {
        el.addEventListener("input", function () { refresh(table); });
        el.addEventListener("change", function () { refresh(table); });
      });
    }
    if (body.rows.length > COLLAPSE_AT) {
      var more = document.createElement("button");
      more.type = "button";
      more.className = "more";
      more.addEventListener("click", function () {
        table.setAttribute("data-expanded", table.getAttribute("data-expanded") === "1" ? "0" : "1");
        refresh(table);
      });
      table.parentNode.insertAdjacentElement("afterend", more);
    }
    refresh(table);
  }

  function navHighlight() {
    var links = document.querySelectorAll(".toc a");
    if (!("IntersectionObserver" in window) || !links.length) { return; }
    var byId = {};
    each(links, function (a) { byId[a.getAttribute("href").slice(1)] = a; });
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting && byId[e.target.id]) {
          each(links, function (a) { a.classList.remove("active"); });
          byId[e.target.id].classList.add("active");
        }
      });
    }, { rootMargin: "-20% 0px -70% 0px" });
    each(document.querySelectorAll("main section[id]"), function (s) { observer.observe(s); });
  }

  function init() {
    each(document.querySelectorAll("table.data"), enhanceTable);
    navHighlight();
    window.addEventListener("beforeprint", function () {
      each(document.querySelectorAll("details"), function (d) { d.setAttribute("data-was-open", d.open ? "1" : "0"); d.open = true; });
    });
    window.addEventListener("afterprint", function () {
      each(document.querySelectorAll("details[data-was-open]"), function (d) { d.open = d.getAttribute("data-was-open") === "1"; });
    });
    document.documentElement.classList.add("js");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
}());
