import json
import os

import pytest

from rageval.errors import ConfigError, InputError
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.inputs.judgements import (
    Judgement,
    append_judgements,
    default_path,
    judgement_qrels,
    judgements_digest,
    load_judgements,
    merge_qrels,
    now,
    parse_judgement,
)
from rageval.types import Chunk, Document, Evidence, GoldenQuery, GoldenSet

LEAVE = "sixteen weeks of fully paid parental leave"
CONTRACTORS = "Contractors are not covered by this policy"


@pytest.fixture(scope="module")
def data(mini):
    return load_corpus(str(mini / "corpus")), load_golden(mini / "golden.jsonl")


def rec(**over):
    base = {
        "query_id": "q01",
        "doc": "policies/leave",
        "quote": LEAVE,
        "grade": 2,
        "judge": "human:ana",
        "at": "2026-12-01T06:00:00Z",
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def write(tmp_path, records, name="judgements.jsonl"):
    p = tmp_path / name
    p.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records),
        encoding="utf-8",
    )
    return p


def test_missing_file_means_no_judgements(tmp_path, data):
    js = load_judgements(tmp_path / "judgements.jsonl", *data)
    assert len(js) == 0 and list(js) == []
    assert js.digest("gold") == judgements_digest([])


def test_loads_records_with_resolved_spans_and_optional_keys(tmp_path, data):
    docs, golden = data
    p = write(
        tmp_path,
        [
            rec(rationale="states the number of weeks"),
            "",
            rec(query_id="q05", quote=CONTRACTORS.lower(), grade=0, judge="llm:gpt-x"),
        ],
    )
    js = load_judgements(p, docs, golden)
    a, b = js.records
    text = next(d.text for d in docs if d.id == "policies/leave")
    assert text[a.span[0] : a.span[1]] == LEAVE and a.line == 1
    assert a.rationale == "states the number of weeks" and a.kind == "human"
    # quotes resolve like golden evidence: case folded here
    assert text[b.span[0] : b.span[1]] == CONTRACTORS and b.line == 3 and b.kind == "llm"
    assert b.to_dict() == rec(query_id="q05", quote=CONTRACTORS.lower(), grade=0, judge="llm:gpt-x")


def test_typographic_quote_and_occurrence_resolve(tmp_path):
    doc = Document("d", "It’s here. Fee: 5 — 6. Fee: 5 — 6.")
    golden = GoldenSet("g.jsonl", (GoldenQuery("q", "x", evidence=(Evidence("d", "here"),)),), "")
    p = write(
        tmp_path,
        [
            rec(query_id="q", doc="d", quote="it's here"),
            rec(query_id="q", doc="d", quote="Fee: 5 - 6", occurrence=2),
        ],
    )
    first, second = load_judgements(p, [doc], golden).records
    assert first.span == (0, 9)
    assert doc.text[second.span[0] : second.span[1]] == "Fee: 5 — 6" and second.span[0] > 15


@pytest.mark.parametrize(
    "line, expect",
    [
        ("{not json", "malformed JSON"),
        ('["x"]', "expected a JSON object"),
        (json.dumps(rec(score=2)), "unknown key 'score'"),
        (json.dumps(rec(at=None)), "missing 'at'"),
        (json.dumps(rec(query_id="q99")), "query 'q99': unknown query id"),
        (json.dumps(rec(query_id="q1")), "(did you mean 'q01'?)"),
        (json.dumps(rec(grade=4)), "grade must be 0 (not relevant) to 3 (got 4)"),
        (json.dumps(rec(grade=-1)), "grade must be 0"),
        (json.dumps(rec(grade=1.5)), "grade must be 0"),
        (json.dumps(rec(grade=True)), "grade must be 0"),
        (json.dumps(rec(grade="2")), "grade must be 0"),
        (json.dumps(rec(judge="ana")), '"judge" must be "human:<name>" or "llm:<model>"'),
        (json.dumps(rec(judge="human:")), '"judge" must be'),
        (json.dumps(rec(judge="robot:x")), '"judge" must be'),
        (json.dumps(rec(at="yesterday")), '"at" must be an ISO 8601 time'),
        (json.dumps(rec(at="2026-12-01T06:00:00")), '"at" needs a time zone'),
        (json.dumps(rec(doc="policies/leav")), "unknown document 'policies/leav' (did you mean"),
        (json.dumps(rec(quote="")), '"quote" must be a non-empty string'),
        (json.dumps(rec(rationale=3)), '"rationale" must be a string'),
        (json.dumps(rec(occurrence=0)), '"occurrence" must be a whole number >= 1'),
        (json.dumps(rec(occurrence=1, start=0)), 'give "occurrence" or "start", not both'),
        (json.dumps(rec(occurrence=2)), "occurrence 2 asked, but the quote occurs 1 time"),
        (json.dumps(rec(start=3)), "no match of the quote starts at 3"),
    ],
)
def test_bad_lines_name_file_line_and_fix(tmp_path, data, line, expect):
    p = write(tmp_path, [rec(), line])
    with pytest.raises(InputError) as err:
        load_judgements(p, *data)
    assert str(err.value).startswith(f"{p}:2: ") and expect in str(err.value)


