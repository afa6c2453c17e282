import json

import pytest

from rageval.errors import InputError
from rageval.inputs.corpus import corpus_digest, iter_corpus, load_corpus
from rageval.types import Document


def test_folder_ids_are_relative_paths_without_extension(mini):
    docs = load_corpus(mini / "corpus")
    assert sorted(d.id for d in docs) == [
        "faq",
        "policies/expenses",
        "policies/leave",
        "runbooks/invoicing",
        "runbooks/payments",
    ]


def test_jsonl_with_id_or__id_and_title(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(
        json.dumps({"_id": "a", "title": "Leave", "text": "25 days"})
        + "\n"
        + json.dumps({"id": 7, "text": "seven"})
        + "\n"
    )
    docs = load_corpus(p)
    assert [(d.id, d.text, d.title) for d in docs] == [
        ("a", "Leave 25 days", "Leave"),
        ("7", "seven", ""),
    ]


def test_beir_folder_reads_corpus_jsonl(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "", "text": "hello"}) + "\n"
    )
    assert [d.id for d in load_corpus(tmp_path)] == ["d1"]


def test_digest_is_order_independent_and_content_sensitive(mini, tmp_path):
    docs = load_corpus(mini / "corpus")
    assert corpus_digest(docs) == corpus_digest(list(reversed(docs)))
    changed = [docs[0].__class__(docs[0].id, docs[0].text + "!"), *docs[1:]]
    assert corpus_digest(changed) != corpus_digest(docs)


@pytest.mark.parametrize(
    "content, expect",
    [
        (
            '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
            r"c.jsonl:2: duplicate document id 'a' \(first on line 1\)",
        ),
        ('{"text": "x"}\n', 'c.jsonl:1: document has no "id"'),
        ('{"id": "a", "text": 5}\n', "must be strings"),
        ("{oops\n", "c.jsonl:1: malformed JSON"),
        ("\n\n", "corpus is empty"),
    ],
)
def test_bad_jsonl(tmp_path, content, expect):
    p = tmp_path / "c.jsonl"
    p.write_text(content)
    with pytest.raises(InputError, match=expect):
        load_corpus(p)


def test_missing_and_empty_folder(tmp_path):
    with pytest.raises(InputError, match="corpus not found"):
        load_corpus(tmp_path / "nope")
    with pytest.raises(InputError, match="corpus is empty"):
        load_corpus(tmp_path)


@pytest.mark.parametrize(
    "stray",
    [
        "outputs/check/2026-12-04_15-41-44/gate.md",
        "multirun/2026-12-04/15-00-00/0/per_query.md",
        "mlruns/1/abc/artifacts/report.md",
        ".cache/notes.txt",
        "old-run/summary.md",  # a folder holding a run's report.json, whatever its name
    ],
)
def test_rageval_outputs_inside_the_corpus_are_skipped_and_named(mini, tmp_path, stray):
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(mini / "corpus", corpus)
    clean = corpus_digest(load_corpus(corpus))
    f = corpus / stray
    f.parent.mkdir(parents=True)
    f.write_text("# Gate: PASS\n\nndcg@5 0.74\n")
    if stray.startswith("old-run"):
        (f.parent / "report.json").write_text("{}")
    with pytest.warns(UserWarning, match="skipped 1 file") as record:
        docs = load_corpus(corpus)
    assert stray in str(record[0].message)
    assert corpus_digest(docs) == clean


def test_iter_corpus_yields_each_document_as_it_is_read(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text(
        '{"id": "a", "text": "one"}\n{"id": "b", "text": "two"}\n{"id": "a", "text": "x"}\n'
    )
    docs = iter_corpus(f)
    assert next(docs) == Document("a", "one") and next(docs) == Document("b", "two")
    with pytest.raises(InputError, match="duplicate document id 'a'"):  # reached at its line
        next(docs)
    with pytest.raises(InputError, match="duplicate"):
        load_corpus(f)
    (tmp_path / "empty.jsonl").write_text('{"id": "a", "text": "  "}\n')
    with pytest.raises(InputError, match="corpus is empty"):
        list(iter_corpus(tmp_path / "empty.jsonl"))
