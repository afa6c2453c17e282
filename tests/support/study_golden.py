"""A golden set large enough for a tuning study's holdout, made from a corpus folder: one query per
sentence of at least 40 characters (some of its words; the sentence is the evidence quote), the
source alternating ticket / synthetic."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rageval.inputs.corpus import load_corpus


def write_study_golden(corpus_dir: Path, path: Path, extra: int = 0) -> list[str]:
    """Write the golden set to ``path`` (``extra`` more queries, made from the same sentences
    with other words, appended at the end); returns the query ids in file order."""
    rows = []
    for doc in load_corpus(str(corpus_dir)):
        sentences = re.split(r"(?<=[.?!])\s+", doc.text)
        for sentence in (s.strip() for s in sentences):
            if len(sentence) < 40:
                continue
            words = re.findall(r"[A-Za-z]{4,}", sentence)
            rows.append((doc.id, sentence, words))
    lines, ids = [], []
    for n, (doc, sentence, words) in enumerate(rows + rows[:extra]):
        qid = f"s{n:03d}" if n < len(rows) else f"added{n - len(rows):03d}"
        pick = words[1:6] if n < len(rows) else words[-4:]
        ids.append(qid)
        lines.append(
            json.dumps(
                {
                    "id": qid,
                    "query": " ".join(pick).lower(),
                    "evidence": [{"doc": doc, "quote": sentence}],
                    "source": ("ticket", "synthetic")[n % 2],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return ids
