"""What the NCCL benchmark runs (nccl_reference.py, nccl_repeats.py) share: their common arguments and environment,
and the harness-free peer (nccl_peer.cpp) in either layout."""
import argparse
import os
import pathlib
import subprocess


def arguments(doc, **extra):
    """Parses --bin, --out and the script's own options (name -> argparse keywords); sets up the environment.
    Returns (args, bin_dir, out_dir)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder of fabric-coll and nccl_peer")
    p.add_argument("--out", default="perf-out")
    for name, keywords in extra.items():
        p.add_argument("--" + name, **keywords)
    a = p.parse_args()
    out_dir = pathlib.Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off on shared GPU hosts
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return a, pathlib.Path(a.bin).resolve(), out_dir


def peer(bin_dir, ops, gpus, min_bytes, max_bytes, per_process, factor=2, env=None):
    """{(op, bytes): (time_us, busbw)} from nccl_peer: one process per GPU (under mpirun) or one for all."""
    cmd = [str(bin_dir / "nccl_peer"), ",".join(ops), str(min_bytes), str(max_bytes), "20", "5", str(factor)]
    if per_process:
        cmd = ["mpirun", "-np", str(gpus), "--bind-to", "none"] + cmd
    r = subprocess.run(["timeout", "300"] + cmd, capture_output=True, text=True,
                       env=dict(os.environ, NGPUS=str(gpus), **(env or {})))
    print(r.stdout, r.stderr, flush=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {r.returncode}")
    rows = {}
    for line in r.stdout.splitlines():
        op, _, size, us, _, busbw, _ = line.split()
        rows[(op, int(size))] = (float(us), float(busbw))
    return rows
