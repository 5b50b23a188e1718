"""The layout of the project: every package installed, no import cycle, no module or class too
long, no development diary in its files."""

import ast
import re
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_bpecli_is_installed():
    """Every folder of bpecli that holds Python files is a package the build ships: a folder
    without __init__.py, or one pyproject's rule leaves out, would be missing from a non-editable
    install (the README's first command) while every test here still passed."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    from setuptools import find_packages

    rule = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    shipped = set(find_packages(where=ROOT, include=rule["include"]))
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "bpecli").rglob("*.py")}
    assert "bpecli.cli" in found and shipped == found


# ---- import cycles ---------------------------------------------------------------------------------

def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of package under root by its dotted name; a package by its __init__.py."""
    names = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the package that importing module name runs: every import statement, the ones
    inside functions too, each with the __init__ of the packages above it that name is not inside."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    found = set()
    for target in targets:
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            module = ".".join(parts[:end])
            # the packages name is inside are running already: a package's __init__ importing its
            # own submodules, and they their siblings, is how a package is built, not a cycle
            inside = name == module or name.startswith(module + ".")
            if module in modules and not inside:
                found.add(module)
    return found


def import_cycles(root: Path, package: str) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan's strongly
    connected components of the import graph), each sorted; none when the imports form a tree."""
    modules = module_names(root, package)
    graph = {name: sorted(imported(name, path, modules)) for name, path in modules.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph[node]:
                cycles.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_no_module_of_bpecli_imports_one_that_imports_it_back():
    assert import_cycles(ROOT, "bpecli") == []


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_cycle_finder_sees_a_cycle_behind_a_function_local_import(tmp_path):
    write_tree(tmp_path, {
        "pkg/__init__.py": "from .a import f\n",
        "pkg/a.py": "from pkg.b import g\n\ndef f():\n    return g()\n",
        "pkg/b.py": "def g():\n    from . import a\n    return a\n",
        "pkg/c.py": "import pkg.b\n",
    })
    assert import_cycles(tmp_path, "pkg") == [["pkg.a", "pkg.b"]]


def test_the_cycle_finder_counts_the_package_init_a_submodule_import_runs(tmp_path):
    """formats/x imports shards/y, which runs shards/__init__, which imports formats/x: a cycle,
    though no module names the other's module."""
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/formats/__init__.py": "",
        "pkg/formats/x.py": "from pkg.shards.y import Y\n",
        "pkg/shards/__init__.py": "from pkg.formats import x\n",
        "pkg/shards/y.py": "Y = 1\n",
    })
    assert import_cycles(tmp_path, "pkg") == [["pkg.formats.x", "pkg.shards"]]


def test_a_package_init_importing_its_own_submodules_is_no_cycle(tmp_path):
    write_tree(tmp_path, {
        "pkg/__init__.py": "from .tokenizer import Tokenizer\n\ndef __getattr__(name):\n    from . import training\n",
        "pkg/tokenizer.py": "from pkg.vocab import Vocab\nfrom . import errors\n\nclass Tokenizer:\n    pass\n",
        "pkg/vocab.py": "from .errors import Error\nVocab = 1\n",
        "pkg/errors.py": "class Error(Exception):\n    pass\n",
        "pkg/training/__init__.py": "from .pipeline import train\n",
        "pkg/training/pipeline.py": "from pkg.tokenizer import Tokenizer\nfrom ..vocab import Vocab\n\ndef train():\n    pass\n",
    })
    assert import_cycles(tmp_path, "pkg") == []


def test_the_cycle_finder_follows_a_package_init_into_its_submodules(tmp_path):
    """tokenizer imports the training package lazily; its __init__ runs pipeline, which imports the
    tokenizer: a cycle, though tokenizer never names pipeline."""
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/tokenizer.py": "def train():\n    from pkg import training\n    return training.train()\n",
        "pkg/training/__init__.py": "from .pipeline import train\n",
        "pkg/training/pipeline.py": "from pkg.tokenizer import Tokenizer\n",
    })
    assert import_cycles(tmp_path, "pkg") == [["pkg.tokenizer", "pkg.training", "pkg.training.pipeline"]]


# ---- sizes -----------------------------------------------------------------------------------------

MODULE_LINES = 500
CLASS_LINES = 250


def long_modules(root: Path, package: str, limit: int = MODULE_LINES) -> dict[str, int]:
    lengths = {str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
               for path in module_names(root, package).values()}
    return {name: n for name, n in lengths.items() if n > limit}


