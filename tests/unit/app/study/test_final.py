"""rageval.app.study.final: the final runs in the launching process."""

from __future__ import annotations

from rageval.app.study.final import _job_log_level


def test_the_final_runs_keep_libraries_info_lines_out_of_the_console(caplog):
    import logging

    root = logging.getLogger()
    saved = root.level
    root.setLevel(logging.INFO)  # as Hydra leaves the launching process
    try:
        with caplog.at_level(logging.INFO), _job_log_level():
            logging.getLogger("faiss.loader").info("Loading faiss with AVX512 support.")
            logging.getLogger("faiss.loader").warning("a warning still shows")
        assert [r.getMessage() for r in caplog.records] == ["a warning still shows"]
        assert root.level == logging.INFO
    finally:
        root.setLevel(saved)
