"""Several processes filling one embedding cache at once: no corrupted entry, and every vector
equal, bit for bit, to the one a single process computes.

The processes run the packaged model's ONNX export on one thread each (built once a session,
tests/support/model_exports.py): what is tested is the cache, and an ONNX process reaches its
first vector in ~0.3 s of CPU where torch and sentence-transformers take ~5 s to import. Torch's
own equality across processes is tested where rageval passes it on (the Ray fills,
tests/support/ray_embed.py) and within a process below."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from model_exports import copy_exports, onnx_encoder

from rageval.embedding import SentenceTransformerEncoder
from rageval.embedding.cache import KEY_BYTES, split_trailer, text_key

pytestmark = pytest.mark.integration
WORDS = [
    "leave",
    "contractor",
    "region",
    "payments",
    "deploy",
    "vault",
    "secret",
    "rotate",
    "invoice",
    "runbook",
    "policy",
    "alert",
]
_rng = random.Random(11)
TEXTS = [
    f"{i} " + " ".join(_rng.choice(WORDS) for _ in range(_rng.randint(2, 40))) for i in range(50)
]
SUBSETS = [TEXTS[0:30], TEXTS[20:50], TEXTS[::2]]  # overlapping: many texts are embedded twice

WORKER = """
import os, sys, time
from rageval.embedding import SentenceTransformerEncoder
cache, ready, go, texts = sys.argv[1], sys.argv[2], sys.argv[3], eval(sys.argv[4])
encoder = SentenceTransformerEncoder(
    cache_dir=cache, backend="onnx", threads=1, write_every=4, progress=False
)
encoder._load()  # the model loads before the start line, so the workers write at the same time
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
encoder.encode_documents(texts)
"""


def test_three_processes_filling_one_cache_match_a_single_process_bit_for_bit(
    tmp_path, shared_cache
):
    shared = tmp_path / "shared"
    copy_exports(shared, shared_cache, ("onnx", "none"))  # the processes below load it
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(shared),
                str(tmp_path / f"ready{i}"),
                str(go),
                repr(texts),
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, texts in enumerate(SUBSETS)
    ]
    deadline = time.monotonic() + 300
    while not all((tmp_path / f"ready{i}").exists() for i in range(3)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]

    single = onnx_encoder(tmp_path / "single", shared_cache, threads=1)
    reference = dict(zip(TEXTS, single.encode_documents(TEXTS), strict=True))

    reader = onnx_encoder(shared, shared_cache, threads=1)
    segments = sorted(reader.cache.dir.glob("seg-*.keys"))
    assert not list(reader.cache.dir.glob(".*.tmp"))  # every write finished
    assert len(list(reader.cache.dir.glob("seg-*.npy"))) == len(segments) > 3
    by_key = {text_key(t): t for t in TEXTS}
    copies = 0
    for keys_file in segments:  # every stored row, including the duplicates, is the right vector
        keys, checksum = split_trailer(keys_file.read_bytes())  # keys, then the segment's CRC
        assert checksum is not None
        rows = np.load(keys_file.with_suffix(".npy"), allow_pickle=False)
        assert len(keys) == KEY_BYTES * rows.shape[0] and rows.dtype == np.float32
        for i in range(rows.shape[0]):
            text = by_key[keys[i * KEY_BYTES : (i + 1) * KEY_BYTES]]
            assert rows[i].tobytes() == reference[text].tobytes(), text
            copies += 1
    assert copies >= len(TEXTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unreadable segment would warn
        vectors = reader.encode_documents(TEXTS)
    assert reader.texts_encoded == 0 and not reader.model_loaded  # all there: the model never loads
    assert vectors.tobytes() == np.stack([reference[t] for t in TEXTS]).tobytes()


def test_a_vector_does_not_depend_on_its_batch_or_the_thread_count():
    """What makes torch's caches equal across processes: each row of a batch depends on its
    text alone, whatever the batch's size and however many threads torch (and MKL below it) runs
    (ONNX's and the other backends' batches: tests/integration/test_embedding_backends.py)."""
    import torch

    from rageval.embedding.batching import encode_stable

    model = SentenceTransformerEncoder(progress=False)._load()
    want = encode_stable(model, TEXTS, 64)
    threads = torch.get_num_threads()
    many = max(2, threads)  # even where the suite's workers run torch on one thread each
    try:
        for n, batch in ((many, 4), (many, 1), (1, 64), (1, 3)):
            torch.set_num_threads(n)
            got = encode_stable(model, TEXTS, batch)
            differ = [
                t for t, a, b in zip(TEXTS, got, want, strict=True) if a.tobytes() != b.tobytes()
            ]
            assert not differ, (
                f"{len(differ)} of {len(TEXTS)} vectors changed with {n} threads, batch {batch}"
            )
    finally:
        torch.set_num_threads(threads)
