"""Plug-in encoders for tests: the smallest thing that meets the Encoder contract."""

from __future__ import annotations

import numpy as np


class BareEncoder:
    """A plug-in encoder with only the required members."""

    fingerprint = "bare"
    dim = 2

    def __init__(self, **_config):
        pass

    def encode_documents(self, texts):
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    encode_queries = encode_documents
