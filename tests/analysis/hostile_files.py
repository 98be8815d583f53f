"""Results files that carry hostile text (issue 48), for the tests of what fabric-report makes of them.

doctor_run: made by the real tool. fabric-doctor --nccl-ras asks the fake RAS service (tests/fixtures/ras/fake_ras.py)
whose recorded reply names a rank's host "\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED fabric-doctor: every rank healthy" (set
the terminal's title, clear the screen, start a forged line of our own) and gives its communicator a hash with the
bytes ff fe, which are not UTF-8 (as tests/mpi/test_nccl_ras.py does). The file keeps them in /doctor/findings (host,
subject, value, hint), /doctor/ras_ranks, /doctor/ras_communicators and /doctor/ras_reply.

hostile_attributes: what no fake service can put there, written with h5py in the tools' layout (variable-length
UTF-8 strings): root attributes command_line, hosts and status holding escapes, bidi overrides and bytes that are not
UTF-8 (a user's argument need not be UTF-8; a failed run's status quotes what went wrong).

sweep_pair: two synthetic fabric-sweep files (sweep_files.py) with the hostile host name among their hosts, the
second with it slow, so that compare, check and the answer name it; and a host whose name matplotlib would read as
mathtext (two $), one it cannot parse."""
import os
import pathlib
import subprocess
import sys
import time

import h5py
import numpy as np

from fbtest import LaunchTest
from .sweep_files import write_single_rail

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "ras"
RECORDED = FIXTURES / "nccl-2.28.9-h200x2"
HOST = "\x1b]0;pwned\x07\x1b[2J\nFORGED fabric-doctor: every rank healthy"
HOST_SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED fabric-doctor: every rank healthy"  # as printable() shows it
RAW = ("\x1b", "\x07", "\u202e", "\u009b")  # none of these may reach a terminal
MATH_HOST = "gpu$\\frac{$01"  # $...$ is a formula to matplotlib, and this one does not parse
# Root attributes: raw bytes as a tool would store them (a variable-length UTF-8 string holds any bytes).
ATTRIBUTES = {
    "command_line": b"fabric-p2p --output r\xff\xfe.h5 --note \x1b[31mred\x1b[0m\nFORGED line \xe2\x80\xae",
    "hosts": b"node0,\x1b]0;pwned\x07node1",
    "status": b"failed: host replied \x1b[2J\r\nFORGED status: complete \xc2\x9b1m",
}


def forged_lines(text: str) -> list:
    """The lines of `text` that begin with the forged text (a field's line feed that started a line of its own)."""
    return [line for line in text.splitlines() if line.startswith(("FORGED", "\x1b"))]


def doctor_run(folder: pathlib.Path, name: str = "hostile.h5") -> pathlib.Path:
    """fabric-doctor --nccl-ras against the fake service answering the hostile reply; the file it wrote."""
    hostile = HOST.replace("\n", "\\n").encode()  # the JSON reply spells the line feed \n
    text = (RECORDED / "mismatch.json").read_bytes()
    text = text.replace(b'"host": "192.0.2.2",\n          "pid": 724', b'"host": "' + hostile + b'",\n          "pid": 724')
    text = text.replace(b"0xc04513ef3a63ea2e", b"0x\xff\xfe3f")
    replies = folder / "replies"
    replies.mkdir(exist_ok=True)
    (replies / "hostile.json").write_bytes(text)
    portfile = folder / "ras.port"
    ras = subprocess.Popen([sys.executable, str(FIXTURES / "fake_ras.py"), str(portfile), str(replies), "hostile"])
    try:
        for _ in range(200):
            if portfile.exists() and portfile.read_text():
                break
            time.sleep(0.05)
        runner = LaunchTest()
        runner.dir = folder
        r = runner.mpirun(1, "fabric-doctor", ["--nccl-ras", f"127.0.0.1:{portfile.read_text()}", "--output", name],
                          timeout=120)
    finally:
        ras.kill()
        ras.wait()
    assert r.returncode == 1 and (folder / name).is_file(), r.stdout + r.stderr  # the laggard: a failed finding
    return folder / name


def hostile_attributes(path: pathlib.Path) -> pathlib.Path:
    """`path` with ATTRIBUTES written over its root attributes, as the tools write strings."""
    with h5py.File(path, "a") as f:
        for key, value in ATTRIBUTES.items():
            f.attrs.create(key, np.array(value, dtype=h5py.string_dtype("utf-8")))
    return path


def sweep_pair(folder: pathlib.Path) -> tuple:
    """A.h5 and B.h5: four hosts, one of them HOST; in B it is slow and has a node verdict whose reason quotes it."""
    hosts = ("node0", HOST, MATH_HOST, "node3")
    a, b = folder / "A.h5", folder / "B.h5"
    write_single_rail(a, hosts=hosts)
    write_single_rail(b, hosts=hosts, slow=HOST, verdicts=[("node", HOST, "", f"slow: {HOST} \u202egnp.exe")])
    return a, b


if __name__ == "__main__":  # make the files in a folder to look at: python3 -m analysis.hostile_files DIR
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    hostile_attributes(doctor_run(out))
    sweep_pair(out)
    print(os.listdir(out))
