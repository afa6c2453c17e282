"""``rageval log`` on a folder that holds no finished run: one line naming the file, exit 2."""

from rageval.cli.main import main


def test_a_folder_without_a_report_is_refused_in_one_line(tmp_path, capsys):
    assert main(["log", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"rageval: error: {tmp_path / 'report.json'}: no report.json: not the folder of a finished "
        "run; pass a run's output folder (hydra.run.dir, or a job folder of a sweep)"
    )
