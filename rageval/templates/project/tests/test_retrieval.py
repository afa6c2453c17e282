"""The retrieval gate as a test: it fails, with the comparison table, when retrieval got worse
than the committed baseline (golden/baseline.json; make one with `rageval promote`).

`rageval_gate` comes with rageval (its pytest plugin); `pytest --rageval-baseline PATH` names
another baseline. Without a baseline yet the test is skipped."""


def test_retrieval_does_not_regress(rageval_gate):
    rageval_gate()  # Hydra overrides on top of the baseline's config: rageval_gate("chunk=256")
