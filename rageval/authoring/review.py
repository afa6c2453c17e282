"""The review page for people judging a pool: one self-contained HTML file (inline CSS and JS, no
network) with each query, the evidence the golden set already knows and the pooled passages, each
with grade buttons 0-3 and an optional note. "Save" downloads the grades as JSONL in the
judgements record shape, which ``rageval judge --import FILE`` validates and appends.

The page is rendered on the server side, so it reads without JavaScript; the script collects the
chosen grades, counts them, writes the file, and grades from the keyboard (0-3 grade the marked
passage and move to the next ungraded one, j/k move).
"""

from __future__ import annotations

import html
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

# The grade scale shown on the page and given to the LLM judge (docs/judging.md): rageval counts
# grade >= 1 as relevant, so 1 means "part of the answer", not merely "on topic".
GRADES: dict[int, tuple[str, str]] = {
    0: ("not relevant", "does not help answer the question, even if it is on the same topic"),
    1: ("partly", "holds part of the answer, or a fact a reader needs to answer"),
    2: ("relevant", "answers the question, perhaps among other things"),
    3: ("exact", "answers the question fully and directly"),
}


def _esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element (no ``</script>`` or ``<!--`` can close it)."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def _passage(qi: int, pi: int, p: Mapping[str, Any]) -> str:
    runs = ", ".join(
        f"{_esc(name)} #{_esc(rank)}"
        for name, rank in sorted(p["runs"].items(), key=lambda x: str(x[1]))
    )
    buttons = "".join(
        f'<label class="g g{g}" title="{_esc(GRADES[g][1])}"><input type="radio" '
        f'name="g-{qi}-{pi}" value="{g}"><span>{g} {_esc(GRADES[g][0])}</span></label>'
        for g in GRADES
    )
    return (
        f'<li class="passage" data-q="{qi}" data-p="{pi}">'
        f'<div class="meta"><b>{_esc(p.get("chunk") or p["doc"])}</b> '
        f'<span class="runs">retrieved by {runs}</span></div>'
        f'<div class="text">{_esc(p["text"])}</div>'
        f'<div class="grades">{buttons}'
        f'<input class="note" type="text" placeholder="note (optional)" maxlength="500"></div>'
        "</li>"
    )


def _query(qi: int, q: Mapping[str, Any]) -> str:
    evidence = "".join(
        f'<li><span class="doc">{_esc(e["doc"])}</span> <q>{_esc(e["quote"])}</q></li>'
        for e in q.get("evidence") or []
    )
    if not evidence and q.get("relevant_docs"):  # document labels: each one's opening
        evidence = "".join(
            f'<li><span class="doc">{_esc(d["doc"])}</span> <q>{_esc(d["text"])}</q></li>'
            for d in q["relevant_docs"]
        )
    if not evidence and q.get("relevant"):
        evidence = "".join(f"<li>{_esc(x)}</li>" for x in q["relevant"])
    known = (
        f'<div class="known"><h3>Known evidence</h3><ul>{evidence}</ul></div>'
        if evidence
        else '<div class="known none">The golden set has no quote for this query.</div>'
    )
    passages = "".join(_passage(qi, pi, p) for pi, p in enumerate(q["passages"]))
    return (
        f'<section class="query" id="q-{qi}"><h2><span class="qid">{_esc(q["query_id"])}</span> '
        f"{_esc(q['query'])}</h2>{known}"
        f'<ol class="passages">{passages}</ol></section>'
    )


def render_review(
    queries: Sequence[Mapping[str, Any]],
    title: str = "rageval review",
    pool_file: str | None = None,
) -> str:
    """The review page of a pool (``rageval.authoring.pool.read_pool``'s queries); ``pool_file``
    goes into the import command the page shows, so the grades land in the judgements file the
    pool names (not the demo's default)."""
    records = [
        [
            {"query_id": q["query_id"], "doc": p["doc"], "quote": p["text"], "start": p["start"]}
            for p in q["passages"]
        ]
        for q in queries
    ]
    n = sum(len(q["passages"]) for q in queries)
    scale = "".join(
        f"<li><b>{g} {_esc(name)}</b>: {_esc(what)}</li>" for g, (name, what) in GRADES.items()
    )
    fill = {
        "TITLE": _esc(title),
        "COUNT": f"{n} passages for {len(queries)} queries",
        "SCALE": scale,
        "TOTAL": str(n),
        "BODY": "".join(_query(qi, q) for qi, q in enumerate(queries)),
        "DATA": _script_json(records),
        "IMPORT": _esc(import_command(pool_file, "FILE")),
        "IMPORTJS": _script_json(import_command(pool_file, "")),
    }
    from rageval.formats.page_csp import with_csp

    # one pass: a passage that happens to contain "__DATA__" stays text
    return with_csp(re.sub(r"__([A-Z]+)__", lambda m: fill.get(m.group(1), m.group(0)), PAGE))


