"""Opening inputs safely: regular files only, never blocking, bounded reads.

* ``open_regular`` opens with ``O_NONBLOCK`` (a FIFO cannot block the open) and checks
  ``S_ISREG`` on the open descriptor (``fstat``, so the check is about the file actually read):
  a FIFO, a socket, a device or a symlink to ``/dev/zero`` is an ``InputError`` (exit 3), never a
  hang or an endless read.
* ``read_capped`` reads a whole small input (TOML option files, ncu CSVs) up to a size cap; a
  larger file is an ``InputError`` naming the cap, before anything is read.
* ``FileIdentity`` is a file's (device, inode, size, mtime, ctime) taken from the descriptor that was
  read: a later ``FileIdentity.of`` that differs means the file changed or was replaced.

Inputs are only ever opened read-only.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from nsys_diag.model.errors import InputError

_KIND_NAMES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISDIR, "a directory"))

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file (SQLite file format §1.3)."""

MAX_OPTION_FILE_BYTES = 1 << 20
"""Largest TOML option file (``--thresholds``, ``--phase-map``) read: 1 MiB (real ones are a few
hundred bytes)."""

NOT_REGULAR_HINT = "pass a regular file (an export or CSV on disk, not a pipe or device)"


@dataclass(frozen=True)
class FileIdentity:
    """(device, inode, size in bytes, mtime and ctime in ns) of one version of a file. The ctime
    changes on every write and every ``utime``, so restoring an old mtime does not hide a change."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def from_stat(cls, st: os.stat_result) -> FileIdentity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    @classmethod
    def of(cls, path: str | Path) -> FileIdentity | None:
        """The identity of ``path`` now (following symlinks), or None when it cannot be read."""
        try:
            return cls.from_stat(os.stat(path))
        except OSError:
            return None


def kind_name(mode: int) -> str:
    """What a non-regular file is, in words (``a named pipe (FIFO)``)."""
    for test, name in _KIND_NAMES:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading, only when it is a regular file.

    Raises ``InputError`` (exit 3) for a FIFO, device, socket or directory (after the open, on
    the descriptor: no race with a swapped path) and for any ``OSError`` of the open.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(path, f"cannot open ({exc.strerror or exc})",
                         "check the file permissions") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, f"is {kind_name(st.st_mode)}, not a regular file",
                             NOT_REGULAR_HINT)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | Path, max_bytes: int, what: str) -> bytes:
    """The content of the regular file ``path`` (``open_regular``), at most ``max_bytes`` long;
    a larger file is an ``InputError`` saying so (checked on the descriptor before reading, and
    again while reading in case the file grows)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise InputError(path, f"{what} of {size:,} bytes is larger than the "
                             f"{max_bytes:,}-byte limit", f"is this the right file for {what}?")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(path, f"{what} grew past the {max_bytes:,}-byte limit while being read",
                         f"is this the right file for {what}?")
    return data


def read_head(path: str | Path, n: int) -> bytes:
    """The first ``n`` bytes of the regular file ``path`` (``open_regular``)."""
    with open_regular(path) as fh:
        return fh.read(n)