def _docstring_lines(node: ast.AST) -> int:
    """Lines of the docstrings of node and of everything in it: words for users, which the API's
    classes owe them, not code that makes a class do several jobs."""
    lines = 0
    for inner in ast.walk(node):
        if isinstance(inner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(inner):
            first = inner.body[0]
            lines += first.end_lineno - first.lineno + 1
    return lines


def long_classes(root: Path, package: str, limit: int = CLASS_LINES) -> dict[str, int]:
    """Classes of more than limit lines, their docstrings left out."""
    found = {}
    for path in module_names(root, package).values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                length = node.end_lineno - node.lineno + 1 - _docstring_lines(node)
                if length > limit:
                    found[f"{path.relative_to(root)}:{node.name}"] = length
    return found


def test_no_module_is_over_500_lines_and_no_class_over_250():
    assert long_modules(ROOT, "bpecli") == {}
    assert long_classes(ROOT, "bpecli") == {}


def test_the_size_checks_see_a_long_module_and_a_long_class(tmp_path):
    body = "".join(f"    x{n} = {n}\n" for n in range(CLASS_LINES))
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/short.py": "class A:\n    pass\n",
                          "pkg/long.py": "class Big:\n" + body + "\n" * (MODULE_LINES - CLASS_LINES)})
    assert long_modules(tmp_path, "pkg") == {"pkg/long.py": MODULE_LINES + 1}
    assert long_classes(tmp_path, "pkg") == {"pkg/long.py:Big": CLASS_LINES + 1}
    documented = "class Small:\n    \"\"\"" + "words\n" * CLASS_LINES + "    \"\"\"\n    x = 1\n"
    write_tree(tmp_path, {"pkg/long.py": documented})
    assert long_classes(tmp_path, "pkg") == {}


# ---- no development diary --------------------------------------------------------------------------

# How work went belongs in a report, not in the project: these words date a file to a piece of
# work. pytest's scope="session" and names like start_new_session are code, not diary.
DIARY = re.compile(r"\b(?:this round|last round|last time|tried today)\b|(?<![\w\"'])sessions?\b", re.IGNORECASE)
# The project's own prose and code; examples/ holds corpora (other people's text), and this file
# names the words it looks for.
PROJECT = ["README.md", "pyproject.toml", ".ci", "docs", "bpecli", "benchmarks", "tests"]


def diary_lines(root: Path, names=PROJECT) -> list[str]:
    found = []
    for name in names:
        paths = [root / name] if (root / name).is_file() else sorted((root / name).rglob("*"))
        for path in paths:
            if not path.is_file() or "__pycache__" in path.parts or path.resolve() == Path(__file__).resolve():
                continue
            data = path.read_bytes()
            if b"\0" in data:
                continue  # not text
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if DIARY.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:100]}")
    return found


def test_no_project_file_keeps_a_development_diary():
    assert diary_lines(ROOT) == []


def test_the_diary_check_sees_each_word_and_passes_code(tmp_path):
    write_tree(tmp_path, {
        "README.md": "Faster than last time.\n",
        "docs/notes.md": "Tried and dropped this session: a cache.\nAn earlier session's code.\n",
        "bpecli/a.py": "# this round keeps the old order\nx = 1  # tried today\n",
        "bpecli/b.py": "# Last round of merges\n",
        "tests/conftest.py": '@pytest.fixture(scope="session")\ndef f():\n    Popen(start_new_session=True)\n',
    })
    assert [line.split(":")[0:2] for line in diary_lines(tmp_path, ["README.md", "docs", "bpecli", "tests"])] == [
        ["README.md", "1"], ["docs/notes.md", "1"], ["docs/notes.md", "2"], ["bpecli/a.py", "1"], ["bpecli/a.py", "2"],
        ["bpecli/b.py", "1"]]


# ---- tests that start processes are system tests ---------------------------------------------------

TESTS = ROOT / "tests"
# Starting a process, sending a signal or mounting a filesystem: what makes a test a system test.
# (Worker processes the library starts itself, as map_in_order's, are the unit under test.)
SYSTEM_CALLS = re.compile(r"\bsubprocess\b|\bPopen\b|\bos\.kill\b|\bos\.fork\b|\bpty\.|\bimport signal\b|"
                          r"\btiny_disk\b|\bread_only_dir\b|\bLocalCluster\b|\bmoto\b")


def system_calls_outside_system(tests: Path) -> list[str]:
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        if "system" in path.relative_to(tests).parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SYSTEM_CALLS.search(line):
                found.append(f"{path.relative_to(tests)}:{number}: {line.strip()}")
    return found


def test_only_tests_under_system_start_processes_signals_or_mounts():
    assert [line for line in system_calls_outside_system(TESTS) if "test_layout.py" not in line] == []


def test_the_system_check_sees_a_process_started_outside_system(tmp_path):
    write_tree(tmp_path, {"unit/test_a.py": "import subprocess\n", "system/test_b.py": "import subprocess\n",
                          "conformance/test_c.py": "def test_c(tiny_disk):\n    pass\n"})
    assert [line.split(":")[0] for line in system_calls_outside_system(tmp_path)] == ["conformance/test_c.py",
                                                                                        "unit/test_a.py"]
