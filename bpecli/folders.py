"""A folder of files replaced as a whole: a new generation is built beside the old one and the two
are exchanged in one step, so that a reader sees the old files or the new ones, never a mix, and a
process killed at any moment leaves one whole generation in place."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from .errors import OutputError, TokenizerFileError

# The suffix of every folder bpecli builds before renaming it into place.
TEMPORARY = ".bpecli-tmp"


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
    to close. The lock follows the folder when it is renamed, and goes with the process that held
    it however it ends, so a kill -9 never leaves a folder locked."""
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
            raise OutputError(f"another bpecli is writing {folder}; wait for it to finish, or choose another --out") from None
        # a filesystem without flock (some network ones): unguarded, as on Windows
    return fd


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
    by older bpecli, holding the same); anything else keeps it, untouched. True if it is gone."""
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
            os.close(held)


# ---------------------------------------------------------------------------------------------
# Reading one generation

# The largest tokenizer file bpecli reads: the largest published tokenizers take tens of MB.
MAX_FILE_BYTES = 1 << 28

_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
          stat.S_IFSOCK: "a socket"}


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
        """Whether the folder has an entry of this name (of any kind, a dangling link too)."""
        try:
            os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False)
            return True
        except OSError:
            return False

    def read(self, name: str) -> bytes:
        """The bytes of a regular file of the folder, at most MAX_FILE_BYTES; a FIFO or a device is
        refused without waiting on it."""
        shown = self.path / name
        try:
            fd = os.open(self._at(name), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0), dir_fd=self.fd)
        except FileNotFoundError:
            if self._replaced():
                raise TokenizerFileError(f"{self.path} was replaced while bpecli read it; run again") from None
            if self.has(name):
                raise TokenizerFileError(f"{shown}: a symbolic link to nothing") from None
            raise TokenizerFileError(f"{shown}: no such file") from None
        except OSError as e:
            raise TokenizerFileError(f"{shown}: cannot read ({why(e)})") from None
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            os.close(fd)
            kind = _KINDS.get(stat.S_IFMT(found.st_mode), "not a regular file")
            raise TokenizerFileError(f"{shown}: is {kind}, not a tokenizer file")
        with open(fd, "rb") as file:
            if found.st_size > MAX_FILE_BYTES:
                raise TokenizerFileError(f"{shown}: {found.st_size:,} bytes, more than the {MAX_FILE_BYTES >> 20} MiB "
                                         "of the largest tokenizer file bpecli reads")
            try:
                data = file.read(MAX_FILE_BYTES + 1)
            except OSError as e:
                raise TokenizerFileError(f"{shown}: cannot read ({why(e)})") from None
        if len(data) > MAX_FILE_BYTES:  # it grew while it was read
            raise TokenizerFileError(f"{shown}: more than the {MAX_FILE_BYTES >> 20} MiB of the largest tokenizer "
                                     "file bpecli reads")
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
