"""Shared by the rig tests (network namespaces, Slurm, the Soft-RoCE guest): the rigs run side by side under ctest -j."""
import os
import pathlib
import re
import subprocess


def free_net():
    """A third octet no running rig uses (slurmctld's port derives from it too)."""
    used = {int(p.read_text()) for p in pathlib.Path("/run").glob("fabricbench-rig-*/net")}
    used |= {int(m) for m in re.findall(r"inet 10\.77\.(\d+)\.", subprocess.run(
        ["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout)}
    start = os.getpid() % 100
    return next(150 + (start + i) % 100 for i in range(100) if 150 + (start + i) % 100 not in used)
