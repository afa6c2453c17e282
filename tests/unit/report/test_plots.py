"""The metric@k curve: one line per headline metric present in the report, as a PNG."""

from __future__ import annotations

from types import SimpleNamespace

from rageval.report.eval_report import HEADLINE
from rageval.report.plots import curve_png


def test_curve_is_a_png_with_one_line_per_headline_metric(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    ks = [1, 3, 5]
    metrics = {f"{m}@{k}": k / 10 for m in HEADLINE[:-1] for k in ks}  # the last one is missing
    report = SimpleNamespace(metrics=metrics, ks=ks, counts={"queries": 8})
    lines = []
    save = plt.Figure.savefig
    monkeypatch.setattr(
        plt.Figure, "savefig", lambda fig, p: lines.append(fig.axes[0].get_lines()) or save(fig, p)
    )
    path = curve_png(report, tmp_path / "plots" / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (drawn,) = lines
    assert [line.get_label() for line in drawn] == list(HEADLINE[:-1])
    assert [list(line.get_xdata()) for line in drawn] == [ks] * (len(HEADLINE) - 1)
