"""Work for processes a test spawns: a spawned child imports its target by module name, and a
test module (imported by its path) has none it could import; tests/support is on its path."""

import numpy as np

from rageval.embedding.cache import EmbeddingCache, text_key


def fill_cache(root: str, start: int) -> None:
    """Put the vectors of texts t<start> .. t<start+499> (every value ``start``) in 10 batches."""
    keys = [text_key(f"t{i}") for i in range(start, start + 500)]
    vecs = np.full((500, 4), start, dtype=np.float32)
    cache = EmbeddingCache(root, "fp")
    for lo in range(0, 500, 50):
        cache.put(keys[lo : lo + 50], vecs[lo : lo + 50])