def test_missed_quote_names_the_nearest_passage(tmp_path, data):
    p = write(tmp_path, [rec(quote="sixteen weeks of fully paid paternal leave")])
    with pytest.raises(InputError, match=r":1: query 'q01': quote not found") as err:
        load_judgements(p, *data)
    assert "nearest passage (line 8" in str(err.value) and "copy the quote verbatim" in str(
        err.value
    )


def test_duplicates_keep_the_newest_per_query_passage_and_judge(tmp_path, data):
    p = write(
        tmp_path,
        [
            rec(grade=1, at="2026-12-01T07:00:00+01:00"),  # 06:00 UTC
            rec(grade=3, at="2026-12-01T05:59:59Z"),  # older: dropped
            rec(grade=2, judge="human:bo"),  # another judge: kept
            rec(grade=0, quote=LEAVE.upper()),  # same span, same time, later line: wins (said)
        ],
    )
    from rageval.inputs.judgements import DuplicateGradeWarning

    with pytest.warns(DuplicateGradeWarning):
        js = load_judgements(p, *data)
    assert [(j.judge, j.grade) for j in js] == [("human:ana", 0), ("human:bo", 2)]


def test_label_sets_count_humans_or_everyone_and_digest_follows(tmp_path, data):
    from rageval.inputs.judgements import calibration_path

    p = write(tmp_path, [rec(), rec(judge="llm:m", grade=0)])
    js = load_judgements(p, *data)
    assert [j.judge for j in js.counted("gold")] == ["human:ana"]
    # LLM labels count only through an accepted calibration of that model against gold
    assert [j.judge for j in js.counted("all")] == ["human:ana"]
    assert [j.judge for j in js.uncalibrated()] == ["llm:m"]
    calibration = calibration_path(p, "m")
    for report in ({"verdict": "rejected", "judge": "llm:m"}, {"verdict": "accepted"}, "[1]"):
        calibration.write_text(report if isinstance(report, str) else json.dumps(report))
        assert [j.judge for j in js.counted("all")] == ["human:ana"]
    calibration.write_text(json.dumps({"verdict": "accepted", "judge": "llm:m"}))
    assert [j.judge for j in js.counted("all")] == ["human:ana", "llm:m"]
    assert js.digest("gold") != js.digest("all")
    # order and formatting do not change a digest; a grade does
    q = write(tmp_path, [json.dumps(rec(judge="llm:m", grade=0), indent=None), rec()], "b.jsonl")
    calibration_path(q, "m").write_text(calibration.read_text())
    assert load_judgements(q, *data).digest("all") == js.digest("all")
    r = write(tmp_path, [rec(grade=1), rec(judge="llm:m", grade=0)], "c.jsonl")
    assert load_judgements(r, *data).digest("gold") != js.digest("gold")
    with pytest.raises(ConfigError, match="labels must be one of gold, all"):
        js.counted("llm")


def test_append_merges_newest_wins_and_rewrites_atomically(tmp_path, data):
    p = write(tmp_path, [rec(), rec(query_id="q05", quote=CONTRACTORS, grade=1)])
    result = append_judgements(
        p,
        [
            rec(grade=3, at="2026-12-01T06:30:00Z"),  # replaces line 1
            rec(query_id="q05", quote=CONTRACTORS, grade=0, at="2026-11-30T00:00:00Z"),  # older
            rec(judge="human:bo", grade=1),  # new
        ],
        *data,
    )
    assert (result.added, result.replaced, result.older, result.total) == (1, 1, 1, 3)
    js = load_judgements(p, *data)
    assert [(j.query_id, j.judge, j.grade) for j in js] == [
        ("q01", "human:ana", 3),
        ("q05", "human:ana", 1),
        ("q01", "human:bo", 1),
    ]
    assert [json.loads(x)["query_id"] for x in p.read_text().splitlines()] == ["q01", "q05", "q01"]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_importing_the_same_file_twice_changes_nothing(tmp_path, data):
    target = write(tmp_path, [rec()])
    src = write(tmp_path, [rec(judge="human:bo"), rec(grade=1, at="2026-12-02T00:00:00Z")], "i")
    first = append_judgements(target, load_judgements(src, *data), *data, source=str(src))
    assert (first.added, first.replaced, first.unchanged) == (1, 1, 0)
    text, mtime = target.read_text(), target.stat().st_mtime_ns
    again = append_judgements(target, load_judgements(src, *data), *data, source=str(src))
    assert (again.added, again.replaced, again.unchanged, again.total) == (0, 0, 2, 2)
    assert target.read_text() == text and target.stat().st_mtime_ns == mtime


def test_append_creates_the_file_and_accepts_judgement_objects(tmp_path, data):
    p = tmp_path / "golden" / "judgements.jsonl"
    j = parse_judgement(rec(judge="llm:m", at=now()))
    assert append_judgements(p, [j], *data).added == 1
    (loaded,) = load_judgements(p, *data)
    assert loaded.judge == "llm:m" and loaded.to_dict() == j.to_dict()


