import json

import pytest

from rageval.errors import InputError
from rageval.inputs.corpus import corpus_digest, load_corpus


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
