"""Folders nested deeper than Python's recursion limit, as a reviewer's `mkdir d && cd d` loop leaves them."""

from __future__ import annotations

import os
from pathlib import Path


def nest(top: Path, depth: int, file: bool = True) -> None:
    """`depth` folders `d` one in another under `top`, made by descriptor (no path grows past
    PATH_MAX), and a file `f` at the bottom unless `file` is False."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    if file:
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write("x")
    os.close(fd)
