"""The path NCCL took, from its INFO lines (NCCL_DEBUG=INFO; in the same stream as a peer's table, or a job's log
given with --nccl-log): per connection P2P (CUMEM, IPC, direct), SHM, or NET with its plugin (IB, Socket, ...), the NIC
and whether the data went GPUDirect RDMA (`/GDRDMA`); per NIC whether it can reach GPU memory at all ("GPU Direct RDMA
Enabled|Disabled for HCA"), whether the GPU has dma-buf, and the settings that limit GDR (NCCL_NET_GDR_LEVEL,
NCCL_NET_GDR_READ). The formats are NCCL's own (src/transport/net.cc, p2p.cc, shm.cc, src/graph/topo.cc); lines of
NCCL 2.5's "Ring NN :" form are read too. Memory is bounded: connections are counted, not kept."""
from __future__ import annotations

import collections
import re

_NCCL = re.compile(r"^(?:(\S+?):(\d+):(\d+) )?\[(\d+)\] NCCL (INFO|WARN|TRACE) (.*)$")
_VERSION = re.compile(r"NCCL version (\S+)")
_CHANNEL = re.compile(r"(?:Channel|Ring) (\d+)(?:/\d+)? : (\d+)\[[^\]]*\] -> (\d+)\[[^\]]*\]"
                      r"(?: \[(send|receive)\])? via (.*)$")
_NET = re.compile(r"NET/([^/\s]+)/(\d+)(?:\((\d+)\))?(/GDRDMA)?(\(PCI\))?(/Shared)?")
_USING = re.compile(r"NET/(\S+) : Using (.*?)(?:;|$)")
_NIC = re.compile(r"\[(\d+)\]([^:\s\[\]]+)(?::(\d+))?(?:/(\w+))?")
_GDR = re.compile(r"NET/(\S+) : GPU Direct RDMA (Enabled|Disabled) for HCA (\d+) '([^']*)'(.*)$")
_ENV = re.compile(r"(NCCL_\w+) set by environment to (\S+)")
_NETWORK = re.compile(r"Using network (\S+)")
# NCCL_DEBUG_SUBSYS=TUNING: the algorithm and protocol of each collective ("AllReduce: 1048576 Bytes -> Algo RING proto
# SIMPLE ...").
_ALGO = re.compile(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)")


