"""The folders and files bpecli writes and reads back: a folder replaced as a whole (a new
generation built beside the old one and exchanged with it in one step, so that a reader sees the
old files or the new ones, never a mix, and a process killed at any moment leaves one whole
generation in place), the lock of a folder being written, files written whole or not at all, and
state files read as data from outside (bounded, regular files, JSON checked)."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import OutputError, TokenizerFileError, arg

# The version of the files bpecli writes to describe what it wrote (bpecli.json, manifest.json).
FORMAT_VERSION = 1
# The suffix of every folder bpecli builds before renaming it into place.
TEMPORARY = ".bpecli-tmp"
# A lock file that folders written by earlier versions of bpecli may hold: it counts as bpecli's own.
LEGACY_LOCK = ".bpecli-lock"


def building_names(prefix: str) -> re.Pattern:
    """The names make_building(..., prefix) gives (mkdtemp's 8 random characters), and swap_in's
    name for an old generation set aside."""
    return re.compile(re.escape(prefix) + r"[a-z0-9_]{8}(?:-old)?" + re.escape(TEMPORARY))


def make_building(parent: Path, prefix: str) -> tuple[Path, int]:
    """A new private folder in parent, and a lock held on it (see lock): no other run's cleanup
    takes it for a leftover while it is being filled."""
    import tempfile  # imported when used: ~4 ms a one-line encode never needs

    path = Path(tempfile.mkdtemp(prefix=prefix, suffix=TEMPORARY, dir=parent))
    try:
        return path, lock(path)
    except OutputError:  # another run's cleanup took it in the instant before the lock
        return make_building(parent, prefix)


def lock(folder: Path) -> int:
    """An exclusive lock on the folder itself (flock on its descriptor), returned as the descriptor
    to give to unlock. The lock follows the folder when it is renamed, and goes with the process
    that held it however it ends, so a kill -9 never leaves a folder locked."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): run unguarded, with a descriptor to close all the same
        return os.open(os.devnull, os.O_RDONLY)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise OutputError(f"cannot open {folder} ({e.strerror or e})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            os.close(fd)
            raise OutputError(f"another bpecli is writing {folder}; wait for it to finish, "
                              f"or choose another {arg('out_dir')}") from None
        # a filesystem without flock (some network ones): unguarded, as on Windows
    _held.add(fd)
    return fd


def unlock(fd: int) -> None:
    """Give up a lock that lock() returned."""
    _held.discard(fd)
    os.close(fd)


# The folder locks this process holds. A flock belongs to the open file, which a forked child (a
# worker) shares: the child closes its copies at once, so that a lock ends with the run that took
# it and never lives on in a worker.
_held: set[int] = set()


def _drop_held() -> None:
    for fd in _held:
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_held)


@contextmanager
def locked(folder: Path):
    """Hold the lock of a folder (see lock) while writing into it: two runs writing the same files
    would interleave them."""
    fd = lock(folder)
    try:
        yield
    finally:
        unlock(fd)


def exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux renameat2 with RENAME_EXCHANGE); False, with nothing
    changed, where the C library, the kernel or the filesystem cannot."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError, TypeError):  # not Linux, or a C library before glibc 2.28
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def can_swap(folder: Path) -> bool:
    """Whether folder can be replaced by a rename: its parent is writable and on the same
    filesystem (a mount point, such as a container's volume, cannot be renamed)."""
    parent = folder.parent
    try:
        return os.stat(parent).st_dev == os.stat(folder).st_dev and os.access(parent, os.W_OK | os.X_OK)
    except OSError:
        return False


def swap_in(new: Path, folder: Path) -> None:
    """Put new in folder's place; the old generation ends up at new's name. A reader of folder sees
    the old generation or the new one: at once where renameat2 exchanges them, else with no folder
    for the moment between two renames (an error to the reader, never a mix)."""
    if exchange(new, folder):
        return
    aside = new.with_name(new.name[: -len(TEMPORARY)] + "-old" + TEMPORARY)
    os.rename(folder, aside)
    try:
        os.rename(new, folder)
    except OSError:
        os.rename(aside, folder)
        raise
    os.rename(aside, new)


def same_settings(new: Path, old: Path) -> None:
    """Give new the mode (and owner, where allowed) of the folder it replaces: a folder a user
    shared with a group stays shared."""
    st = os.stat(old)
    os.chmod(new, stat.S_IMODE(st.st_mode))
    if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.chown(new, st.st_uid, st.st_gid)
        except OSError:  # not ours to give away: the mode alone
            pass


