"""Near-duplicate questions are found with the packaged model, not only with a bag of words."""

from __future__ import annotations

from rageval.authoring.generate import Candidate, dedupe


def test_the_packaged_model_flags_paraphrases_but_not_other_questions(tmp_path):
    from rageval.embedding import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder(cache_dir=str(tmp_path), progress=False)
    qs = ["How many weeks of parental leave will I get?", "Which regions host payments?"]
    kept, dups = dedupe(
        [Candidate(q, "d", "quote", "d:0") for q in qs],
        ["How many weeks of parental leave do I get?"],
        enc,
        0.9,
    )
    assert [c.question for c in kept] == ["Which regions host payments?"] and len(dups) == 1
