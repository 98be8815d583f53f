"""The files fabric-report reads and writes. Whatever is wrong with one is said in one line that names it (BadInput:
cli prints it and exits 2); an output appears whole or not at all: it is written under a temporary name beside its
final one and renamed (what node_exporter's textfile collector needs too), and removed when anything fails.

Why in load and not a module of its own: opening a run (open_run) is load() behind the checks fabric-report needs,
and the outputs' half (output_file, written_file, output_dir, written_dir) needs nothing of the package. Kept whole,
one module holds the one error vocabulary of both (BadInput: exit 2, WriteFailed: exit 3), and the bottom layer can
be imported by every other without a cycle; a separate io module would have to import load all the same."""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import tempfile

import h5py

from .results import load

READABLE_SCHEMAS = (1, 2)
RESULTS_FILE = "a fabricbench results file (.h5, written by fabric-p2p, fabric-coll, fabric-verbs, fabric-sweep " \
               "or fabric-doctor)"


class BadInput(Exception):
    """Bad usage or input: the message is one line naming the file or option and what is allowed (exit 2)."""


class WriteFailed(Exception):
    """An output could not be finished after it was begun (disk full, I/O error): nothing is left of it (exit 3)."""


def one_line(text) -> str:
    return " ".join(str(text).split())


def _reason(e: OSError) -> str:
    return e.strerror or one_line(e)


def open_run(path: str, allow_running: bool = False):
    """The run in `path`, or BadInput naming the file: missing, a directory, not HDF5, truncated or damaged, not
    fabricbench's, a schema this reader does not know, or (unless `allow_running`) a run whose status is still
    'running'."""
    if not path:
        raise BadInput(f"RUN.h5 '': an empty path; expected {RESULTS_FILE}")
    p = pathlib.Path(path)
    if not p.exists():
        raise BadInput(f"{path}: cannot read: no such file; expected {RESULTS_FILE}")
    if p.is_dir():
        raise BadInput(f"{path}: a directory; expected {RESULTS_FILE}")
    try:
        with open(p, "rb") as f:
            f.read(8)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {_reason(e)}") from None
    if not h5py.is_hdf5(p):
        raise BadInput(f"{path}: not an HDF5 file; expected {RESULTS_FILE}")
    try:
        try:
            run = load(p)
        except OSError as e:
            if "unable to lock file" not in str(e):
                raise
            if not allow_running:
                raise BadInput(f"{path}: open for writing by a run still measuring (HDF5 file lock); allowed here: a "
                               "finished run; fabric-report show reads the rows written so far") from None
            run = load(p, locking=False)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - whatever HDF5 or h5py make of a damaged file, it is the file's fault
        raise BadInput(f"{path}: cannot read, truncated or damaged ({one_line(e)}); expected {RESULTS_FILE}") from None
    if run.attrs.get("format") != "fabricbench":
        raise BadInput(f"{path}: not a fabricbench results file (an HDF5 file without the format=fabricbench "
                       f"attribute); expected {RESULTS_FILE}")
    schema = run.attrs.get("schema_version")
    if schema not in READABLE_SCHEMAS:
        raise BadInput(f"{path}: schema_version {schema}: this fabric-report reads "
                       f"{', '.join(map(str, READABLE_SCHEMAS))}")
    if run.attrs.get("status") == "running" and not allow_running:
        raise BadInput(f"{path}: status 'running': the run has not finished, or was killed before it could say so; "
                       "allowed here: a finished run (status complete or failed: ...); fabric-report show reads the "
                       "rows written so far")
    return run


def open_text(path: str, option: str) -> str:
    """The text of a user's file given with `option` (a baseline), or BadInput naming it."""
    p = pathlib.Path(path)
    if not path or not p.exists():
        raise BadInput(f"{option} {path}: no such file")
    if p.is_dir():
        raise BadInput(f"{option} {path}: a directory; expected a file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise BadInput(f"{option} {path}: cannot read: {_reason(e)}") from None
    if b"\0" in data:
        raise BadInput(f"{option} {path}: a binary file (NUL bytes); expected a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{option} {path}: not UTF-8 text (byte {e.start}); expected a text file") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def output_file(text: str, what: str, inputs=()) -> pathlib.Path:
    """Checks an output file name given as `what` (an option or OUT.xxx) before anything is computed: not empty, not
    a directory or special file, in an existing folder, not one of the `inputs`."""
    if not text:
        raise BadInput(f"{what} '': an empty path; expected a file name")
    p = pathlib.Path(text)
    if p.is_dir():
        raise BadInput(f"{what} {text}: a directory; expected a file name (the file is written whole or not at all)")
    if p.exists() and not p.is_file():
        raise BadInput(f"{what} {text}: not a regular file; expected a file name")
    if not p.parent.is_dir():
        state = "is not a folder" if p.parent.exists() else "does not exist"
        raise BadInput(f"{what} {text}: the folder {p.parent} {state}; expected a file in an existing folder")
    for source in inputs:
        if p.exists() and pathlib.Path(source).exists() and os.path.samefile(p, source):
            raise BadInput(f"{what} {text}: the same file as the input {source}; choose another name")
    return p


@contextlib.contextmanager
def written_file(path: pathlib.Path, what: str):
    """Yields a temporary path beside `path` to write; renamed to `path` when the block ends, removed when it
    fails. A folder where nothing can be created is BadInput (before anything is written)."""
    try:
        # Not ending in the final suffix: node_exporter's textfile collector reads every *.prom it finds.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as e:
        raise BadInput(f"{what} {path}: cannot write in {path.parent}: {_reason(e)}") from None
    os.close(fd)
    tmp = pathlib.Path(tmp)
    try:
        try:
            yield tmp
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from other readers (node_exporter)
            os.replace(tmp, path)
        except OSError as e:
            raise WriteFailed(f"{what} {path}: writing failed, nothing written: {_reason(e)}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def output_dir(text: str, what: str) -> pathlib.Path:
    if not text:
        raise BadInput(f"{what} '': an empty path; expected a folder")
    p = pathlib.Path(text)
    if p.exists() and not p.is_dir():
        raise BadInput(f"{what} {text}: a file; expected a folder (created if missing)")
    return p


@contextlib.contextmanager
def written_dir(path: pathlib.Path, what: str):
    """Yields a temporary folder inside `path` (created with its missing parents) to write files into; they are
    moved into `path` when the block ends. When it fails, they are removed, and so are the folders made here."""
    missing, q = [], path
    while not q.exists() and q != q.parent:
        missing.append(q)
        q = q.parent
    if not q.is_dir():
        raise BadInput(f"{what} {path}: {q} is a file; expected a folder (created if missing)")

    def drop_missing():
        for folder in missing:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()

    try:
        path.mkdir(parents=True, exist_ok=True)
        stage = pathlib.Path(tempfile.mkdtemp(prefix=".fabric-report-", dir=path))
    except OSError as e:
        drop_missing()
        raise BadInput(f"{what} {path}: cannot create or write in this folder: {_reason(e)}") from None
    done = False
    try:
        try:
            yield stage
            for f in sorted(stage.iterdir()):
                os.replace(f, path / f.name)
            done = True
        except OSError as e:
            raise WriteFailed(f"{what} {path}: writing failed, nothing written: {_reason(e)}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not done:
            drop_missing()
