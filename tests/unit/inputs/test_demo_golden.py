"""The shipped demo: its golden set validates against its corpus and has the promised shape."""

from pathlib import Path

from rageval.authoring.inspect import describe
from rageval.cli.golden import validate
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden

GOLDEN = Path(__file__).resolve().parents[3] / "golden"


def test_shipped_golden_set_validates_against_the_shipped_corpus(capsys):
    assert validate(GOLDEN / "retriever.jsonl", GOLDEN / "corpus") == 0
    assert "every label resolves" in capsys.readouterr().out


def test_demo_corpus_and_golden_set_have_the_documented_shape():
    docs = load_corpus(GOLDEN / "corpus")
    assert len(docs) >= 30
    assert sum(len(d.text.split()) for d in docs) >= 60_000
    golden = load_golden(GOLDEN / "retriever.jsonl")
    stats = describe(golden, len(docs))
    n = stats["queries"]
    assert n >= 150
    share = {s: v["count"] / n for s, v in stats["sources"].items()}
    assert share["ticket"] >= 0.40 and share["synthetic"] <= 0.40 and share["adversarial"] >= 0.20
    assert all(q.evidence for q in golden.queries)  # evidence labels: valid for every chunk size
    assert stats["graded_queries"] >= 30 and stats["multi_document_queries"]["count"] >= 10
    assert not stats["warnings"]
    # an old and a new version of a policy: near-duplicates that retrieval must tell apart
    ids = {d.id for d in docs}
    assert {"hr/parental-leave-2023", "hr/parental-leave-2025"} <= ids