class NcclLines:
    """Reads NCCL log lines one at a time (take) and says what they showed (path_text)."""

    def __init__(self):
        self.version = ""
        self.network = ""                 # "IB", "Socket", a plugin's name
        self.nics = {}                    # (plugin, index) -> "mlx5_0:1/IB"
        self.gdr = {}                     # NIC name -> (enabled, the rest of NCCL's line)
        self.dmabuf = False               # "DMA-BUF is available on GPU device"
        self.env = {}                     # NCCL_* named in "set by environment" lines
        self.connections = collections.Counter()  # (kind, detail, nic index, gdr, direction) -> channels
        self._channel_lines = set()  # each channel line counted once (a log of many jobs or ranks repeats them)
        self.lines = 0
        self.hosts = set()
        self.nvls = ""
        self.algorithms = {}              # (collective, bytes) -> algorithm NCCL chose

    def take(self, line) -> bool:
        """True where `line` is one of NCCL's log lines (read here, and not a line of the table around it)."""
        m = _NCCL.match(line.stripped)
        if not m:
            return False
        self.lines += 1
        if m.group(1):
            self.hosts.add(m.group(1))
        text = m.group(6)
        self._read(text)
        return True

    def _read(self, text: str) -> None:
        if not self.version and (v := _VERSION.search(text)):
            self.version = v.group(1).split("+")[0]
        if (a := _ALGO.search(text)):
            if len(self.algorithms) < 4096:
                self.algorithms[(a.group(1), int(a.group(2)))] = a.group(3)
        elif (c := _CHANNEL.search(text)):
            self._connection(c)
        elif (u := _USING.search(text)):
            for nic in _NIC.finditer(u.group(2)):
                self.nics[(u.group(1), int(nic.group(1)))] = nic.group(2) + (f":{nic.group(3)}" if nic.group(3)
                                                                             else "")
        elif (g := _GDR.search(text)):
            if g.group(1) != "Socket":  # NET/Socket says "Disabled" for every interface: sockets never do GDR
                self.gdr[g.group(4)] = (g.group(2) == "Enabled", g.group(5).strip())
        elif "DMA-BUF is available" in text:
            self.dmabuf = True
        elif (e := _ENV.search(text)):
            self.env[e.group(1)] = e.group(2).rstrip(".")
        elif (n := _NETWORK.search(text)):
            self.network = n.group(1)
        elif "NVLS multicast support is" in text:
            self.nvls = text.rsplit(" ", 1)[-1]

    def _connection(self, c) -> None:
        line = c.group(0)
        if line in self._channel_lines:
            return
        if len(self._channel_lines) < 1 << 18:  # bounded: past it, new lines are counted without being remembered
            self._channel_lines.add(line)
        via, direction = c.group(5), c.group(4) or ""
        n = _NET.search(via)
        if n:
            key = ("NET", n.group(1), int(n.group(2)), bool(n.group(4)), direction)
        elif via.startswith("P2P"):
            key = ("P2P", via.split()[0], -1, False, direction)
        elif via.startswith("SHM") or "shared memory" in via:
            key = ("SHM", via.split()[0], -1, False, direction)
        else:
            key = ("other", via.split()[0] if via else "", -1, False, direction)
        self.connections[key] += 1

    # What was read, in words
    def nic_name(self, plugin: str, index: int) -> str:
        return self.nics.get((plugin, index), f"{plugin} device {index}")

    def kinds(self) -> dict:
        """Transport -> channels: {'P2P/CUMEM/read': 4, 'NET/IB': 8, ...}."""
        out = collections.Counter()
        for (kind, detail, _, _, _), count in self.connections.items():
            out[f"NET/{detail}" if kind == "NET" else detail] += count
        return dict(out)

    def gdr_text(self) -> str:
        """'GPUDirect RDMA: on (NIC mlx5_0, mlx5_1)', '... off ...: why', or '' where the log shows neither a
        connection over the network nor a NIC's GDR line."""
        net = [k for k in self.connections if k[0] == "NET"]
        if not net:
            if not self.gdr:
                return ""
            if any(enabled for enabled, _ in self.gdr.values()):
                able = sorted(n for n, (enabled, _) in self.gdr.items() if enabled)
                return f"GPUDirect RDMA: possible (NIC {', '.join(able)}); no connection over the network in the log"
            return f"GPUDirect RDMA: off: {self._why_off([])}"
        if {k[1] for k in net} <= {"Socket"}:
            return "GPUDirect RDMA: off: NCCL used sockets (NET/Socket), not RDMA"
        on = sorted({self.nic_name(k[1], k[2]) for k in net if k[3]})
        off = sorted({self.nic_name(k[1], k[2]) for k in net if not k[3]})
        if on and not off:
            return f"GPUDirect RDMA: on (NIC {', '.join(on)})"
        why = self._why_off(off)
        if on:
            side = " for sends" if {k[4] for k in net if not k[3]} == {"send"} else ""
            return f"GPUDirect RDMA: partly: on (NIC {', '.join(on)}), off{side} on {', '.join(off)}: {why}"
        return f"GPUDirect RDMA: off (NIC {', '.join(off)}): {why}"

    def _why_off(self, nics: list) -> str:
        names = {n.split(":")[0] for n in nics}
        disabled = [n for n, (enabled, _) in self.gdr.items() if not enabled and n in names]
        if not disabled and not (names & set(self.gdr)) and self.gdr and \
                not any(enabled for enabled, _ in self.gdr.values()):
            disabled = sorted(self.gdr)  # NICs named only by index here, and every NIC the log names refuses GDR
        if disabled:
            rest = sorted({self.gdr[n][1] for n in disabled} - {""})
            return (f"the NIC cannot reach GPU memory ({', '.join(disabled)}: 'GPU Direct RDMA Disabled'"
                    f"{' ' + ' '.join(rest) if rest else ''}; load nvidia_peermem, or use a kernel, driver and NCCL "
                    f"with dma-buf{': the GPU has dma-buf' if self.dmabuf else ''})")
        if "NCCL_NET_GDR_LEVEL" in self.env:
            return f"NCCL_NET_GDR_LEVEL={self.env['NCCL_NET_GDR_LEVEL']} limits it"
        if self.gdr:
            return ("the NIC can, but NCCL judged the GPU too far from it (PCIe distance above its GDR level; "
                    "NCCL_NET_GDR_LEVEL raises it) or GDR reads are off for sends (NCCL_NET_GDR_READ)")
        return "no 'GPU Direct RDMA' line in the log (NCCL_DEBUG_SUBSYS without NET?)"

    def path_text(self) -> str:
        """One line: the transports with their channel counts, then GDR."""
        kinds = self.kinds()
        if not kinds:
            return ""
        text = "NCCL path: " + ", ".join(f"{k} ({v} connections)" for k, v in sorted(kinds.items()))
        gdr = self.gdr_text()
        return text + ("; " + gdr if gdr else "")
