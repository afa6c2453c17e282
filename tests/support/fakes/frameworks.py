"""A team's LangChain and LlamaIndex retrievers, built the way their app would build them (the
real langchain-core and llama-index-core classes, in-memory stores), offline: a deterministic
hashed bag-of-words embedding stands in for a model, so vector search finds shared words.

``backend.factory=fakes.frameworks:langchain_retriever`` (or ``:llamaindex_retriever``).
Each chunks the corpus its own way (paragraphs; LlamaIndex: sentences grouped in threes), so the
passages they return are not rageval's chunks."""

from __future__ import annotations

import hashlib
import math
import os
import re
from pathlib import Path

DIM = 256
WORD = re.compile(r"[a-z0-9]+")


def embed(text: str) -> list[float]:
    """Hashed bag of words, L2-normalised: the same text always gets the same vector."""
    v = [0.0] * DIM
    for w in WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "big")
        v[h % DIM] += 1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def corpus_dir() -> Path:
    """The corpus the retrievers index: $RAGEVAL_TEST_CORPUS, else the mini fixture's."""
    root = Path(os.environ.get("RAGEVAL_TEST_CORPUS") or Path(__file__).parents[1] / "data/mini")
    return root / "corpus" if (root / "corpus").is_dir() else root


def paragraphs() -> list[tuple[str, str]]:
    from rageval.inputs.corpus import load_corpus

    return [
        (d.id, p.strip())
        for d in load_corpus(str(corpus_dir()))
        for p in d.text.split("\n\n")
        if p.strip()
    ]


def source_of(doc_id: str, key: str) -> str:
    """What a loader records as a passage's source under ``key``: LangChain's ``source`` and
    LlamaIndex's ``file_path`` hold the file's path, ``file_name`` its name; other keys the id."""
    path = next(corpus_dir().glob(f"{doc_id}.*"))
    if key in ("source", "file_path"):
        return str(path.resolve())
    return path.name if key == "file_name" else doc_id


def langchain_retriever(k: int = 4, source_key: str = "doc_id"):
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class HashedWords(Embeddings):
        def embed_documents(self, texts):
            return [embed(t) for t in texts]

        def embed_query(self, text):
            return embed(text)

    store = InMemoryVectorStore(HashedWords())
    store.add_documents(
        [
            Document(page_content=p, metadata={source_key: source_of(d, source_key)})
            for d, p in paragraphs()
        ]
    )
    return store.as_retriever(search_kwargs={"k": k})


def llamaindex_retriever(similarity_top_k: int = 4, source_key: str = "doc_id"):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    class HashedWords(BaseEmbedding):
        def _get_text_embedding(self, text):
            return embed(text)

        def _get_query_embedding(self, query):
            return embed(query)

        async def _aget_query_embedding(self, query):
            return embed(query)

    nodes = []
    for d, p in paragraphs():
        sentences = re.split(r"(?<=[.!?])\s+", p)
        for i in range(0, len(sentences), 3):
            text, meta = " ".join(sentences[i : i + 3]), {source_key: source_of(d, source_key)}
            nodes.append(TextNode(text=text, metadata=meta))
    index = VectorStoreIndex(nodes, embed_model=HashedWords())
    return index.as_retriever(similarity_top_k=similarity_top_k)
