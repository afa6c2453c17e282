(function () {
  "use strict";
  var records = JSON.parse(document.getElementById("records").textContent);
  var total = records.reduce(function (n, q) { return n + q.length; }, 0), unsaved = false;
  // the command that adds a saved file's grades (it names the page's pool), without the file
  var importCommand = document.getElementById("save").dataset.importCommand;
  var status = document.getElementById("status");
  function say(msg, bad) { status.textContent = msg; status.className = bad ? "err" : ""; }
  function chosen() {
    var out = [];
    document.querySelectorAll(".passage").forEach(function (li) {
      var pick = li.querySelector("input[type=radio]:checked");
      if (!pick) { return; }
      var r = records[+li.dataset.q][+li.dataset.p];
      out.push({li: li, rec: r, grade: +pick.value,
                note: li.querySelector(".note").value.trim()});
    });
    return out;
  }
  function count() {
    var n = chosen().length;
    document.getElementById("progress").textContent = n + " of " + total + " graded";
    document.querySelectorAll("section.query").forEach(function (sec) {
      sec.classList.toggle("done", !sec.querySelector(".passage:not(.graded)"));
    });
  }
  document.addEventListener("change", function (ev) {
    if (ev.target.type === "radio") {
      ev.target.closest(".passage").classList.add("graded");
      unsaved = true; say(""); count();
    }
  });
  document.getElementById("ungraded").addEventListener("change", function (ev) {
    document.body.classList.toggle("hide-graded", ev.target.checked);
  });
  // keyboard: 0-3 grade the current passage and move to the next ungraded one; j/k move
  var current = null;
  function shown() {
    return Array.prototype.filter.call(document.querySelectorAll(".passage"),
      function (li) { return li.offsetParent !== null; });
  }
  function focusOn(li) {
    if (current) { current.classList.remove("current"); }
    current = li || null;
    if (current) {
      current.classList.add("current");
      current.scrollIntoView({block: "center"});
    }
  }
  document.addEventListener("click", function (ev) {
    var li = ev.target.closest && ev.target.closest(".passage");
    if (li && li !== current) { focusOn(li); }
  });
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" && ev.target.type === "text" || ev.ctrlKey || ev.metaKey || ev.altKey) {
      return;
    }
    var list = shown(), i = list.indexOf(current);
    if (/^[0-3]$/.test(ev.key)) {
      var li = current || list[0];
      if (!li) { return; }
      li.querySelector("label.g" + ev.key).click();
      var rest = list.slice(list.indexOf(li) + 1).concat(list.slice(0, list.indexOf(li)));
      focusOn(rest.filter(function (x) { return !x.classList.contains("graded"); })[0] || li);
      ev.preventDefault();
    } else if (ev.key === "j" || ev.key === "k") {
      focusOn(list[Math.max(0, Math.min(list.length - 1, i + (ev.key === "j" ? 1 : -1)))]);
      ev.preventDefault();
    }
  });
  window.addEventListener("beforeunload", function (ev) {
    if (unsaved) { ev.preventDefault(); ev.returnValue = ""; }
  });
  document.getElementById("save").addEventListener("click", function () {
    var box = document.getElementById("judge"), name = box.value.trim();
    if (!/^[A-Za-z0-9][A-Za-z0-9 ._@-]*$/.test(name)) {
      say("Enter your name (letters, digits, space . _ @ -) in the Judge field first.", true);
      box.focus(); return;
    }
    var picks = chosen();
    if (!picks.length) { say("Nothing graded yet: click a grade under a passage.", true); return; }
    var at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    var lines = picks.map(function (x) {
      var rec = {query_id: x.rec.query_id, doc: x.rec.doc, quote: x.rec.quote,
                 start: x.rec.start, grade: x.grade, judge: "human:" + name, at: at};
      if (x.note) { rec.rationale = x.note; }
      return JSON.stringify(rec);
    });
    var blob = new Blob([lines.join("\n") + "\n"], {type: "application/x-ndjson"});
    var file = "judgements-" + name.replace(/[^A-Za-z0-9._-]+/g, "_") + "-" +
      at.replace(/[-:]/g, "").slice(0, 13) + ".jsonl";
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = file;
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
    unsaved = false;
    say("Saved " + picks.length + " grades to " + file +
        "; import them with: " + importCommand + file);
  });
  count();
})();
