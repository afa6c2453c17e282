"""The per-query page: one self-contained HTML file (inline CSS and JS, no network) that shows a
run's queries worst first, or the difference between two runs of the same golden set.

Every query row holds its top-k chunks (``doc-id:ordinal``, relevant ones marked, the evidence
quote highlighted in the chunk text) in a ``<details>`` element, so the page reads without
JavaScript too (MLflow's artifact preview); with it, column headers sort and the filters (text,
slice, misses / changed only) narrow the rows.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.config_schema import measures, override_key
from rageval.formats.atomic import atomic_write_text
from rageval.formats.page_csp import with_csp
from rageval.scoring.slices import field_values
from rageval.scoring.spec import HEADLINE

# Metric columns shown per query, in order, when the report has them (at the run's k).
SHOWN = ("ndcg", "recall", "mrr", "hit_rate", "evidence_recall")


def _esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _number(v: Any) -> float | None:
    """A metric value read from a file: a finite-or-nan number, else None (shown blank)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        try:
            return float(v) if isinstance(v, str) else None
        except ValueError:
            return None
    return float(v)


def _num(v: Any) -> str:
    x = _number(v)
    return "" if x is None else f"{x:.3f}"


def _sortkey(v: Any) -> str:
    x = _number(v)
    return "" if x is None else repr(x)


def highlight_ranges(chunk: Mapping[str, Any], row: Mapping[str, Any]) -> list[tuple[int, int]]:
    """Character ranges of ``chunk['text']`` covered by the query's evidence: the located spans
    (document offsets) intersected with the chunk, else the quote found verbatim in the text."""
    text = chunk.get("text") or ""
    out = []
    for sp in row.get("evidence_spans") or []:
        if sp["doc"] == chunk.get("doc_id") and "start" in chunk:
            lo, hi = max(sp["start"], chunk["start"]), min(sp["end"], chunk["end"])
            if lo < hi:
                out.append((lo - chunk["start"], hi - chunk["start"]))
    if not out:
        for ev in row.get("evidence") or []:
            i = text.find(ev["quote"]) if ev.get("quote") else -1
            if i >= 0 and ev.get("doc") in (None, chunk.get("doc_id")):
                out.append((i, i + len(ev["quote"])))
    return sorted(out)


