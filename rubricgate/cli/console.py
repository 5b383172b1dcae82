"""The console script and `python -m rubricgate`: run the command, then leave at once.

By the time a command returns, every file it wrote is closed, every thread it started has been
joined and every temp folder removed; what interpreter shutdown would still do is free memory the
operating system takes back anyway, one object at a time (~10 ms after a run: a fixed cost of
every run, bench/peers.py). So the console entry flushes the standard streams and calls
`os._exit`. Library callers (`run_suite`, click's test runner) never pass through here.

It also runs rubricgate with pydantic plugins off, unless PYDANTIC_DISABLE_PLUGINS says otherwise:
a plugin installed beside it (an observability SDK's) would see every document rubricgate
validates, reviewer transcripts included, and finding plugins reads the metadata of every
installed package (6 ms with 114 installed) before the first file is validated. With every
plugin off, pydantic's plugin loader is not needed at all, yet importing it imports
`importlib.metadata` (with email, csv and socket): 1.6 MB and ~10 ms of every command. So then a
stand-in takes its place (`skip_plugin_loader`), answering "no plugins" as the loader itself would.

Ctrl-C and SIGTERM are handled from console_main's first statement on, and this module (and the
package `__init__` files on the way to it) import nothing heavy, so nothing slow runs before it:
only the interpreter's own start (and its `site`) lies between exec and the handlers. The
`rubricgate` command (bin/rubricgate, a launcher) starts the interpreter with both signals
blocked, so one sent in that start-up waits for the handlers too. The handler raises
KeyboardInterrupt once; every later signal is a no-op, so a second interrupt cannot land in the
code that reports the first one.

Two instants would lose it. While importlib's global lock is held (any thread importing), an
exception raised in the main thread can land between the lock's acquire and its `try` (in the
weakref callback that drops a module's lock, where it is also swallowed): the lock stays held and
the next import in any thread waits forever, the run with it (bench/early_signals.py found one
such hang in about 800 tries). So then the handler asks again 5 ms later (SIGALRM) instead. And
an interrupt raised where Python only reports an exception and goes on ("Exception ignored in",
a weakref callback or `__del__`) is raised again 5 ms later (sys.unraisablehook).
"""

from __future__ import annotations

import _imp
import codecs
import contextlib
import errno
import os
import signal
import sys

TYPE_CHECKING = False  # typing is not imported before the signal handlers are
if TYPE_CHECKING:
    from typing import NoReturn

# What CPython exits with when flushing stdout at shutdown fails (e.g. `rubricgate ... | head`).
FLUSH_FAILED = 120


INTERRUPTED = ("error: interrupted: the run was stopped before it could judge "
               "(fix: run it again; nothing was gated)")
# The commands that judge (or measure what a later run judges against): their interrupt says so.
JUDGING = frozenset({"run", "compare", "merge", "mutate", "regrade", "baseline"})


def interrupted_line(command: str | None) -> str:
    """The one line an interrupt ends `command` with: a judging command's run could not judge;
    any other (`view --build`, `export`) was only stopped."""
    if command in JUDGING:
        return INTERRUPTED
    return f"error: interrupted: rubricgate{f' {command}' if command else ''} was stopped (fix: run it again)"


def command_named() -> str | None:
    """The command this process's arguments name (the first that is no option: the group's own
    are --help and --version alone)."""
    return next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)


def console_main() -> NoReturn:
    """Run `rubricgate` with the process's arguments and exit with its status.

    Ctrl-C and SIGTERM count from the first instruction on: before a command runs (imports,
    argument parsing) they end it with exit 2 and one line, never click's "Aborted!" and exit 1
    (the regression code); once a run folder exists the run writes a partial report itself."""
    try:  # a SIGINT before the handlers are set raises KeyboardInterrupt in here too
        install_interrupt_handlers()
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        skip_plugin_loader()
        status = _run_main() if not (wrong := not_utf8()) else _say(wrong)
    except SystemExit as exc:
        status = exit_status(exc.code)
    except KeyboardInterrupt:
        print(interrupted_line(command_named()), file=sys.stderr)
        status = 2
    except OSError as exc:  # before the command's own wrapper (`--version` into a full disk)
        if not output_failed(exc):
            raise
        status = say_output_failed(exc)
    except Exception as exc:  # importing click, before the command's own wrapper (cli/app.py)
        if not caused_by_interrupt(exc):
            raise
        print(interrupted_line(command_named()), file=sys.stderr)
        status = 2
    os._exit(flush_streams(status))


