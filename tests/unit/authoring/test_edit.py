"""``rageval golden add`` and ``rageval golden migrate``."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from rageval.authoring.edit import chunk_quote, next_ids
from rageval.cli.main import main
from rageval.errors import InputError
from rageval.inputs.chunking import ChunkingSpec, chunk_documents
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.scoring.metrics import METRICS, score_rankings
from rageval.scoring.relevance import resolve


@pytest.fixture
def work(tmp_path, mini):
    shutil.copytree(mini, tmp_path / "golden")
    return tmp_path / "golden" / "golden.jsonl"


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


# --- add ----------------------------------------------------------------------------------------


def test_add_appends_one_checked_entry_and_leaves_every_other_line_alone(work, capsys):
    before = work.read_bytes()
    code = main(
        [
            "golden",
            "add",
            str(work),
            "--query",
            "  How long is  carry-over valid? ",
            "--evidence",
            "policies/leave",
            "anything beyond that expires on 31 march",
            "--evidence",
            "faq",
            "Who approves travel?",
            "--grade",
            "2",
            "--tag",
            "hr",
            "--tag",
            "leave",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert work.read_bytes().startswith(before)
    new = json.loads(lines(work)[-1])
    assert new == {
        "id": "q-001",
        "query": "How long is carry-over valid?",
        "evidence": [
            {
                "doc": "policies/leave",
                "quote": "anything beyond that expires on 31 March",
                "grade": 2,
            },
            {"doc": "faq", "quote": "Who approves travel?", "grade": 1},
        ],
        "source": "ticket",
        "tags": ["hr", "leave"],
    }  # the loosely typed quote is stored as the document's own text
    assert load_golden(work).queries[-1].id == "q-001"
    assert (
        main(
            [
                "golden",
                "add",
                str(work),
                "--query",
                "Another one?",
                "--evidence",
                "faq",
                "Who approves travel?",
            ]
        )
        == 0
    )
    assert json.loads(lines(work)[-1])["id"] == "q-002"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--query", "x?", "--evidence", "faq", "Who approves hotels?"],
            "golden.jsonl: --evidence #1: quote not found in document 'faq'",
        ),
        (
            ["--query", "x?", "--evidence", "policies/leaves", "Sick leave"],
            "unknown document 'policies/leaves' (did you mean 'policies/leave'?)",
        ),
        (
            ["--query", "x?", "--id", "q03", "--evidence", "faq", "Who approves travel?"],
            "golden.jsonl:3: id 'q03' is taken",
        ),
        (
            [
                "--query",
                "do contractors get PARENTAL leave?",
                "--evidence",
                "faq",
                "Who approves travel?",
            ],
            "golden.jsonl:5: this query is already in the golden set as 'q05'",
        ),
        (
            [
                "--query",
                "x?",
                "--evidence",
                "faq",
                "Who approves travel?",
                "--grade",
                "1",
                "--grade",
                "2",
            ],
            "2 --grade values for 1 --evidence pairs",
        ),
    ],
)
def test_add_refuses_bad_entries_and_writes_nothing(work, capsys, argv, message):
    before = work.read_bytes()
    assert main(["golden", "add", str(work), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert work.read_bytes() == before


def test_add_from_a_production_log_line(work, tmp_path, capsys):
    log = tmp_path / "app.jsonl"
    log.write_text(
        "\n".join(
            [
                json.dumps(
                    {"ts": "2026-01-02T10:00:00Z", "query": "hotel limit in amsterdam?", "hits": 0}
                ),
                "2026-01-02T10:00:01Z INFO plain text line",
                json.dumps(
                    {
                        "request": {
                            "messages": [
                                {"content": "hi"},
                                {"content": "who approves a trip to NYC"},
                            ]
                        }
                    }
                ),
            ]
        )
        + "\n"
    )
    ev = ["--evidence", "policies/expenses", "180 euros per night in Amsterdam"]
    assert main(["golden", "add", str(work), "--from-log", f"{log}:1", *ev]) == 0
    assert json.loads(lines(work)[-1])["query"] == "hotel limit in amsterdam?"
    ev = ["--evidence", "faq", "trips outside Europe also need the approval of a director"]
    argv = ["golden", "add", str(work), "--from-log", f"{log}:3", *ev]
    assert main([*argv, "--log-field", "request.messages.-1.content"]) == 0
    assert json.loads(lines(work)[-1])["query"] == "who approves a trip to NYC"
    capsys.readouterr()
    n = len(lines(work))
    for where, message in [
        (f"{log}:2", f"{log}:2: not a JSON object log line; pass the question with --query"),
        (f"{log}:9", f"{log}: the log has fewer than 9 lines"),
        (f"{log}", "--from-log expects FILE:LINE"),
    ]:
        assert main(["golden", "add", str(work), "--from-log", where, *ev]) == 2
        assert message in capsys.readouterr().err
    assert main([*argv, "--log-field", "request.query"]) == 2
    assert f"{log}:3: no query text under request.query" in capsys.readouterr().err
    assert len(lines(work)) == n


def test_add_starts_a_new_golden_set(tmp_path, mini):
    new = tmp_path / "sub" / "new.jsonl"
    argv = ["golden", "add", str(new), "--corpus", str(mini / "corpus"), "--id", "first"]
    assert (
        main([*argv, "--query", "who approves travel", "--evidence", "faq", "Who approves travel?"])
        == 0
    )
    assert [q.id for q in load_golden(new).queries] == ["first"]


def test_next_ids_continue_after_the_highest_number():
    assert next_ids(["syn-0002", "syn-0009", "q-7", "syn-x"], "syn-", 2) == ["syn-0010", "syn-0011"]
    assert next_ids([], "q-", 1, width=3) == ["q-001"]


# --- migrate ------------------------------------------------------------------------------------


def chunk_labelled(work, tokenizer, size=48, overlap=0):
    """A golden set whose labels are chunk labels (by ordinal and by content id) for one
    chunking."""
    docs = load_corpus(work.parent / "corpus")
    chunks = chunk_documents(docs, ChunkingSpec(size, overlap), tokenizer)
    by_doc = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    leave, pay = by_doc["policies/leave"], by_doc["runbooks/payments"]
    assert len(leave) >= 4 and len(pay) >= 3
    rows = [
        {"id": "a", "query": "parental leave weeks", "relevant": [leave[2].label, leave[3].id]},
        {
            "id": "b",
            "query": "payments failover",
            "relevant": {pay[1].label: 2, pay[0].id: 1, leave[0].label: 0},
            "source": "ticket",
            "note": "kept as is",
        },
        {
            "id": "c",
            "query": "who approves travel",
            "evidence": [{"doc": "faq", "quote": "Who approves travel?"}],
            "relevant": {by_doc["faq"][0].label: 2},
            "relevant_docs": ["faq"],
            "tags": ["hr"],
        },
        {"id": "d", "query": "hotel budget", "relevant_docs": ["policies/expenses"]},
        {"id": "e", "query": "last chunk", "relevant": [leave[-1].label, pay[-1].label]},
    ]
    work.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return docs, chunks


def test_migrated_set_gives_the_same_metrics_under_the_original_chunking(
    work, tokenizer, model_dir
):
    docs, chunks = chunk_labelled(work, tokenizer)
    out = work.with_name("migrated.jsonl")
    assert main(["golden", "migrate", str(work), "--chunk", "48", "-o", str(out)]) == 0
    original, migrated = load_golden(work), load_golden(out)
    assert all(not q.relevant and q.evidence for q in migrated.queries if q.id != "d")
    assert lines(out)[3] == lines(work)[3]  # no chunk labels: the line is untouched
    b = json.loads(lines(out)[1])
    assert list(b) == ["id", "query", "evidence", "source", "note"] and b["note"] == "kept as is"
    by_id = {d.id: d for d in docs}
    qrels = resolve(original, by_id, chunks).qrels
    assert resolve(migrated, by_id, chunks).qrels == qrels
    assert sorted(qrels["b"].values()) == [0, 1, 2]  # grades, a judged-irrelevant 0 included
    rng = random.Random(3)
    ids = [c.id for c in chunks]
    rankings = [rng.sample(ids, 12) for _ in original.queries]
    qids = [q.id for q in original.queries]
    a = score_rankings(qids, rankings, resolve(original, by_id, chunks).qrels, (1, 3, 5, 10))
    m = score_rankings(qids, rankings, resolve(migrated, by_id, chunks).qrels, (1, 3, 5, 10))
    assert a.values.keys() == m.values.keys()
    for name in a.values:
        assert list(a.values[name]) == list(m.values[name]), name

    from rageval.retrieval.local.lexical import BM25Retriever
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    def run(golden):
        spec = RunSpec(
            str(work.parent / "corpus"), golden, model_dir, ChunkingSpec(48), latency_sample=0
        )
        return evaluate(spec, BM25Retriever(), None).metrics

    # every ranking metric at k agrees; span, quote and budget metrics are what the quotes add
    before, after = run(original), run(migrated)
    ranked = {k: v for k, v in before.items() if k.split("@")[0] in METRICS and not k.endswith("t")}
    n_cutoffs = len(RunSpec("c", "g", "t").ks)  # the config's default cutoffs
    assert len(ranked) == len(METRICS) * n_cutoffs and {k: after[k] for k in ranked} == ranked
    assert before["recall@10"] > 0  # the comparison is not between two empty runs


def test_migrated_labels_survive_rechunking_where_chunk_labels_break(work, tokenizer):
    docs, _ = chunk_labelled(work, tokenizer)
    out = work.with_name("migrated.jsonl")
    assert main(["golden", "migrate", str(work), "--chunk", "48", "-o", str(out)]) == 0
    by_id = {d.id: d for d in docs}
    other = chunk_documents(docs, ChunkingSpec(200), tokenizer)
    with pytest.raises(InputError, match="matches no chunk of this chunking"):
        resolve(load_golden(work), by_id, other)
    qrels = resolve(load_golden(out), by_id, other).qrels
    assert all(qrels[q] for q in "abce")


@pytest.mark.parametrize("size, overlap", [(48, 0), (48, 16), (32, 8), (64, 0), (0, 0)])
def test_every_chunk_quote_resolves_back_to_exactly_its_chunk(mini, tokenizer, size, overlap):
    docs = load_corpus(mini / "corpus")
    chunks = chunk_documents(docs, ChunkingSpec(size, overlap), tokenizer)
    by_doc = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    by_id = {d.id: d for d in docs}
    for c in chunks:
        quote = chunk_quote(c, by_id[c.doc_id], by_doc[c.doc_id])
        assert quote and quote in c.text, c.label
        assert quote == c.text.strip() or overlap > 0


def test_a_chunk_mostly_shared_with_a_neighbour_is_quoted_by_its_own_part(tokenizer):
    from rageval.types import Document

    doc = Document("d", "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu")
    chunks = chunk_documents([doc], ChunkingSpec(10, 6), tokenizer)
    assert [c.text for c in chunks] == [  # each holds most of the other
        "alpha beta gamma delta epsilon zeta eta theta iota",
        "epsilon zeta eta theta iota kappa lambda mu",
    ]
    quotes = [chunk_quote(c, doc, chunks) for c in chunks]
    assert quotes == ["alpha beta gamma delta", "kappa lambda mu"]


def test_repeated_text_cannot_be_quoted_unambiguously(tokenizer):
    from rageval.types import Document

    doc = Document("d", "Same words here every time. " * 12)
    chunks = chunk_documents([doc], ChunkingSpec(6), tokenizer)
    assert chunk_quote(chunks[0], doc, chunks) is not None
    assert chunk_quote(chunks[1], doc, chunks) is None  # its text first occurs in chunk 0


def test_unresolved_labels_are_reported_and_nothing_is_written(work, tokenizer, capsys):
    chunk_labelled(work, tokenizer)
    with work.open("a") as fh:
        fh.write(
            json.dumps({"id": "z", "query": "gone", "relevant": ["policies/leave:99", "faq:0"]})
            + "\n"
        )
    out = work.with_name("migrated.jsonl")
    assert main(["golden", "migrate", str(work), "--chunk", "48", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{work}:6: query 'z': label 'policies/leave:99' matches no chunk under this chunking"
        in err
    )
    assert "1 chunk labels do not resolve under chunking tok48o0; nothing written" in err
    assert not out.exists()
    assert (
        main(["golden", "migrate", str(work), "--chunk", "48", "-o", str(out), "--keep-unresolved"])
        == 0
    )
    z = json.loads(lines(out)[5])
    assert z["relevant"] == ["policies/leave:99"] and z["evidence"][0]["doc"] == "faq"


def test_in_place_and_nothing_to_migrate(work, tokenizer, mini, capsys):
    chunk_labelled(work, tokenizer)
    assert main(["golden", "migrate", str(work), "--chunk", "48", "--in-place"]) == 0
    assert all(not q.relevant for q in load_golden(work).queries)
    assert "migrated 8 chunk labels in 4 queries" in capsys.readouterr().out
    before = work.read_bytes()
    assert main(["golden", "migrate", str(work), "--chunk", "48", "--in-place"]) == 0
    assert "nothing to migrate" in capsys.readouterr().out and work.read_bytes() == before