def import_command(pool_file: str | None, grades: str) -> str:
    """``rageval judge POOL --import GRADES``: the command that adds a saved file's grades."""
    pool = f"{shlex.quote(pool_file)} " if pool_file else ""
    return f"rageval judge {pool}--import {grades}"


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #d0d7de;
 padding:10px 20px;display:flex;flex-wrap:wrap;gap:10px 18px;align-items:center}
header h1{font-size:17px;margin:0}
header input[type=text]{font:inherit;padding:4px 8px;border:1px solid #8c959f;border-radius:4px}
header button{font:inherit;padding:5px 14px;border-radius:4px;border:1px solid #1f6feb;
 background:#1f6feb;color:#fff;cursor:pointer}
#status{color:#57606a}#status.err{color:#cf222e;font-weight:600}
main{max-width:1050px;margin:0 auto;padding:8px 20px 60px}
details.scale{margin:12px 0;background:#fff;border:1px solid #d0d7de;border-radius:6px;
 padding:6px 12px}
.query{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:16px 0;padding:4px 16px}
.query h2{font-size:16px;margin:10px 0}.qid{color:#57606a;font-weight:400;margin-right:6px}
.known{background:#eef6ee;border-left:4px solid #2da44e;padding:4px 12px;margin:6px 0}
.known.none{background:#f6f8fa;border-color:#8c959f;color:#57606a}
.known h3{font-size:13px;margin:4px 0;color:#1a7f37}.known ul{margin:4px 0;padding-left:18px}
.doc{font-family:ui-monospace,monospace;font-size:12px;color:#57606a}
ol.passages{padding-left:22px}
.passage{margin:12px 0;padding:8px 10px;border:1px solid #d8dee4;border-radius:6px}
.passage.graded{border-color:#8c959f;background:#fbfbfc}
.passage.current{outline:3px solid #1f6feb;outline-offset:1px}
kbd{font:12px ui-monospace,monospace;border:1px solid #8c959f;border-radius:3px;padding:0 4px}
.meta{font-size:13px}.meta b{font-family:ui-monospace,monospace}
.runs{color:#57606a;margin-left:8px}
.text{white-space:pre-wrap;margin:6px 0;max-height:18em;overflow:auto;font-size:14px}
.grades{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.g{cursor:pointer}.g input{position:absolute;opacity:0;width:0;height:0}
.g span{display:inline-block;padding:3px 10px;border:1px solid #8c959f;border-radius:14px;
 font-size:13px;background:#fff}
.g input:checked+span{color:#fff;font-weight:600}
.g0 input:checked+span{background:#6e7781;border-color:#6e7781}
.g1 input:checked+span{background:#bf8700;border-color:#bf8700}
.g2 input:checked+span{background:#2da44e;border-color:#2da44e}
.g3 input:checked+span{background:#1a7f37;border-color:#1a7f37}
.g input:focus-visible+span{outline:2px solid #1f6feb}
.note{flex:1;min-width:180px;font:inherit;font-size:13px;padding:3px 8px;
 border:1px solid #d0d7de;border-radius:4px}
body.hide-graded .passage.graded,body.hide-graded .query.done{display:none}
</style></head>
<body>
<header>
 <h1>__TITLE__</h1><span>__COUNT__</span>
 <label>Judge <input id="judge" type="text" placeholder="your name" size="16"></label>
 <label><input id="ungraded" type="checkbox"> ungraded only</label>
 <span id="progress">0 of __TOTAL__ graded</span>
 <button id="save" type="button">Save</button>
 <span id="status" role="status"></span>
</header>
<main>
<details class="scale" open><summary>Grades</summary><ul>__SCALE__</ul>
<p>Keys: <kbd>0</kbd>-<kbd>3</kbd> grade the marked passage and move to the next ungraded
one, <kbd>j</kbd>/<kbd>k</kbd> move down/up; a click marks a passage.
Judge the passage on its own: would a person asking the question find the answer in it?
Save writes the grades you gave (ungraded passages are left out) to a JSONL file; add it to the
judgements with <code>__IMPORT__</code>.</p></details>
__BODY__
</main>
<script type="application/json" id="records">__DATA__</script>
<script>
(function () {
  "use strict";
  var records = JSON.parse(document.getElementById("records").textContent);
  var total = __TOTAL__, unsaved = false;
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
    var at = new Date().toISOString().replace(/\\.\\d{3}Z$/, "Z");
    var lines = picks.map(function (x) {
      var rec = {query_id: x.rec.query_id, doc: x.rec.doc, quote: x.rec.quote,
                 start: x.rec.start, grade: x.grade, judge: "human:" + name, at: at};
      if (x.note) { rec.rationale = x.note; }
      return JSON.stringify(rec);
    });
    var blob = new Blob([lines.join("\\n") + "\\n"], {type: "application/x-ndjson"});
    var file = "judgements-" + name.replace(/[^A-Za-z0-9._-]+/g, "_") + "-" +
      at.replace(/[-:]/g, "").slice(0, 13) + ".jsonl";
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = file;
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
    unsaved = false;
    say("Saved " + picks.length + " grades to " + file +
        "; import them with: " + __IMPORTJS__ + file);
  });
  count();
})();
</script>
</body></html>
"""
