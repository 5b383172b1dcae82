"""One malloc arena for a command's process, set before its first thread.

glibc gives each thread that allocates an arena of its own (up to eight per core), and memory
freed in one arena serves only that arena: a run's trial threads, each with its own, held
~1.7 MB more at the peak of a 2,000-case run than one shared arena does (bench/run_memory.py,
MALLOC_ARENA_MAX=1 against unset). Python's own small objects never come from malloc (pymalloc,
under the interpreter lock), so the threads seldom meet in the one arena. glibc reads the limit
when the first thread beside the main one allocates: set later, it changes nothing, so each
command that runs trials (`run`, `compare --base`, `baseline update`, `record`) sets it before it
starts any (cli/core.py `one_malloc_arena`); a library caller's process is left as it is.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # glibc's malloc.h


def one_malloc_arena() -> bool:
    """Limit glibc's malloc to one arena; False where the C library is not glibc (nothing set)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        return bool(ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1))
    except (ValueError, OSError, AttributeError):  # no such confstr name, or no mallopt
        return False