def remove(folder: Path, own: Callable[[str], bool]) -> bool:
    """Remove a generation that holds nothing but files own() names (and folders built inside it
    holding the same); anything else keeps it, untouched. True if it is gone."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        names = os.listdir(fd)
        if not all(own(name) or name.endswith(TEMPORARY) for name in names):
            return False
        for name in names:
            if name.endswith(TEMPORARY) and stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                if not remove(folder / name, own):
                    return False
            else:
                os.unlink(name, dir_fd=fd)
        os.rmdir(folder)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_leftovers(parent: Path, prefix: str, own: Callable[[str], bool]) -> None:
    """Remove the folders that runs killed midway left in parent (named by make_building with
    prefix): those no live run holds locked and that hold only bpecli's files."""
    pattern = building_names(prefix)
    try:
        names = [entry for entry in os.listdir(parent) if pattern.fullmatch(entry)]
    except OSError:
        return
    for entry in names:
        try:
            held = lock(parent / entry)
        except OutputError:  # a live run's, or not a folder
            continue
        try:
            remove(parent / entry, own)
        finally:
            unlock(held)


# ---------------------------------------------------------------------------------------------
# Reading one generation

# The largest tokenizer file bpecli reads: the largest published tokenizers take tens of MB.
MAX_FILE_BYTES = 1 << 28

_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
          stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a link"}


def kind_of(mode: int) -> str:
    """What a file of this mode (an lstat's or fstat's st_mode) is, said in messages: "a folder",
    "a FIFO", "a link"...; "no regular file" for another kind."""
    return _KINDS.get(stat.S_IFMT(mode), "no regular file")


class Generation:
    """A folder opened once, by a descriptor: every file read through it comes from the same
    generation of the folder, even while `train --force` swaps a new one into its place."""

    def __init__(self, path: Path):
        self.path = path
        self.read_files: dict[str, tuple[int, int, int, int]] = {}  # name -> what read() found (see identity)
        self.fd: int | None = None  # None where the system opens no file by a folder's descriptor (Windows)
        if os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY"):
            try:  # O_PATH: a folder we may enter but not list (mode 711) is read as before
                self.fd = os.open(path, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
            except OSError as e:
                raise TokenizerFileError(f"{path}: cannot open this folder ({why(e)})") from None

    def __enter__(self) -> Generation:
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def _at(self, name: str) -> str:
        """name as the calls below take it, with dir_fd=self.fd."""
        return name if self.fd is not None else os.path.join(self.path, name)

    def has(self, name: str) -> bool:
        """Whether the folder has an entry of this name (of any kind, a dangling link too). A folder
        it may not look into says yes: reading the file then says why it cannot."""
        try:
            os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False)
            return True
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError:
            return True

    def read(self, name: str) -> bytes:
        """The bytes of a regular file of the folder, at most MAX_FILE_BYTES; a FIFO or a device is
        refused without waiting on it."""
        shown = self.path / name
        try:
            data, found = read_regular(self._at(name), MAX_FILE_BYTES, dir_fd=self.fd)
        except FileNotFoundError:
            if self._replaced():
                raise TokenizerFileError(f"{self.path} was replaced while bpecli read it; run again") from None
            if self.has(name):
                raise TokenizerFileError(f"{shown}: a symbolic link to nothing") from None
            raise TokenizerFileError(f"{shown}: no such file") from None
        except OSError as e:
            raise TokenizerFileError(f"{shown}: cannot read ({why(e)})") from None
        except Unreadable as e:
            raise TokenizerFileError(f"{shown}: {e}") from None
        self.read_files[name] = identity(found)
        return data

    def _replaced(self) -> bool:
        """Whether another folder has taken this one's place since it was opened (a swap moves the
        old one aside, then removes its files and itself)."""
        if self.fd is None:
            return False
        opened = os.fstat(self.fd)
        try:
            now = os.stat(self.path)
        except OSError:
            return True
        return opened.st_nlink == 0 or (opened.st_dev, opened.st_ino) != (now.st_dev, now.st_ino)

    def linked(self, name: str) -> bool:
        """Whether name is a symbolic link: its content may be another file's than the folder's,
        which an error then does not quote."""
        try:
            return stat.S_ISLNK(os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False).st_mode)
        except OSError:
            return True


