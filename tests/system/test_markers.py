"""The suite's markers: every test under tests/system/ is a system test, left out by
`pytest -m "not system"` (the hook in conftest.py), without a marker written in its file."""

import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_tests_under_system_are_marked_system(tmp_path):
    suite = tmp_path / "tests"
    (suite / "system").mkdir(parents=True)
    shutil.copy(TESTS / "conftest.py", suite / "conftest.py")
    (suite / "test_unit.py").write_text("def test_unit():\n    pass\n")
    (suite / "system" / "test_process.py").write_text("def test_process():\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    system: a system test\n")

    def collected(expression: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", expression],
                              cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return sorted(line for line in done.stdout.splitlines() if "::" in line)

    assert collected("not system") == ["tests/test_unit.py::test_unit"]
    assert collected("system") == ["tests/system/test_process.py::test_process"]
