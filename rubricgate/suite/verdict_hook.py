"""A verdict hook (`verdict.hook: FILE.py:FUNCTION`): loaded from its file in the repository.

The file must be a regular file inside the repository (load_config checks the path and makes it
absolute); it is imported under a name of its own, never through sys.path, so it cannot shadow
or be shadowed by another module. Anything that goes wrong while loading it (a syntax error, an
exception at import, a missing or uncallable function) is an input error naming the file, before
any trial runs. Loaded once per file version.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from rubricgate.errors import GateInputError

_FIX = "fix the hook: a function taking the reviewer's answer (str) and returning a dict or None"


def load_hook(spec: str) -> Callable[[str], object]:
    """The hook's function; GateInputError when it cannot be loaded."""
    file, _, func = spec.rpartition(":")
    path = Path(file)
    try:
        stat = path.stat()
    except OSError as exc:
        raise GateInputError(file, "", f"cannot read the verdict hook ({exc.strerror})", "check verdict.hook") from exc
    return _load(str(path), func, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load(file: str, func: str, mtime_ns: int, size: int) -> Callable[[str], object]:
    name = "rubricgate_verdict_hook_" + hashlib.sha256(f"{file}:{mtime_ns}".encode()).hexdigest()[:12]
    loader_spec = importlib.util.spec_from_file_location(name, file)
    if loader_spec is None or loader_spec.loader is None:
        raise GateInputError(file, "", "not a Python file", _FIX)
    module = importlib.util.module_from_spec(loader_spec)
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the hook's own import: any failure is the hook's, said in one line
        raise GateInputError(file, "", f"the verdict hook failed to load: {type(exc).__name__}: {exc}", _FIX) from None
    function = getattr(module, func, None)
    if not callable(function):
        raise GateInputError(file, func, "no such function in the verdict hook", _FIX)
    try:
        inspect.signature(function).bind("answer")
    except (TypeError, ValueError):
        raise GateInputError(file, func, "the verdict hook does not take one argument (the answer)", _FIX) from None
    return function
