"""docs/python.md is a notebook-style example: every `>>>` line runs and prints what it shows."""

import doctest

from conftest import SOURCE_DIR


def test_the_python_page_runs_as_written(tmp_path, monkeypatch, binary):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UVMSIM_BIN", binary)
    result = doctest.testfile(str(SOURCE_DIR / "docs" / "python.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                              verbose=False, report=True)
    assert result.attempted >= 40
    assert result.failed == 0
