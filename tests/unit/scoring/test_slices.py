"""Slices: grouping by source, tags and meta keys, pooling of small slices into <field>=other,
CIs equal to a direct bootstrap of the slice's values, MLflow-safe keys, the console table."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from rageval.errors import ConfigError
from rageval.report.eval_report import (
    EvalReport,
    RunFacts,
    slice_console,
    slice_csv,
    slices_block,
)
from rageval.scoring.slices import (
    check_fields,
    field_values,
    find_group,
    group_rows,
    key_part,
    slice_key,
    slice_table,
)
from rageval.scoring.stats import bootstrap_ci

MLFLOW_KEY = re.compile(r"^[/\w.\- ]*$", re.ASCII)  # what MLflow accepts on every platform


def rows_of(spec):
    """``spec``: (source, tags, meta, recall@5) per query."""
    return [
        {"id": f"q{i:03d}", "source": s, "tags": list(t), "meta": m, "recall@5": v}
        for i, (s, t, m, v) in enumerate(spec)
    ]


def test_small_slices_are_pooled_into_other_and_listed_by_name():
    rows = rows_of(
        [("ticket", (), {}, 1.0)] * 12
        + [("adversarial", (), {}, 0.0)] * 4
        + [("synthetic", (), {}, 0.5)] * 3
        + [(None, (), {}, 0.5)] * 2
    )
    groups = group_rows(rows, ["source"], min_size=10)
    assert [(g.name, len(g.index)) for g in groups] == [("source=ticket", 12), ("source=other", 9)]
    assert groups[1].pooled == ("(none)", "adversarial", "synthetic")
    # with a lower threshold each source stands alone, largest first; the query without one too
    names = [g.name for g in group_rows(rows, ["source"], min_size=2)]
    assert names == ["source=ticket", "source=adversarial", "source=synthetic", "source=(none)"]


def test_a_query_is_in_the_slice_of_each_tag_and_once_in_other():
    rows = rows_of(
        [("t", ("hr", "uk"), {}, 1.0)] * 3
        + [("t", ("hr",), {}, 0.0)] * 8
        + [("t", ("nl",), {}, 1.0)]
    )
    groups = {g.name: g for g in group_rows(rows, ["tags"], min_size=10)}
    assert len(groups["tags=hr"].index) == 11
    other = groups["tags=other"]
    assert other.pooled == ("nl", "uk") and len(other.index) == 4  # 3 uk + 1 nl, none twice


def test_meta_keys_slice_and_lists_or_numbers_become_values():
    rows = rows_of(
        [("t", (), {"difficulty": "hard", "hops": 2}, 0.0)] * 2
        + [("t", (), {"difficulty": ["easy", "short"], "hops": 1.0}, 1.0)]
    )
    assert field_values(rows[2], "difficulty") == ["easy", "short"]
    assert field_values(rows[2], "meta.hops") == ["1"] and field_values(rows[0], "hops") == ["2"]
    names = [g.name for g in group_rows(rows, ["difficulty"], min_size=1)]
    assert names == ["difficulty=hard", "difficulty=easy", "difficulty=short"]


def test_a_field_no_query_has_is_refused_naming_the_ones_it_has():
    rows = rows_of([("t", (), {"difficulty": "hard"}, 1.0)])
    with pytest.raises(ConfigError, match=r"'dificulty'.*meta key \(difficulty\)"):
        check_fields(["dificulty"], rows, "golden.jsonl")
    check_fields(["source", "tags", "difficulty"], rows, "golden.jsonl")
    with pytest.raises(ConfigError, match="list of field names"):
        check_fields("source")


def test_find_group_names_a_value_even_when_pooled_and_the_pool_itself():
    rows = rows_of([("ticket", (), {}, 1.0)] * 12 + [("adversarial", (), {}, 0.0)] * 4)
    assert len(find_group(rows, "source=adversarial", 10).index) == 4
    assert find_group(rows, "source=other", 10).pooled == ("adversarial",)
    with pytest.raises(ConfigError, match="slices of source: adversarial, ticket"):
        find_group(rows, "source=synthetic", 10)


def test_slice_cis_equal_a_direct_bootstrap_of_the_slice_values():
    rng = np.random.default_rng(7)
    values = rng.random(40)
    rows = rows_of(
        [("ticket" if i % 3 else "adversarial", (), {}, float(v)) for i, v in enumerate(values)]
    )
    rows[5]["recall@5"] = None  # undefined for a query: left out of mean and CI, as overall
    table = {r["slice"]: r for r in slice_table(rows, ["source"], ["recall@5"], min_size=5)}
    for name in ("ticket", "adversarial"):
        v = np.array(
            [r["recall@5"] for r in rows if r["source"] == name and r["recall@5"] is not None]
        )
        got = table[f"source={name}"]
        assert got["n"] == sum(r["source"] == name for r in rows)
        assert got["metrics"]["recall@5"] == pytest.approx(v.mean(), abs=1e-12)
        assert got["ci"]["recall@5"] == pytest.approx(list(bootstrap_ci(v)), abs=1e-12)
        lo, hi = got["ci"]["recall@5"]
        assert lo < v.mean() < hi


def test_mlflow_keys_are_safe_stable_and_distinct():
    assert slice_key("source", "ticket", "recall@5") == "slice/source.ticket.recall_at_5"
    odd = ["multi hop", "multi.hop", "multi/hop", "multi_hop", "dé", "a:b", "(none)", "x" * 300]
    keys = [slice_key("tags", v, "ndcg@10") for v in odd]
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert MLFLOW_KEY.match(key) and len(key) <= 250 and key.count(".") == 2
    assert key_part("multi.hop") == key_part("multi.hop")  # the same value, the same key
    assert key_part("multi_hop") == "multi_hop"


def _report(rows, fields=("source",), min_size=10, k=5):
    names = ["recall@5", "ndcg@5", "hit_rate@5", "evidence_recall@5", "recall@1024t"]
    for r in rows:
        for m in names[1:]:
            r.setdefault(m, r["recall@5"])
    facts = RunFacts(k, [k], {}, {}, {}, {}, {}, slices=fields, min_slice_size=min_size)
    block = slices_block(rows, names, facts)
    means = dict.fromkeys(names, 0.5)
    return EvalReport(means, {}, rows, block, {}, {}, {}, {}, {}, "chunk", k, [k])


def test_console_table_fits_120_columns_and_lists_what_other_pooled():
    rows = rows_of(
        [("ticket", ("a-rather-long-tag-name-for-a-slice",), {}, 1.0)] * 12
        + [("adversarial", ("b",), {}, 0.0)] * 4
    )
    rep = _report(rows, fields=("source", "tags"))
    text = slice_console(rep)
    assert all(len(line) <= 120 for line in text.splitlines())
    assert "source=ticket" in text and "source=other pools 1: adversarial" in text
    assert "1.000 [1.00, 1.00]" in text
    assert rep.slices["metrics"][-1] == "recall@1024t"  # the budget recall a sweep decides by
    csv_text = slice_csv(rep.slices)
    head, first = csv_text.splitlines()[:2]
    assert head.startswith("slice,field,value,n,mlflow_prefix,recall@5,recall@5_low")
    assert first.startswith("source=ticket,source,ticket,12,slice/source.ticket,1.0,")
    assert slice_console(_report([], fields=())) == ""
    bare = rows_of([(None, (), {}, 1.0)] * 3)  # a BEIR set: no source, no tags, no meta
    note = slice_console(_report(bare, fields=("source",)))
    assert note.startswith("Slices by source: none, no query has it; slices=[<field>]")
    assert not math.isnan(rep.slices["rows"][0]["metrics"]["ndcg@5"])


def test_the_run_page_shows_each_slice_with_its_ci():
    from rageval.report.html import render

    rows = rows_of([("ticket", (), {}, 1.0)] * 12 + [("adversarial", (), {}, 0.0)] * 4)
    for r in rows:
        r["first_relevant_rank"] = 1
    page = render(_report(rows).to_dict(), {})
    table = page.split("<h2>Slices</h2>")[1].split("<h2>Queries</h2>")[0]
    assert '<td>source=other (adversarial)</td><td class="n">4</td>' in table
    assert '<td class="n">1.000 [1.000, 1.000]</td>' in table


def test_a_field_with_thousands_of_values_is_capped_with_a_warning():
    import pytest

    from rageval.scoring.slices import MAX_SLICES, SliceCapWarning, group_rows

    rows = [{"source": None, "tags": (), "meta": {"user": f"u{i:05d}"}} for i in range(3000)]
    rows += [{"source": None, "tags": (), "meta": {"user": "big"}}] * 5
    with pytest.warns(SliceCapWarning, match=r"slices by meta.user: 3001 values .* the other 2951"):
        groups = group_rows(rows, ["meta.user"], 1)
    assert len(groups) == MAX_SLICES + 1 and groups[0].value == "big"
    assert groups[-1].value == "other" and len(groups[-1].pooled) == 3001 - MAX_SLICES