def _marked(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    parts, pos = [], 0
    for lo, hi in ranges:
        lo = max(lo, pos)
        if lo >= hi:
            continue
        parts += [_esc(text[pos:lo]), f"<mark>{_esc(text[lo:hi])}</mark>"]
        pos = hi
    parts.append(_esc(text[pos:]))
    return "".join(parts)


def _chunk_list(row, chunks, level: str, moves: Mapping[str, str] | None = None) -> str:
    relevant = set(row.get("relevant_labels") or [])
    ids = row.get("retrieved") or []
    labels = row.get("retrieved_labels") or ids
    items = []
    for rank, (cid, label) in enumerate(zip(ids, labels, strict=False), 1):
        c = chunks.get(cid) or {}
        rel = label in relevant or cid in relevant
        text = c.get("text")
        body = (
            f'<div class="text">{_marked(text, highlight_ranges(c, row))}</div>'
            if text
            else '<div class="text none">'
            f"({'document' if level == 'doc' else 'no text stored'})</div>"
        )
        move = (
            f' <span class="move">{_esc(moves[label])}</span>' if moves and label in moves else ""
        )
        items.append(
            f'<li class="{"rel" if rel else "nonrel"}"><span class="rank">#{rank}</span> '
            f'<span class="label">{_esc(label)}</span>'
            f"{' <b class=mark>relevant</b>' if rel else ''}{move}{body}</li>"
        )
    if not items:
        items.append("<li>(nothing retrieved)</li>")
    expected = ", ".join(row.get("expected_docs") or []) or "none"
    quotes = "".join(
        f'<blockquote><span class="label">{_esc(e.get("doc"))}</span> '
        f"{_esc(e.get('quote'))}</blockquote>"
        for e in row.get("evidence") or []
    )
    return (
        f'<div class="exp">expected documents: {_esc(expected)}; relevant units: '
        f"{_esc(', '.join(sorted(relevant)) or 'none')}</div>{quotes}"
        f'<ol class="chunks">{"".join(items)}</ol>'
    )


def _slices(row) -> list[str]:
    """The slices a query row is in, as the page's filter lists them: ``source:ticket``,
    ``tag:hr``, and each meta field's value (``difficulty:hard``; a list gives each item)."""
    meta = row.get("meta") or {}
    return (
        ([f"source:{row['source']}"] if row.get("source") else [])
        + [f"tag:{t}" for t in row.get("tags") or []]
        + [f"{key}:{v}" for key in sorted(meta) for v in field_values(row, f"meta.{key}")]
    )


def _metric_names(report: Mapping[str, Any]) -> list[str]:
    k = report.get("k")
    names = [f"{m}@{k}" for m in SHOWN if f"{m}@{k}" in (report.get("metrics") or {})]
    return names or [f"{m}@{k}" for m in HEADLINE][:1]


# data paths: long, and the same in every run of a sweep; left out of a run's title and of a
# config's summary (rageval.gate.baseline.config_summary) like the keys that measure nothing
PATH_KEYS = ("dataset.corpus", "dataset.golden")


def shown_override(override: str) -> bool:
    """Whether an override line belongs in a run's title: it changes what is measured
    (rageval.config_schema.measures) and is not a data path."""
    return measures(override) and not override_key(override).startswith(PATH_KEYS)


PLUMBING = (
    "hydra.",
    "mlflow.",
    "sweep.",
    "cache_dir",
    "latency_sample",
    "dataset.corpus",
    "dataset.golden",
)


def _title(report: Mapping[str, Any]) -> str:
    """The run's overrides that change what it measures (``chunk=512 search=bm25``)."""
    over = [o for o in report.get("overrides") or [] if shown_override(o)]
    return " ".join(over) or "default config"


def _rank(value: Any) -> int | None:
    """A first relevant rank read from a file: a whole number >= 1, else None (a miss), so a
    hand-edited report.json cannot put text into the page or stop it."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value)
    return None


def render(report: Mapping[str, Any], chunks: Mapping[str, Mapping[str, Any]]) -> str:
    """The page of one run (``report`` as in report.json, ``chunks`` as in chunks.jsonl)."""
    names = _metric_names(report)
    k = report.get("k")
    head = ["id", "query", "slices", "first relevant rank", *names]
    rows = []
    for r in report.get("per_query") or []:
        rank = _rank(r.get("first_relevant_rank"))
        miss = rank is None or rank > (k or 0)
        cells = [
            f'<td data-v="{_esc(r["id"])}">{_esc(r["id"])}</td>',
            f'<td data-v="{_esc(r.get("query"))}"><details>'
            f"<summary>{_esc(r.get('query'))}</summary>"
            f"{_chunk_list(r, chunks, report.get('level', 'chunk'))}</details></td>",
            f'<td data-v="{_esc(" ".join(_slices(r)))}">{_esc(", ".join(_slices(r)))}</td>',
            f'<td class="n" data-v="{rank or 1e9}">{rank or "-"}</td>',
            *(f'<td class="n" data-v="{_sortkey(r.get(m))}">{_num(r.get(m))}</td>' for m in names),
        ]
        rows.append(_tr(r, cells, miss=miss, changed=False))
    summary = " · ".join(
        f"{m} {report['metrics'][m]:.4f}"
        for m in names
        if report.get("metrics", {}).get(m) is not None
    )
    return _page(
        f"rageval: {_title(report)}",
        summary,
        head,
        rows,
        _all_slices(report),
        decide_col=len(head) - len(names),
        toggle="misses only",
        before=run_slice_section(report, names),
    )


def rank_moves(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """For run B's top-k of a query: each label's move against run A (``↑2``, ``↓1``, ``=``,
    ``new``), and the labels of A's top-k that B dropped."""
    ra = {x: i for i, x in enumerate(a.get("retrieved_labels") or [], 1)}
    rb = {x: i for i, x in enumerate(b.get("retrieved_labels") or [], 1)}
    moves = {}
    for x, i in rb.items():
        j = ra.get(x)
        moves[x] = "new" if j is None else "=" if j == i else f"↑{j - i}" if j > i else f"↓{i - j}"
    return moves, [x for x in ra if x not in rb]


def render_diff(
    a: Mapping[str, Any],
    a_chunks: Mapping[str, Any],
    b: Mapping[str, Any],
    b_chunks: Mapping[str, Any],
    a_name: str = "A",
    b_name: str = "B",
    slice_rows: Sequence[Mapping[str, Any]] = (),
    verdict: Sequence[str] = (),
) -> str:
    """The page comparing run A (e.g. the baseline) with run B (the candidate), query by query:
    the deciding metric in both, its change, first relevant ranks and the rank moves of B's
    top-k; ``verdict``: the gate's lines (each metric's change, interval and what the golden set
    detects), shown first."""
    names = _metric_names(b)
    decide = names[0]
    k = b.get("k")
    by_id = {r["id"]: r for r in a.get("per_query") or []}
    head = [
        "id",
        "query",
        "slices",
        f"{decide} {a_name}",
        f"{decide} {b_name}",
        "change",
        "first relevant rank",
        "rank moves",
    ]
    rows = []
    for r in b.get("per_query") or []:
        ra = by_id.get(r["id"])
        if ra is None:
            continue
        va, vb = ra.get(decide), r.get(decide)
        delta = None if va is None or vb is None else vb - va
        moves, dropped = rank_moves(ra, r)
        news = sum(v == "new" for v in moves.values())
        ups = sum(v.startswith("↑") for v in moves.values())
        downs = sum(v.startswith("↓") for v in moves.values())
        moved = ", ".join(
            f"{n} {w}"
            for n, w in ((news, "new"), (ups, "up"), (downs, "down"), (len(dropped), "dropped"))
            if n
        )
        fa, fb = _rank(ra.get("first_relevant_rank")) or 0, _rank(r.get("first_relevant_rank")) or 0
        drop_list = (
            f'<div class="dropped">dropped from {_esc(a_name)}\'s top {k}: '
            f"{_esc(', '.join(dropped))}</div>"
            if dropped
            else ""
        )
        cells = [
            f'<td data-v="{_esc(r["id"])}">{_esc(r["id"])}</td>',
            f'<td data-v="{_esc(r.get("query"))}"><details>'
            f"<summary>{_esc(r.get('query'))}</summary>"
            f"{drop_list}{_chunk_list(r, b_chunks, b.get('level', 'chunk'), moves)}</details></td>",
            f'<td data-v="{_esc(" ".join(_slices(r)))}">{_esc(", ".join(_slices(r)))}</td>',
            f'<td class="n" data-v="{_sortkey(va)}">{_num(va)}</td>',
            f'<td class="n" data-v="{_sortkey(vb)}">{_num(vb)}</td>',
            f'<td class="n {"down" if (delta or 0) < 0 else "up" if (delta or 0) > 0 else ""}" '
            f'data-v="{_sortkey(delta)}">{"" if delta is None else f"{delta:+.3f}"}</td>',
            f'<td class="n" data-v="{fb or 1e9}">{fa or "-"} → {fb or "-"}</td>',
            f'<td data-v="{news + ups + downs + len(dropped)}">{_esc(moved) or "="}</td>',
        ]
        changed = bool(delta) or bool(dropped) or any(v != "=" for v in moves.values())
        rows.append(_tr(r, cells, miss=not fb or fb > (k or 0), changed=changed))
    ma, mb = (a.get("metrics") or {}).get(decide), (b.get("metrics") or {}).get(decide)
    summary = f"{decide}: {a_name} {_num(ma)} → {b_name} {_num(mb)}"
    return _page(
        f"rageval: {a_name} vs {b_name}",
        summary,
        head,
        rows,
        _all_slices(b),
        decide_col=5,
        toggle="changed only",
        before=verdict_section(verdict) + slice_section(slice_rows),
    )


def _tr(r, cells, *, miss: bool, changed: bool) -> str:
    slices = _esc(json.dumps(_slices(r)))  # a JSON list: a value may hold spaces
    return (
        f'<tr data-slices="{slices}" data-miss="{int(miss)}" data-changed="{int(changed)}">'
        f"{''.join(cells)}</tr>"
    )


def _all_slices(report) -> list[str]:
    out: list[str] = []
    for r in report.get("per_query") or []:
        out += [s for s in _slices(r) if s not in out]
    return sorted(out)


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.2em;color:#222}
h1{font-size:1.2em;margin:.2em 0} h2{font-size:1.05em;margin:.8em 0 .2em}
.summary{color:#555;margin-bottom:.6em}
.filters{display:flex;gap:.8em;align-items:center;margin:.6em 0;flex-wrap:wrap}
table{border-collapse:collapse;width:100%} th,td{border-bottom:1px solid #ddd;padding:.3em .5em;
vertical-align:top;text-align:left} th{cursor:pointer;background:#f4f4f4;position:sticky;top:0;
user-select:none} th.asc::after{content:" ▲"} th.desc::after{content:" ▼"} td.n{text-align:right;
font-variant-numeric:tabular-nums;white-space:nowrap} td.down{color:#b00020} td.up{color:#0a7a2f}
tr[data-miss="1"] td:first-child{border-left:3px solid #b00020}
summary{cursor:pointer} ol.chunks{padding-left:1.2em} ol.chunks li{margin:.4em 0;list-style:none}
li.rel{border-left:3px solid #0a7a2f;padding-left:.5em} li.nonrel{border-left:3px solid #ccc;
padding-left:.5em} .label{font-family:ui-monospace,monospace;background:#eef;padding:0 .3em}
.rank{color:#777} b.mark{color:#0a7a2f} .move{font-family:ui-monospace,monospace;color:#555}
.text{white-space:pre-wrap;font-size:.92em;color:#333;margin-top:.2em} .text.none{color:#999}
mark{background:#ffe066} blockquote{margin:.3em 0;padding:.2em .6em;border-left:3px solid #ffe066;
background:#fffbe6} .exp,.dropped{color:#555;font-size:.92em} .count{color:#555}
"""

JS = """
(function(){
const table=document.getElementById('q'), body=table.tBodies[0];
const rows=Array.from(body.rows);
function sortBy(col, dir){
  const ths=table.tHead.rows[0].cells;
  for(const th of ths){th.classList.remove('asc','desc');}
  ths[col].classList.add(dir>0?'asc':'desc');
  const key=r=>r.cells[col].dataset.v;
  const num=rows.every(r=>key(r)===''||!isNaN(parseFloat(key(r))));
  rows.sort((a,b)=>{
    const x=key(a), y=key(b);
    if(x===''&&y!=='') return 1; if(y===''&&x!=='') return -1;
    return (num?(parseFloat(x)-parseFloat(y)):x.localeCompare(y))*dir;
  });
  for(const r of rows) body.appendChild(r);
}
for(const [i,th] of Array.from(table.tHead.rows[0].cells).entries()){
  th.addEventListener('click',()=>sortBy(i, th.classList.contains('asc')?-1:1));
}
const text=document.getElementById('text'), slice=document.getElementById('slice'),
      only=document.getElementById('only'), count=document.getElementById('count');
function filter(){
  const t=text.value.toLowerCase(), s=slice.value, o=only.checked, attr=only.dataset.attr;
  let n=0;
  for(const r of rows){
    const show=(!t||r.cells[0].textContent.toLowerCase().includes(t)||
                r.cells[1].querySelector('summary').textContent.toLowerCase().includes(t))
      &&(!s||JSON.parse(r.dataset.slices).includes(s))&&(!o||r.dataset[attr]==='1');
    r.style.display=show?'':'none'; if(show) n++;
  }
  count.textContent=n+' of '+rows.length+' queries';
}
text.addEventListener('input',filter); slice.addEventListener('change',filter);
only.addEventListener('change',filter);
sortBy(parseInt(table.dataset.decide), 1); filter();
})();
"""


def _span(low: Any, high: Any) -> str:
    """``[-0.041, +0.017]``; empty when there is no interval (one query)."""
    ok = all(isinstance(v, int | float) and math.isfinite(v) for v in (low, high))
    return f"[{low:+.3f}, {high:+.3f}]" if ok else ""


def slice_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """The gate's slice results (rageval.gate.slices rows as dicts) as a table above the queries;
    empty without gated slices."""
    if not rows:
        return ""
    head = ["slice", "n", "metric", "baseline", "current", "change", "95% interval", "tolerance"]
    head += ["detects", "p (Holm)", "verdict"]
    body = []
    for r in rows:
        delta = r.get("delta")
        cls = "down" if r.get("verdict") == "regressed" else "up" if (delta or 0) > 0 else ""
        pooled = f" ({', '.join(r['pooled'])})" if r.get("pooled") else ""
        cells = [
            f"<td>{_esc(r.get('slice'))}{_esc(pooled)}</td>",
            f'<td class="n">{_esc(r.get("n"))}</td>',
            f"<td>{_esc(r.get('metric'))}</td>",
            f'<td class="n">{_num(r.get("baseline"))}</td>',
            f'<td class="n">{_num(r.get("current"))}</td>',
            f'<td class="n {cls}">{"" if delta is None else f"{delta:+.3f}"}</td>',
            f'<td class="n">{_span(r.get("low"), r.get("high"))}</td>',
            f'<td class="n">{_num(r.get("tolerance"))}</td>',
            f'<td class="n">{_num(r.get("detects"))}</td>',
            f'<td class="n">{float(r.get("p_value", 1.0)):.3g}</td>',
            f'<td class="{cls}">{_esc(r.get("verdict"))}</td>',
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    ths = "".join(f"<th>{_esc(h)}</th>" for h in head)
    return (
        f'<h2>Slices</h2><div class="summary">Gated slices (gate.slices): p is the paired '
        f"randomization test, Holm-adjusted over the {len(rows)} slice tests.</div>"
        f'<table class="slices"><thead><tr>{ths}</tr></thead><tbody>{"".join(body)}</tbody>'
        "</table><h2>Queries</h2>"
    )


def run_slice_section(report: Mapping[str, Any], names: Sequence[str]) -> str:
    """A run's slices (report.json ``slices``) as a table above its queries: n and each shown
    metric as mean [95% CI]; empty for a report without slices."""
    block = report.get("slices")
    rows = block.get("rows") if isinstance(block, Mapping) else None
    if not rows:
        return ""
    shown = [m for m in names if m in (block.get("metrics") or [])]
    ths = "".join(f"<th>{_esc(h)}</th>" for h in ["slice", "n", *shown])
    body = []
    for r in rows:
        pooled = f" ({', '.join(r['pooled'])})" if r.get("pooled") else ""
        cells = [
            f"<td>{_esc(r['slice'])}{_esc(pooled)}</td>",
            f'<td class="n">{_esc(r.get("n"))}</td>',
        ]
        for m in shown:
            mean, (lo, hi) = r["metrics"].get(m), r["ci"].get(m, [None, None])
            ci = "" if lo is None or hi is None else f" [{_num(lo)}, {_num(hi)}]"
            cells.append(f'<td class="n">{_num(mean)}{ci}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<h2>Slices</h2><div class="summary">By {_esc(", ".join(block.get("fields", [])))}: '
        f"means with 95% bootstrap CIs; slices under {_esc(block.get('min_slice_size'))} queries "
        f'pooled into &lt;field&gt;=other.</div><table class="slices"><thead><tr>{ths}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table><h2>Queries</h2>"
    )


def _page(
    title: str,
    summary: str,
    head: list[str],
    rows: list[str],
    slices: list[str],
    *,
    decide_col: int,
    toggle: str,
    before: str = "",
) -> str:
    attr = "miss" if toggle.startswith("misses") else "changed"
    options = "".join(f'<option value="{_esc(s)}">{_esc(s)}</option>' for s in slices)
    ths = "".join(f"<th>{_esc(h)}</th>" for h in head)
    return with_csp(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>{CSS}</style></head><body>
<h1>{_esc(title)}</h1><div class="summary">{_esc(summary)}. Worst queries first; click a column
to sort, a query to see its top results (evidence highlighted, relevant ones marked).</div>
{before}<div class="filters">
<input id="text" type="search" placeholder="filter by id or query text">
<select id="slice"><option value="">all slices</option>{options}</select>
<label><input id="only" type="checkbox" data-attr="{attr}"> {_esc(toggle)}</label>
<span id="count" class="count">{len(rows)} queries</span></div>
<table id="q" data-decide="{decide_col}"><thead><tr>{ths}</tr></thead>
<tbody>{"".join(rows)}</tbody></table>
<script>{JS}</script></body></html>
""")


def write_page(path: Path, report: Mapping[str, Any], chunks: Mapping[str, Any]) -> Path:
    """Write the page of one run to ``path``."""
    atomic_write_text(path, render(report, chunks))
    return Path(path)


def verdict_section(lines: Sequence[str]) -> str:
    """The gate's verdict lines as a list above the queries (empty without them)."""
    if not lines:
        return ""
    items = "".join(f"<li>{_esc(line)}</li>" for line in lines)
    return f'<h2>Verdict</h2><ul class="summary">{items}</ul>'


def write_diff_page(
    path: Path,
    baseline: Mapping[str, Any],
    candidate_dir: Path,
    baseline_chunks: Mapping[str, Any] | None = None,
    names: tuple[str, str] = ("baseline", "candidate"),
    slice_rows: Sequence[Mapping[str, Any]] = (),
    verdict: Sequence[str] = (),
) -> Path:
    """The gate's page: ``baseline`` (report.json contents, e.g. golden/baseline.json) against
    the run in ``candidate_dir``; written to ``path`` (e.g. beside gate.md), with the gate's
    ``verdict`` lines and ``slice_rows`` (rageval.gate.slices) above the queries."""
    from rageval.report.per_query import read_chunks

    cand = json.loads((Path(candidate_dir) / "report.json").read_text(encoding="utf-8"))
    cand_chunks = read_chunks(Path(candidate_dir))
    page = render_diff(
        baseline,
        baseline_chunks or {},
        cand,
        cand_chunks,
        *names,
        slice_rows=slice_rows,
        verdict=verdict,
    )
    atomic_write_text(path, page)
    return Path(path)
