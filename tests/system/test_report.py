"""A report written onto a disk that really fills up (a small tmpfs)."""

import pytest

from bpecli.errors import OutputError
from bpecli.report import write_report
from bpecli.report.page import SIGNATURE


def test_a_full_disk_leaves_the_last_report_whole_and_no_partial_file(tiny_disk):
    page = tiny_disk / "report.html"
    write_report(page, SIGNATURE + "old")
    with pytest.raises(OutputError, match="cannot write report .*No space left"):
        write_report(page, SIGNATURE + "x" * 200_000)
    assert page.read_text() == SIGNATURE + "old" and sorted(p.name for p in tiny_disk.iterdir()) == ["report.html"]
