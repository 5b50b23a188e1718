"""Each report, written by the installed command, rendered by a real browser (headless Chromium):
its screenshot is not blank, its charts are drawn, its script ran to the end, and the page logged
nothing (no script error, nothing refused by its content security policy)."""

import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.system

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The first colour of the page's palette (svg.PALETTE[0]): the bars and lines of the first series.
FIRST_SERIES = (0x4E, 0x79, 0xA7)


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return CHROMIUM


def bpecli(*args, cwd=None) -> subprocess.CompletedProcess:
    """The installed command, as a user runs it."""
    command = Path(sys.executable).parent / "bpecli"
    done = subprocess.run([str(command), *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done


def render(chromium: str, page: Path, folder: Path) -> tuple[np.ndarray, str, str]:
    """(the screenshot's pixels, what the browser logged, the DOM after the page's script ran),
    each from a fresh browser profile."""
    def browser(name: str, *task: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={folder / name}",
             "--hide-scrollbars", "--window-size=1280,1400", "--enable-logging=stderr", "--v=0", *task, page.as_uri()],
            capture_output=True, text=True, timeout=120)

    shot = folder / f"{page.stem}.png"
    taken = browser(f"{page.stem}-shot", f"--screenshot={shot}")
    dom = browser(f"{page.stem}-dom", "--dump-dom")
    assert shot.is_file(), taken.stderr
    return png_pixels(shot), taken.stderr + dom.stderr, dom.stdout


def png_pixels(path: Path) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG as an array of height x width x channels, by zlib and the PNG
    filters (the test needs no imaging package)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    at, idat = 8, []
    while at < len(data):
        size, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + size]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat.append(body)
        at += 12 + size
    assert depth == 8 and colour_type in (2, 6)
    channels = 3 if colour_type == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, width * channels + 1)
    pixels = np.zeros((height, width * channels), dtype=np.uint8)
    above = np.zeros(width * channels, dtype=np.int64)
    for y in range(height):
        line, kind = raw[y, 1:].astype(np.int64), raw[y, 0]
        if kind == 1:  # Sub: each byte adds the one a pixel before
            line = np.cumsum(line.reshape(width, channels), axis=0).reshape(-1) & 255
        elif kind == 2:  # Up
            line = (line + above) & 255
        elif kind in (3, 4):  # Average and Paeth: byte by byte
            row, up = line.tolist(), above.tolist()
            for i in range(len(row)):
                a = row[i - channels] if i >= channels else 0
                if kind == 3:
                    row[i] = (row[i] + (a + up[i]) // 2) & 255
                else:
                    b, c = up[i], up[i - channels] if i >= channels else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            line = np.array(row, dtype=np.int64)
        pixels[y] = line
        above = line
    return pixels.reshape(height, width, channels)[..., :3]


def problems(pixels: np.ndarray, log: str, dom: str) -> list[str]:
    """What is wrong with a rendered report; nothing for a good one."""
    found = []
    colours = pixels.reshape(-1, 3)
    _, counts = np.unique(colours.view([("", np.uint8)] * 3), return_counts=True)
    if len(counts) < 200 or counts.max() > 0.9 * len(colours):
        found.append(f"blank: {len(counts)} colours, the commonest on {counts.max() / len(colours):.0%} of the pixels")
    drawn = np.all(np.abs(colours.astype(int) - FIRST_SERIES) < 8, axis=1).mean()
    if drawn < 0.002:
        found.append(f"no chart: the first series' colour is on {drawn:.3%} of the pixels")
    found += [line for line in log.splitlines() if ":CONSOLE" in line]
    if 'data-ready="yes"' not in dom:
        found.append("the page's script did not run to its end")
    return found


@pytest.fixture(scope="module")
def reports(tmp_path_factory, fixtures, kernel_docs_sample, cl100k_file):
    """The three reports: a tokenizer alone; beside two others on two inputs; a shard folder
    with a validation split."""
    where = tmp_path_factory.mktemp("reports")
    corpus = where / "docs.txt"
    corpus.write_text(kernel_docs_sample[:400_000], encoding="utf-8")
    gpt2 = fixtures / "gpt2_vocab.json"
    bpecli("train", corpus, "--vocab-size", 1000, "--special", "<|endoftext|>", "--out", where / "small", "-q")
    bpecli("encode", "-t", gpt2, corpus, fixtures / "german.txt", "--out", where / "shards", "--shard-tokens", 30_000,
           "--val-fraction", 0.1, "-q")
    bpecli("inspect", gpt2, "--report", where / "tokenizer.html")
    bpecli("inspect", gpt2, "--compare", cl100k_file, "--compare", where / "small", "--corpus", corpus,
           "--corpus", fixtures / "german.txt", "--report", where / "compared.html")
    bpecli("inspect", where / "shards", "-t", gpt2, "--report", where / "shards.html")
    return where


@pytest.mark.parametrize("name", ["tokenizer", "compared", "shards"])
def test_each_report_renders_in_chromium(chromium, reports, name, tmp_path):
    pixels, log, dom = render(chromium, reports / f"{name}.html", tmp_path)
    assert problems(pixels, log, dom) == []


def test_the_checks_see_a_blank_page_and_a_script_error(chromium, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><p>nothing</p><script>undefinedThing.go()</script></body></html>")
    found = problems(*render(chromium, page, tmp_path))
    assert any(p.startswith("blank") for p in found) and any(p.startswith("no chart") for p in found)
    assert any("undefinedThing" in p for p in found) and "the page's script did not run to its end" in found
