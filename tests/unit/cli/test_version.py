"""``rageval --version``: the installed distribution's version, which setuptools-scm took from
the git tag it was built from; the same as ``rageval.__version__``."""

from __future__ import annotations

from importlib.metadata import version

import pytest


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_distributions(flag, capsys):
    import rageval
    from rageval.cli.main import main

    assert main([flag]) == 0
    assert capsys.readouterr().out == f"rageval {version('rageval')}\n"
    assert rageval.__version__ == version("rageval") != "0+unknown"
    assert "--version" in _help(capsys)


def _help(capsys) -> str:
    from rageval.cli.main import main

    with pytest.raises(SystemExit):
        main(["--help"])
    return capsys.readouterr().out
