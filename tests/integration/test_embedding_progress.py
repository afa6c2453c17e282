"""The embedding progress bar advances per batch, not per cache write (a long job sat at 0%)."""


def test_embedding_progress_advances_per_batch(model_dir, tmp_path):
    from rageval.embedding.batching import encode_stable
    from rageval.embedding.encoder import SentenceTransformerEncoder

    model = SentenceTransformerEncoder(model_dir, cache_dir=str(tmp_path))._load()
    calls: list[int] = []
    texts = [f"text number {i} " * (1 + i % 3) for i in range(10)]
    vec = encode_stable(model, texts, 4, progress=calls.append)
    assert vec.shape[0] == 10 and sum(calls) == 10 and len(calls) >= 3 and max(calls) <= 4