def not_utf8() -> str:
    """The one line for an interpreter that reads file names other than as UTF-8 (`python -m
    rubricgate` under a Latin-1 or ASCII locale; bin/rubricgate passes -X utf8), else ''. Case
    ids come from file names: read so, they are not the baseline's, and `baseline update` would
    write them back changed."""
    encoding = sys.getfilesystemencoding()
    if codecs.lookup(encoding).name == "utf-8":
        return ""
    return (f"error: rubricgate: this interpreter reads file names as {encoding}, not UTF-8 (the locale): case ids "
            "would not be the baseline's (fix: run with PYTHONUTF8=1, or a UTF-8 locale: LC_ALL=C.UTF-8)")


def _say(line: str) -> int:
    print(line, file=sys.stderr)
    return 2


PLUGIN_LOADER = "pydantic.plugin._loader"
PLUGINS_OFF = ("__all__", "1", "true")  # the values for which pydantic's loader finds no plugins


def skip_plugin_loader() -> None:
    """With PYDANTIC_DISABLE_PLUGINS turning every plugin off, import a stand-in for pydantic's
    plugin loader in its place (a finder first on sys.meta_path, so the stand-in is imported as a
    module is: bound on its package, with its spec, under the import lock): its `get_plugins`
    answers (), as the loader's own does then, without importing importlib.metadata. Any other
    name pydantic may ask of it (a later version's) is taken from the real loader."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in PLUGINS_OFF or PLUGIN_LOADER in sys.modules:
        return
    if not any(finder is PluginLoaderStandIn for finder in sys.meta_path):
        sys.meta_path.insert(0, PluginLoaderStandIn)


class PluginLoaderStandIn:
    """Finder and loader of the stand-in for pydantic's plugin loader (skip_plugin_loader)."""

    @classmethod
    def find_spec(cls, name: str, path=None, target=None):
        if name != PLUGIN_LOADER:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, cls, origin="rubricgate: every pydantic plugin off (cli/console.py)")  # type: ignore[arg-type]

    @staticmethod
    def create_module(spec) -> None:
        return None  # the default module

    @staticmethod
    def exec_module(module) -> None:
        vars(module).update(get_plugins=_no_plugins, __getattr__=_from_real_plugin_loader)


def _no_plugins(*args, **kwargs) -> tuple:
    """What pydantic's loader answers with every plugin off, whatever it is asked with."""
    return ()


def _from_real_plugin_loader(name: str):
    """A name the stand-in lacks, from the real loader. Not a dunder: the import system asks a
    module for `__path__` and the like, and a plain module has none."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_real_plugin_loader(), name)


_REAL_PLUGIN_LOADER: list = []  # loaded once, if ever


def _real_plugin_loader():
    """pydantic's own plugin loader, loaded from its file beside the stand-in (once: under the
    import lock, as two threads may ask at once)."""
    import importlib.machinery
    import importlib.util

    _imp.acquire_lock()
    try:
        if not _REAL_PLUGIN_LOADER:
            package = sys.modules["pydantic.plugin"]
            spec = importlib.machinery.PathFinder.find_spec(PLUGIN_LOADER, package.__path__)
            if spec is None or spec.loader is None:
                raise AttributeError(f"{PLUGIN_LOADER} is not installed")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _REAL_PLUGIN_LOADER.append(module)
        return _REAL_PLUGIN_LOADER[0]
    finally:
        _imp.release_lock()


# A stream's write fails with one of these (and names no file): a full disk, a quota, an I/O error.
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def output_failed(exc: BaseException) -> bool:
    """Is this the standard output or error refusing what was written? The files rubricgate
    writes itself report their own failures (records/writing.py), with their names."""
    return isinstance(exc, OSError) and exc.errno in OUTPUT_ERRNOS and exc.filename is None


def say_output_failed(exc: BaseException) -> int:
    """One line on stderr, and exit 2: what was to be printed is lost, so nothing was shown."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout = open(os.devnull, "w")  # its buffered bytes cannot be written: none follow them
    why = getattr(exc, "strerror", None) or exc
    print(f"error: rubricgate: its output could not be written ({why}) (fix: write it where there is room: "
          "another file system, or a pipe that reads it)", file=sys.stderr)
    return 2


def caused_by_interrupt(exc: BaseException) -> bool:
    """Does a KeyboardInterrupt stand behind this exception (its cause or context, a few deep)?
    Python 3.11 wraps one raised while a class is made: RuntimeError('Error calling __set_name__').
    Once the handler has raised one, whatever reaches the top came of it: pydantic-core reports one
    raised while it builds a model's schema as a SchemaError whose message is its only trace."""
    if _RAISED:
        return True
    seen: BaseException | None = exc
    for _ in range(8):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
    return False


