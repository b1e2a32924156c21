// A timeline page of kopf_sim.timelines: inlined into the page; no network, no libraries.
(function () {
  "use strict";
  document.documentElement.classList.remove("noscript");
  var inspector = document.getElementById("inspector");
  var pinned = null;

  function describe(item) {
    var details = item.querySelector(".details");
    var label = item.querySelector(".label");
    inspector.textContent = "";
    var where = document.createElement("div");
    where.className = "where";
    where.textContent = (item.dataset.run ? item.dataset.run + " · " : "") + item.dataset.lane +
      " · t=" + item.dataset.t + " s · " + item.dataset.kind + (item.dataset.outcome ? " · " + item.dataset.outcome : "");
    var title = document.createElement("div");
    title.className = "label";
    title.textContent = label ? label.textContent : "";
    inspector.appendChild(where);
    inspector.appendChild(title);
    if (details && details.textContent) {
      var pre = document.createElement("pre");
      pre.textContent = details.textContent;
      inspector.appendChild(pre);
    }
  }

  function itemOf(event) {
    return event.target instanceof Element ? event.target.closest(".item") : null;
  }

  document.addEventListener("mouseover", function (event) {
    var item = itemOf(event);
    if (item && !pinned) { describe(item); }
  });
  document.addEventListener("focusin", function (event) {
    var item = itemOf(event);
    if (item && !pinned) { describe(item); }
  });
  document.addEventListener("click", function (event) {
    var item = itemOf(event);
    if (!item) { return; }
    if (pinned) { pinned.classList.remove("pinned"); }
    if (pinned === item) { pinned = null; return; }
    pinned = item;
    item.classList.add("pinned");
    describe(item);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && pinned) { pinned.classList.remove("pinned"); pinned = null; }
  });

  // The legend's boxes show and hide the items of a kind; a row with nothing left to show is hidden too.
  function refreshRows() {
    document.querySelectorAll("table.timeline tbody tr").forEach(function (row) {
      var items = row.querySelectorAll(".item");
      var shown = Array.prototype.some.call(items, function (item) { return item.style.display !== "none"; });
      row.style.display = items.length && !shown ? "none" : "";
    });
  }
  document.querySelectorAll(".legend input[data-kind]").forEach(function (box) {
    box.addEventListener("change", function () {
      document.querySelectorAll(".item.k-" + box.dataset.kind).forEach(function (item) {
        item.style.display = box.checked ? "" : "none";
      });
      refreshRows();
    });
  });

  // Copy buttons: the clipboard API where the page may use it (a file:// page often may not), else a selection.
  function copied(button) {
    button.classList.add("copied");
    button.textContent = "Copied";
    setTimeout(function () { button.classList.remove("copied"); button.textContent = "Copy"; }, 1500);
  }
  function fallback(text, button) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { if (document.execCommand("copy")) { copied(button); } } finally { document.body.removeChild(area); }
  }
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.addEventListener("click", function () {
      var target = document.getElementById(button.dataset.target);
      var text = target ? target.textContent : "";
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { copied(button); }, function () { fallback(text, button); });
      } else {
        fallback(text, button);
      }
    });
  });
})();
