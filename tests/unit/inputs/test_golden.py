import json

import pytest

from rageval.errors import InputError
from rageval.inputs.golden import golden_digest, load_golden


def write(tmp_path, lines):
    p = tmp_path / "g.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_loads_all_label_kinds_with_grades_source_and_tags(mini):
    g = load_golden(mini / "golden.jsonl")
    assert len(g.queries) == 8
    q3 = next(q for q in g.queries if q.id == "q03")
    assert [(e.doc, e.grade) for e in q3.evidence] == [
        ("runbooks/invoicing", 2),
        ("runbooks/invoicing", 1),
    ]
    assert q3.source == "ticket" and q3.tags == ("ops", "secrets") and q3.line == 3
    q4 = next(q for q in g.queries if q.id == "q04")
    assert q4.relevant_docs == {"policies/expenses": 1}


def test_chunk_labels_as_list_or_graded_mapping(tmp_path):
    g = load_golden(
        write(
            tmp_path,
            [
                json.dumps({"id": "a", "query": "x", "relevant": ["d:0", "d:1"]}),
                json.dumps({"id": "b", "query": "y", "relevant": {"d:0": 3, "d:2": 0}}),
            ],
        )
    )
    assert g.queries[0].relevant == {"d:0": 1, "d:1": 1}
    assert g.queries[1].relevant == {"d:0": 3, "d:2": 0}


def test_digest_ignores_formatting_and_order_but_not_content(tmp_path):
    a = {"id": "a", "query": "x", "relevant": ["d:0"]}
    b = {"id": "b", "query": "y", "relevant_docs": ["d"]}
    g1 = load_golden(write(tmp_path, [json.dumps(a), json.dumps(b)]))
    p2 = tmp_path / "h.jsonl"
    p2.write_text(json.dumps(b, indent=None, separators=(",", ":")) + "\n\n" + json.dumps(a) + "\n")
    assert load_golden(p2).digest == g1.digest
    b2 = {**b, "query": "y?"}
    p3 = tmp_path / "i.jsonl"
    p3.write_text(json.dumps(a) + "\n" + json.dumps(b2) + "\n")
    assert load_golden(p3).digest != g1.digest
    assert golden_digest(g1.queries) == g1.digest


@pytest.mark.parametrize(
    "line, expect",
    [
        ("{not json", "malformed JSON"),
        ('["a"]', "expected a JSON object"),
        ('{"query": "x", "relevant": ["d:0"]}', 'missing "id"'),
        ('{"id": "q9", "relevant": ["d:0"]}', "query 'q9': missing or empty \"query\""),
        ('{"id": "q9", "query": "x"}', "query 'q9' has no labels"),
        ('{"id": "q9", "query": "x", "relevant": []}', '"relevant" is empty'),
        ('{"id": "q9", "query": "x", "evidence": [{"doc": "d"}]}', 'missing or empty "quote"'),
        ('{"id": "q9", "query": "x", "evidence": [{"quote": "q"}]}', 'missing "doc"'),
        ('{"id": "q9", "query": "x", "relevant": {"d:0": -1}}', "grade must be >= 0"),
        ('{"id": "q9", "query": "x", "relevant": {"d:0": 1.5}}', "whole number"),
        ('{"id": "q9", "query": "x", "relevant": ["d"], "tags": "a"}', '"tags" must be a list'),
        (
            '{"id": "q9", "query": "x", "evidence": [{"doc": "d", "quote": "q", "grdae": 2}]}',
            "evidence[0]: unknown key 'grdae'; an evidence item holds doc, grade, occurrence",
        ),
        (
            '{"id": "q9", "query": "x", "evidence": [{"doc": "d", "quote": "q", "occurrence": 0}]}',
            '"occurrence" must be a whole number >= 1',
        ),
        (
            '{"id": "q9", "query": "x", "evidence": [{"doc": "d", "quote": "q", "start": -1}]}',
            '"start" must be a character offset >= 0',
        ),
        (
            '{"id": "q9", "query": "x", "evidence": [{"doc": "d", "quote": "q", "start": 1, '
            '"occurrence": 2}]}',
            'give "occurrence" or "start", not both',
        ),
    ],
)
def test_bad_lines_name_file_line_and_query(tmp_path, line, expect):
    good = json.dumps({"id": "q1", "query": "x", "relevant": ["d:0"]})
    p = write(tmp_path, [good, line])
    with pytest.raises(InputError) as err:
        load_golden(p)
    assert f"{p}:2: " in str(err.value)
    assert expect in str(err.value)
    assert err.value.exit_code == 2


def test_duplicate_ids_name_both_lines(tmp_path):
    q = json.dumps({"id": "q1", "query": "x", "relevant": ["d:0"]})
    with pytest.raises(InputError, match=r"g.jsonl:3: duplicate query id 'q1' \(first on line 1\)"):
        load_golden(write(tmp_path, [q, "", q]))


def test_empty_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(InputError, match="golden set is empty"):
        load_golden(write(tmp_path, ["", "  "]))
    with pytest.raises(InputError, match="not found"):
        load_golden(tmp_path / "nope.jsonl")
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b'{"id": "a", "query": "\xff"}\n')
    with pytest.raises(InputError, match="not valid UTF-8"):
        load_golden(p)


def test_bom_is_accepted(tmp_path):
    p = tmp_path / "bom.jsonl"
    p.write_bytes(
        "\ufeff".encode() + json.dumps({"id": "a", "query": "x", "relevant": ["d:0"]}).encode()
    )
    assert load_golden(p).queries[0].id == "a"


def test_meta_fields_load_and_count_in_the_digest(tmp_path):
    line = {"id": "q1", "query": "q", "relevant_docs": ["d"], "meta": {"difficulty": "hard"}}
    g = load_golden(write(tmp_path, [json.dumps(line)]))
    assert g.queries[0].meta == {"difficulty": "hard"}
    plain = load_golden(write(tmp_path, [json.dumps({**line, "meta": {"difficulty": "easy"}})]))
    assert plain.digest != g.digest  # slices read meta: a change is a change of the golden set


@pytest.mark.parametrize(
    ("meta", "message"),
    [('"hard"', '"meta" must be an object'), ('{"d": {"x": 1}}', r'"meta"\[\'d\'\] must be')],
)
def test_bad_meta_names_the_line_and_the_key(tmp_path, meta, message):
    text = '{"id": "q1", "query": "q", "relevant_docs": ["d"], "meta": ' + meta + "}"
    with pytest.raises(InputError, match=message) as err:
        load_golden(write(tmp_path, [text]))
    assert "g.jsonl:1: query 'q1'" in str(err.value)
