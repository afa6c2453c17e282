"""rageval: a declarative benchmark suite for the retriever of RAG pipelines.

From Python: ``rageval.evaluate(retriever, golden)`` measures a retriever and returns its report;
``rageval.compare(baseline, report)`` is the regression gate's verdict (rageval.api).
"""

import os as _os
import sys as _sys

# One vector per text whatever its batch and thread count (rageval/embedding/batching.py): Intel
# MKL, the BLAS of torch's CPU build, reads its reproducibility mode once, when torch first calls
# it, so it is asked for here, before anything imports torch. A mode the user chose stands.
if "torch" not in _sys.modules:
    _os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

__all__ = ["Report", "compare", "evaluate"]


def __getattr__(name: str):
    if name == "__version__":  # read on first use: `import rageval` scans no metadata
        from rageval.app.scaffold import installed_version

        return installed_version()
    # the API's imports (numpy, the pipeline) load on first use: `rageval score` stays light
    if name in __all__:
        from rageval import api

        return getattr(api, name)
    raise AttributeError(f"module 'rageval' has no attribute {name!r}")
