"""Runs commands inside the Soft-RoCE QEMU guest of tests/rigs/rxe_vm.sh, in one boot: the build folder and the
folders of any library the guest lacks (CUDA's, in a CUDA build) are shared read-only at the same paths; each case's
exit status, stdout and stderr come back through the shared output folder. Used by test_verbs_rxe.py and by
tests/perf/verbs_vs_perftest.py."""
import os
import pathlib
import shlex
import subprocess

VM_SCRIPT = pathlib.Path(__file__).resolve().parent / "rxe_vm.sh"
# Two ranks on the guest's two vCPUs, over shared memory; the rxe device is the same for both (loopback traffic).
MPIRUN = "mpirun --allow-run-as-root -np 2 --oversubscribe --bind-to none --mca btl self,vader"
SYSTEM_LIB_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")


def library_dirs(executable):
    """Folders of the libraries `executable` loads from outside the system folders (the guest has only Debian's)."""
    out = subprocess.run(["ldd", str(executable)], capture_output=True, text=True, check=True).stdout
    dirs = []
    for line in out.splitlines():
        if "=>" not in line:
            continue
        path = line.split("=>")[1].split("(")[0].strip()
        if path.startswith("/") and not path.startswith(SYSTEM_LIB_DIRS):
            d = os.path.dirname(os.path.realpath(path))
            if d not in dirs:
                dirs.append(d)
    return dirs


class Case:
    def __init__(self, out, name):
        self.name = name
        self.rc = int((out / f"{name}.rc").read_text())
        self.stdout = (out / f"{name}.out").read_text()
        self.stderr = (out / f"{name}.err").read_text()
        self.seconds = int((out / f"{name}.ms").read_text()) / 1000  # in the guest, under emulation

    def __repr__(self):
        return f"case {self.name}: exit {self.rc} after {self.seconds:.1f} s\n{self.stdout}\n{self.stderr}"


def run_guest(out, cases, bin_dir, timeout=1500, case_timeout=240):
    """`cases`: (name, shell command) in order, run as root in one boot after rxe0 is up, each stopped after
    `case_timeout` seconds (exit 124). Returns {name: Case}."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bin_dir = pathlib.Path(bin_dir).resolve()
    # Verbs pin (register) every buffer: the guest's jobs run with the limit the docs tell users to set.
    lines = ["cd " + shlex.quote(str(out)), "ulimit -l unlimited"]
    for name, command in cases:
        lines.append(f"t=$(date +%s%N); timeout -k 5 {case_timeout} sh -c {shlex.quote(command)} > {name}.out "
                     f"2> {name}.err; echo $? > {name}.rc; echo $(( ($(date +%s%N) - t) / 1000000 )) > {name}.ms")
    job = out / "job.sh"
    job.write_text("\n".join(lines) + "\n")
    shares = [str(bin_dir.parent)] + library_dirs(bin_dir / "fabric-p2p")
    env = dict(os.environ, FABRICBENCH_VM_TIMEOUT=str(timeout))
    if len(shares) > 1:
        env["FABRICBENCH_VM_LDPATH"] = ":".join(shares[1:])
    r = subprocess.run([str(VM_SCRIPT), "run", str(job), str(out)] + shares, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"rxe_vm.sh run: exit {r.returncode}\n{r.stdout}")
    return {name: Case(out, name) for name, _ in cases}