def identity(found: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one file from its replacement: bpecli never rewrites a file in place, it puts a
    new one (a new inode) in its place."""
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def why(error: OSError) -> str:
    """An OSError in words, symlink loops named as such."""
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return error.strerror or str(error)


# ---------------------------------------------------------------------------------------------
# Files written whole or not at all, and read back as data from outside

def open_new(path: Path):
    """path opened for writing as a new file. Whatever is at that name (a temporary an interrupted
    run left) is removed first, and a symbolic link there is never followed: the file it points at
    stays as it is. Something made there meanwhile is an error (FileExistsError), not written over."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return open(path, "xb")


def write_file(data: bytes, path: Path) -> None:
    """data in a new file at path (see open_new), flushed to disk; removed again if that fails."""
    f = open_new(path)
    try:
        with f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def write_atomically(data: bytes, path: Path) -> None:
    """data under path, whole or not at all: written to path's name + ".partial" and renamed; the
    temporary file never stays behind."""
    temporary = path.with_name(path.name + ".partial")
    try:
        write_file(data, temporary)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json_atomically(document: dict, path: Path) -> None:
    write_atomically((json.dumps(document, indent=1) + "\n").encode("utf-8"), path)


def file_sha256(path: Path) -> str:
    """The sha256 of a file bpecli wrote: a regular file itself (open_regular: a link or a FIFO put
    at its name is Unreadable, never followed or waited on)."""
    with open_regular(path, follow_links=False) as (f, _):
        return sha256_of(f)


def sha256_of(f: BinaryIO) -> str:
    """The sha256 of an open file, from its start."""
    import hashlib  # (imported when used: a one-line encode never hashes)

    f.seek(0)
    digest = hashlib.sha256()
    while block := f.read(1 << 22):
        digest.update(block)
    return digest.hexdigest()


class Unreadable(ValueError):
    """A file that is not what bpecli reads: the message says what it is instead (a link, a FIFO,
    too large, not JSON...); `line` says where, when it is known; `mode`, the file's type where
    it is no regular file."""

    def __init__(self, what: str, line: int | None = None, mode: int | None = None):
        super().__init__(what)
        self.line, self.mode = line, mode


@contextmanager
def open_regular(path: Path | str, *, follow_links: bool = True, dir_fd: int | None = None) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """open_file_regular's file and fstat, closed at the end."""
    file, found = open_file_regular(path, follow_links=follow_links, dir_fd=dir_fd)
    with file:
        yield file, found


def open_file_regular(path: Path | str, *, follow_links: bool = True, dir_fd: int | None = None) -> tuple[BinaryIO, os.stat_result]:
    """(the file at path open for reading, what fstat said of it), if it is a regular file.
    Everything is then read through this one descriptor (a name swapped for another file between
    two looks is never read); a FIFO or a device is refused without waiting on it, and so is a
    link where follow_links is False (a state file bpecli wrote is never one: a link could lead
    out of its folder). Unreadable says what it is instead; OSError what the system said."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow_links:
            raise Unreadable("a link, which bpecli never writes") from None
        raise
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):  # (before open(): it refuses a folder's descriptor)
        os.close(fd)
        raise Unreadable(f"is {kind_of(found.st_mode)}, not a file bpecli reads",
                         mode=found.st_mode)
    return open(fd, "rb"), found


def read_regular(path: Path | str, limit: int, *, follow_links: bool = True,
                 dir_fd: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file of at most limit bytes, and what fstat said of it (see open_regular)."""
    with open_regular(path, follow_links=follow_links, dir_fd=dir_fd) as (file, found):
        if found.st_size > limit:
            raise Unreadable(f"is {found.st_size:,} bytes, more than the {limit >> 20:,} MiB of the largest such file bpecli reads")
        data = file.read(limit + 1)
    if len(data) > limit:  # it grew while it was read
        raise Unreadable(f"is more than the {limit >> 20:,} MiB of the largest such file bpecli reads")
    return data, found


def not_utf8(data: bytes, e: UnicodeDecodeError) -> str:
    """What a file that is not UTF-8 is said to be, in every message: the first bad byte and where."""
    return f"not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start:,})"


def too_deep() -> str:
    """What JSON nested past Python's recursion limit is said to be, in every message."""
    return f"nested too deeply (arrays or objects more than {sys.getrecursionlimit():,} levels deep)"


def parse_json(data: bytes):
    """The JSON value in data (UTF-8, a byte-order mark left out); Unreadable says what is wrong
    and on which line: not UTF-8, not JSON, nested too deeply, a number of thousands of digits."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise Unreadable(not_utf8(data, e)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise Unreadable(f"not valid JSON ({e.msg})", e.lineno) from None
    except RecursionError:
        raise Unreadable(too_deep()) from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        digits = max(re.finditer(r"[0-9]+", text), key=lambda found: found.end() - found.start(), default=None)
        if digits is None:
            raise Unreadable("not valid JSON") from None
        raise Unreadable(f"a number of {digits.end() - digits.start():,} digits", text.count("\n", 0, digits.start()) + 1) from None