@pytest.mark.parametrize(
    "bad, expect",
    [
        (rec(grade=5), "<import>:2: query 'q01': grade must be 0"),
        (rec(quote="not in the policy at all"), "<import>:2: query 'q01': quote not found"),
        (rec(query_id="nope"), "<import>:2: query 'nope': unknown query id"),
    ],
)
def test_append_with_a_bad_record_leaves_the_file_untouched(tmp_path, data, bad, expect):
    p = write(tmp_path, [rec()])
    before = p.read_bytes()
    with pytest.raises(InputError) as err:
        append_judgements(p, [rec(judge="human:bo"), bad], *data, source="<import>")
    assert str(err.value).startswith(expect)
    assert p.read_bytes() == before


def test_append_refuses_to_overwrite_an_invalid_file(tmp_path, data):
    p = write(tmp_path, [rec(), "{broken"])
    before = p.read_bytes()
    with pytest.raises(InputError, match=r":2: malformed JSON"):
        append_judgements(p, [rec(judge="human:bo")], *data)
    assert p.read_bytes() == before


def _chunks(doc_id, bounds, text):
    return [
        Chunk(f"{doc_id}#{i}", doc_id, i, text[s:e], s, e, e - s) for i, (s, e) in enumerate(bounds)
    ]


def test_chunk_labels_for_any_chunking_max_grade_and_zero_counts_as_judged():
    text = "a" * 100 + "P" * 100 + "b" * 100 + "Q" * 100
    js = [
        Judgement("q", "d", "P" * 100, 2, "human:a", "2026-12-01T06:00:00Z", span=(100, 200)),
        Judgement("q", "d", "P" * 100, 1, "human:b", "2026-12-01T06:00:00Z", span=(100, 200)),
        Judgement("q", "d", "Q" * 100, 0, "human:a", "2026-12-01T06:00:00Z", span=(300, 400)),
    ]
    # the passages' own chunking, with overlapping neighbours: a neighbour that shares a sliver
    # of a judged passage is not labelled by it
    same = _chunks("d", [(0, 110), (90, 210), (190, 310), (290, 400)], text)
    assert judgement_qrels(js, same, "chunk") == {"q": {"d#1": 2, "d#3": 0}}
    # a coarser chunking: the chunk that holds the relevant passage takes the max grade
    coarse = _chunks("d", [(0, 250), (250, 400)], text)
    assert judgement_qrels(js, coarse, "chunk") == {"q": {"d#0": 2, "d#1": 0}}
    # a finer one: each half of a passage is mostly passage
    fine = _chunks("d", [(i, i + 50) for i in range(0, 400, 50)], text)
    assert judgement_qrels(js, fine, "chunk") == {"q": {"d#2": 2, "d#3": 2, "d#6": 0, "d#7": 0}}
    assert judgement_qrels(js, fine, "doc") == {"q": {"d": 2}}


def test_merge_qrels_takes_the_max_and_keeps_zero_grades():
    assert merge_qrels({"q": {"a": 1, "b": 0}}, {"q": {"a": 0, "b": 0, "c": 2}, "r": {"x": 0}}) == {
        "q": {"a": 1, "b": 0, "c": 2},
        "r": {"x": 0},
    }


def test_default_path_sits_next_to_the_golden_set():
    assert str(default_path("golden/retriever.jsonl")) == os.path.join("golden", "judgements.jsonl")


def test_bounds_a_rationale_and_names_two_grades_at_the_same_time(tmp_path, data):
    from rageval.inputs.judgements import MAX_RATIONALE, DuplicateGradeWarning

    long = write(tmp_path, [rec(rationale="x" * (MAX_RATIONALE + 1))], "long.jsonl")
    with pytest.raises(InputError, match=r"long.jsonl:1: .*rationale.* above the 2,000"):
        load_judgements(long, *data)
    same = write(tmp_path, [rec(grade=1), rec(grade=3)], "same.jsonl")
    with pytest.warns(
        DuplicateGradeWarning, match="graded the same passage of query 'q01' 1 and 3"
    ):
        js = load_judgements(same, *data)
    assert [j.grade for j in js] == [3]


def test_pool_refuses_chunk_offsets_outside_their_document(tmp_path):
    from rageval.authoring.pool import RunFolder, _unit

    docs = {"d": Document("d", "0123456789")}
    for start, end in ((-100, 5), (3, 50), (5, 5), ("1", 4), (True, 4)):
        chunks = {"c": {"id": "c", "doc_id": "d", "start": start, "end": end, "ordinal": 0}}
        run = RunFolder(tmp_path, "r", {"level": "chunk"}, {}, {}, chunks)
        with pytest.raises(InputError, match="outside the document's 0 to 10"):
            _unit(run, "c", docs)
    ok = RunFolder(
        tmp_path, "r", {}, {}, {}, {"c": {"doc_id": "d", "start": 2, "end": 5, "ordinal": 1}}
    )
    assert _unit(ok, "c", docs) == ("d", 2, 5, "d:1")