def _run_main() -> int:
    import click

    try:
        from rubricgate.cli.app import main

        main(standalone_mode=False)
        return 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # `rubricgate` alone: its help, as click shows it
        click.echo(exc.ctx.get_help())
        return exc.exit_code
    except click.UsageError as exc:  # a flag or command: one line and exit 2, as every input error
        print(usage_line(exc), file=sys.stderr)
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        print(interrupted_line(command_named()), file=sys.stderr)
        return 2


def usage_line(exc) -> str:
    """click's usage error (a bad flag value, an unknown option or command) as the one line every
    input error is: `error: COMMAND: problem (fix: ...)`, instead of its usage text."""
    from rubricgate.errors import printable

    path = exc.ctx.command_path if exc.ctx is not None else _command_path(sys.argv[1:])
    message = " ".join(exc.format_message().split())  # click's choices come one per indented line
    return printable(f"error: {path}: {message} (fix: `{path} --help` lists what it takes)")


def _command_path(argv: list[str]) -> str:
    """The command the arguments name (`rubricgate baseline update`): click raises an option's
    missing value before the command's context exists, and such an error carries none."""
    import click

    from rubricgate.cli.app import main

    command: click.Command = main
    path = ["rubricgate"]
    for word in argv:
        sub = command.get_command(None, word) if isinstance(command, click.Group) else None  # type: ignore[arg-type]
        if sub is None:
            break
        command, path = sub, [*path, word]
    return " ".join(path)


# (signal, id of the KeyboardInterrupt) the handler raised: later signals change nothing. An id,
# not the exception: held, its traceback would keep every frame it passed through alive.
_RAISED: list[tuple[int, int]] = []
_DEFERRED: list[int] = []  # the signal waiting for importlib's lock to be free
RETRY_S = 0.005


def install_interrupt_handlers() -> None:
    """SIGTERM, and SIGINT unless it is ignored, as KeyboardInterrupt (see the module docstring);
    SIGHUP too (a closed terminal or ssh session: it died by the signal, no line, no partial
    report) unless it is ignored (`nohup` keeps a run going); SIGALRM retries a deferred one, and
    a swallowed one is delivered again."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        if sig == signal.SIGTERM or signal.getsignal(sig) is signal.default_int_handler:  # SIG_IGN stays
            signal.signal(sig, _as_interrupt)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        signal.signal(signal.SIGHUP, _as_interrupt)
    signal.signal(signal.SIGALRM, _retry_deferred)
    sys.unraisablehook = _redeliver_swallowed
    # The launcher (bin/rubricgate) starts the interpreter with both blocked: one sent during
    # its start-up waits, pending, and is delivered here to the handler just set. Unblocked in any
    # case: every process rubricgate starts inherits the mask, and an agent deaf to SIGTERM would
    # outlive its timeout's polite stop.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))


def _as_interrupt(signum: int, _frame: object = None) -> None:
    if _RAISED:
        return
    if _imp.lock_held():  # raised now it could leave the import lock held (module docstring)
        _retry_later(signum)
        return
    interrupt = KeyboardInterrupt()
    _RAISED.append((signum, id(interrupt)))
    raise interrupt


def _retry_later(signum: int) -> None:
    # A timer, not a thread: the main thread may hold any lock a thread's start would take.
    _DEFERRED[:] = [signum]
    signal.setitimer(signal.ITIMER_REAL, RETRY_S)


def _retry_deferred(*_: object) -> None:
    if _DEFERRED:
        _as_interrupt(_DEFERRED.pop())


def _redeliver_swallowed(unraisable: object) -> None:
    """sys.unraisablehook (any thread): our interrupt, raised where Python ignores exceptions,
    is raised again once the hook has returned; anything else is reported as Python does."""
    swallowed = getattr(unraisable, "exc_value", None)
    if _RAISED and isinstance(swallowed, KeyboardInterrupt) and id(swallowed) == _RAISED[0][1]:
        _retry_later(_RAISED.pop()[0])
        return
    sys.__unraisablehook__(unraisable)  # type: ignore[arg-type]


def exit_status(code: object) -> int:
    """The status `sys.exit(code)` gives: None is 0, an int itself, anything else is printed
    to stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def flush_streams(status: int) -> int:
    """Flush stdout and stderr; `status`, or FLUSH_FAILED when one cannot be written. A stream
    that was closed before the start (`rubricgate ... >&-`) is None: nothing to flush."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, or the stream closed already
            status = FLUSH_FAILED if status == 0 else status
    return status
