"""Synthetic fabric-sweep files written with h5py in the layout fabric-sweep writes (compound tables of fixed-width
text, each column declared by the attributes column_units/roles/better/headline/series; matrices with row and column
labels): the single-rail layout of today's files (also with several metrics, hosts left untested and the coverage
attributes), the layout of issue 21 with rails (/sweep/pairs, /sweep/nodes and /sweep/verdicts with rail, nic and
switch columns; /sweep/topology, /sweep/switches; one matrix per rail), and a mesh (--repeat: /sweep/passes,
/sweep/changes, the pairs of every pass)."""
import math

import h5py
import numpy as np



def _col(name, dtype, unit="", role="setting", better="", headline=False, series=False):
    return (name, dtype, unit, role, better, headline, series)


def write_table(f, name, columns, rows):
    """A compound table as fabric-sweep writes it: chunked, extensible, the columns' declarations as attributes."""
    dtype = np.dtype([(c[0], c[1]) for c in columns])
    data = np.array([tuple(v.encode() if isinstance(v, str) else v for v in row) for row in rows], dtype=dtype)
    ds = f.create_dataset(name, data=data, maxshape=(None,), chunks=(64,))
    text = h5py.string_dtype()
    ds.attrs.create("column_units", [c[2] for c in columns], dtype=text)
    ds.attrs.create("column_roles", [c[3] for c in columns], dtype=text)
    ds.attrs.create("column_better", [c[4] for c in columns], dtype=text)
    ds.attrs.create("column_headline", ["yes" if c[5] else "" for c in columns], dtype=text)
    ds.attrs.create("column_series", ["yes" if c[6] else "" for c in columns], dtype=text)
    return ds


def write_matrix(f, name, hosts, values, unit="MB/s", title="", better="higher"):
    ds = f.create_dataset(name, data=np.asarray(values, dtype=float))
    text = h5py.string_dtype()
    ds.attrs["better"] = better
    ds.attrs.create("column_labels", hosts, dtype=text)
    ds.attrs.create("row_labels", hosts, dtype=text)
    ds.attrs["title"] = title or f"{name.rsplit('/', 1)[1]} ({unit}): row -> column, each direction measured on its own"
    ds.attrs["unit"] = unit
    return ds


def _root(f, hosts, command):
    for key, value in (("command_line", command), ("finished_at", "2026-11-24T00:37:52Z"), ("format", "fabricbench"),
                       ("hosts", ",".join(hosts)), ("started_at", "2026-11-24T00:37:50Z"), ("status", "complete"),
                       ("tool", "fabric-sweep"), ("tool_version", "0.1.0")):
        f.attrs[key] = value
    f.attrs["schema_version"] = np.int64(2)
    f.attrs["world_size"] = np.int64(len(hosts))


def _env(f, hosts):
    write_table(f, "env/ranks", [_col("rank", "<i8", role="key"), _col("host", "S64"), _col("local_rank", "<i8"),
                                 _col("gpu", "<i8"), _col("gpu_name", "S64"), _col("gpu_uuid", "S48"),
                                 _col("pci_bus_id", "S24")],
                [(i, h, 0, -1, "", "", "") for i, h in enumerate(hosts)])
    write_table(f, "env/checks", [_col("host", "S64", role="key"), _col("rank", "<i8", role="key"),
                                  _col("check", "S32", role="key"), _col("subject", "S64", role="key"),
                                  _col("status", "S8"), _col("value", "S256"), _col("expected", "S128"),
                                  _col("hint", "S256")],
                [(h, -1, "mpi", "", "ok", "Open MPI", "", "") for h in hosts])


def _pair_columns(rails, passes=False):
    cols = [_col("pass", "<i8", role="key")] if passes else []
    cols += [_col("round", "<i8", role="key"), _col("kind", "S8", role="key"), _col("host_a", "S64", role="key"),
            _col("host_b", "S64", role="key"), _col("metric", "S16", role="key", series=True),
            _col("direction", "S8", role="key")]
    if rails:
        cols += [_col("rail", "<i8", role="key"), _col("nic_a", "S64"), _col("nic_b", "S64")]
    cols += [_col("bytes", "<i8", unit="B", role="key"), _col("iterations", "<i8"), _col("window", "<i8"),
             _col("cut", "<i8"), _col("hung", "<i8"), _col("value", "<f8", role="measured", headline=True),
             _col("unit", "S8", role="key"), _col("time_us_median", "<f8", "us", "statistic", "lower"),
             _col("time_us_p99", "<f8", "us", "statistic", "lower"), _col("wrong", "<i8", "B", "measured", "lower"),
             _col("port_errors", "<f8", "", "measured", "lower"), _col("xmit_wait", "<f8", "", "measured", "lower"),
             _col("nvlink_errors", "<f8", "", "measured", "lower"), _col("counters_host", "S132")]
    cols += [_col("expected_gbps", "<f8", "GB/s", "reference"), _col("pct_expected", "<f8", "%", "measured", "higher")]
    return cols


def _pair_row(rails, rnd, a, b, rail, direction, value, nic_a="", nic_b="", metric="p2p_bw", pass_no=None):
    row = [] if pass_no is None else [pass_no]
    row += [rnd, "sweep", a, b, metric, direction] + ([rail, nic_a, nic_b] if rails else [])
    row += [65536, 2, 64, 0, 0, value, UNITS[metric], 10.0, 12.0, 0, math.nan, math.nan, math.nan, "", math.nan,
            math.nan]
    return tuple(row)


# metric -> its unit; a latency is also better lower (its matrix's `better`)
UNITS = {"p2p_bw": "MB/s", "p2p_latency": "us"}


def _figure(metric, bandwidth):
    """A metric's figure for a pair of the given bandwidth (MB/s): a latency of 1e6 / bandwidth us, the slow slower."""
    return bandwidth if UNITS[metric] == "MB/s" else 1e6 / bandwidth


def _node_columns(rails):
    cols = [_col("host", "S64", role="key"), _col("metric", "S16", role="key", series=True)]
    if rails:
        cols += [_col("rail", "<i8", role="key"), _col("nic", "S64")]
    return cols + [_col("median", "<f8", role="measured", headline=True), _col("unit", "S8", role="key"),
                   _col("pairs", "<i8"), _col("suspect_pairs", "<i8", role="measured", better="lower")]


def _verdict_columns(rails):
    cols = [_col("metric", "S16", role="key"), _col("kind", "S8", role="key"), _col("host_a", "S64", role="key"),
            _col("host_b", "S64", role="key")]
    if rails:
        cols += [_col("rail", "<i8", role="key"), _col("nic", "S64"), _col("switch", "S132")]
    return cols + [_col("reason", "S320" if rails else "S256")]


def _matrix_values(hosts, value):
    n = len(hosts)
    return [[math.nan if i == j else value(hosts[i], hosts[j]) for j in range(n)] for i in range(n)]


def write_single_rail(path, hosts=("node0", "node1", "node2", "node3"), slow=None, verdicts=(), metrics=("p2p_bw",),
                      tested=None, attrs=None):
    """Today's layout: no rail, nic or switch column, one matrix per metric, no topology. `slow`: a host whose pairs
    are at half speed; `verdicts`: (kind, host_a, host_b, reason[, metric]) rows, of p2p_bw unless a metric is given;
    `metrics`: p2p_bw and/or p2p_latency; `tested`: the hosts whose pairs were measured (default all; the others have
    no rows and NaN cells, as hosts a spent budget left out); `attrs`: more root attributes (hosts_planned ...)."""
    hosts = list(hosts)
    tested = hosts if tested is None else list(tested)
    speed = lambda a, b: 5000.0 if slow in (a, b) else 10000.0 + 100 * hosts.index(a) + hosts.index(b)
    with h5py.File(path, "w") as f:
        _root(f, hosts, f"fabric-sweep --metric {','.join(metrics)} -b 64K -e 64K -n 2 -w 1 --output x.h5")
        for key, value in (attrs or {}).items():
            f.attrs[key] = value
        _env(f, hosts)
        pairs = [(a, b) for i, a in enumerate(tested) for b in tested[i + 1:]]
        write_table(f, "sweep/pairs", _pair_columns(False),
                    [_pair_row(False, k, a, b, 0, d, _figure(m, speed(a, b) if d == "a->b" else speed(b, a)),
                               metric=m) for m in metrics for k, (a, b) in enumerate(pairs) for d in ("a->b", "b->a")])
        write_table(f, "sweep/nodes", _node_columns(False),
                    [(h, m, _figure(m, 5000.0 if h == slow else 10000.0), UNITS[m], len(tested) - 1,
                      len(tested) - 1 if h == slow else 0) for m in metrics for h in tested])
        write_table(f, "sweep/verdicts", _verdict_columns(False),
                    [(v[4] if len(v) > 4 else "p2p_bw", *v[:4]) for v in verdicts])
        for m in metrics:
            figure = lambda a, b: _figure(m, speed(a, b)) if a in tested and b in tested else math.nan
            write_matrix(f, f"sweep/matrices/{m}", hosts, _matrix_values(hosts, figure), unit=UNITS[m],
                         better="higher" if UNITS[m] == "MB/s" else "lower")


# The rails file: 8 hosts, 2 rails, two leaves per rail. The leaves are named so that first seen is not alphabetical
# order, and the hosts of a leaf are not neighbours in the job, so that an order by leaf differs from both.
HOSTS = [f"node{i}" for i in range(8)]
LEAVES = {0: {"leaf2": ["node0", "node2", "node4", "node6"], "leaf1": ["node1", "node3", "node5", "node7"]},
          1: {"leaf3": ["node0", "node1", "node4"], "leaf4": ["node2", "node3", "node5", "node6", "node7"]}}
SPINES = {0: "spine0", 1: "spine1"}
NIC = {0: "mlx5_0", 1: "mlx5_1"}
# rail 0: node5's NIC is slow; rail 1: the pairs crossing between leaf3 and leaf4 are slow (leaf4's uplink)
SLOW_NIC = ("node5", 0)
SLOW_UPLINK = ("leaf4", 1)
# Expected orders of the heat maps: leaves as first seen in /sweep/topology, hosts in job order within a leaf.
ORDER = {0: ["node0", "node2", "node4", "node6", "node1", "node3", "node5", "node7"],
         1: ["node0", "node1", "node4", "node2", "node3", "node5", "node6", "node7"]}
BOUNDARIES = {0: [4], 1: [3]}


def counted(host, a, b, rail, value):
    """Whether a pair counts as suspect in the synthetic tables: below half the median, and not a pair of the slow NIC
    as seen from its peer (as a judge that blamed node5's NIC for them would count; `host` None: a switch's count)."""
    if value >= 5000:
        return False
    return not (rail == SLOW_NIC[1] and SLOW_NIC[0] in (a, b) and host != SLOW_NIC[0])


def leaf_of(host, rail):
    return next(leaf for leaf, members in LEAVES[rail].items() if host in members)


def rail_speed(a, b, rail):
    if rail == SLOW_NIC[1] and SLOW_NIC[0] in (a, b):
        return 4000.0
    if rail == SLOW_UPLINK[1] and leaf_of(a, rail) != leaf_of(b, rail):
        return 3000.0
    return 10000.0 + 10 * HOSTS.index(a) + HOSTS.index(b)


def write_rails(path, verdicts=None, topology=True, coverage=1.0):
    """Issue 21's layout with 2 rails x 8 hosts; with `topology` the tables /sweep/topology and /sweep/switches and
    the attribute leaf_pair_coverage. `verdicts`: rows (kind, host_a, host_b, rail, nic, switch, reason); default: an
    uplink verdict on rail 1 and a NIC verdict on rail 0."""
    if verdicts is None:
        verdicts = [("uplink", "", "", SLOW_UPLINK[1], "", SLOW_UPLINK[0],
                     "the pairs crossing leaf4 on rail 1 at 30% of the median, the pairs inside it fine"),
                    ("nic", SLOW_NIC[0], "", SLOW_NIC[1], NIC[SLOW_NIC[1]], "",
                     "node5's pairs on rail 0 at 40% of the median, its other rails fine")]
    with h5py.File(path, "w") as f:
        _root(f, HOSTS, "fabric-sweep --metric p2p_bw --rails -b 64K -e 64K -n 2 -w 1 --output x.h5")
        f.attrs["rails"] = np.int64(2)
        if topology:
            f.attrs["leaf_pair_coverage"] = float(coverage)
        _env(f, HOSTS)
        pairs = [(a, b) for i, a in enumerate(HOSTS) for b in HOSTS[i + 1:]]
        rows = []
        for rail in (0, 1):
            for k, (a, b) in enumerate(pairs):
                for d in ("a->b", "b->a"):
                    value = rail_speed(a, b, rail) if d == "a->b" else rail_speed(b, a, rail)
                    rows.append(_pair_row(True, k, a, b, rail, d, value, NIC[rail], NIC[rail]))
        write_table(f, "sweep/pairs", _pair_columns(True), rows)
        nodes = []
        for host in HOSTS:
            for rail in (0, 1):
                values = [rail_speed(host, o, rail) for o in HOSTS if o != host]
                suspect = sum(counted(host, host, o, rail, rail_speed(host, o, rail)) for o in HOSTS if o != host)
                nodes.append((host, "p2p_bw", rail, NIC[rail], float(np.median(values)), "MB/s", len(values), suspect))
        write_table(f, "sweep/nodes", _node_columns(True), nodes)
        write_table(f, "sweep/verdicts", _verdict_columns(True), [("p2p_bw", *v) for v in verdicts])
        if topology:
            write_table(f, "sweep/topology", [_col("host", "S64", role="key"), _col("rail", "<i8", role="key"),
                                              _col("leaf", "S64"), _col("spine", "S64")],
                        [(h, r, leaf_of(h, r), SPINES[r]) for r in (0, 1) for h in HOSTS])
            switches = []
            for rail in (0, 1):
                for leaf, members in LEAVES[rail].items():
                    inside = [(a, b) for a in members for b in members if a != b]
                    crossing = [(a, b) for a in members for b in HOSTS if b not in members]
                    crossing += [(b, a) for a, b in crossing]
                    suspect = lambda pairs: sum(counted(None, a, b, rail, rail_speed(a, b, rail)) for a, b in pairs)
                    median = lambda pairs: float(np.median([rail_speed(a, b, rail) for a, b in pairs]))
                    switches.append((leaf, rail, "p2p_bw", "MB/s", len(members), len(inside), suspect(inside),
                                     len(crossing), suspect(crossing), median(inside), median(crossing)))
            write_table(f, "sweep/switches",
                        [_col("switch", "S64", role="key"), _col("rail", "<i8", role="key"),
                         _col("metric", "S16", role="key", series=True), _col("unit", "S8", role="key"),
                         _col("hosts", "<i8"), _col("inside_pairs", "<i8"),
                         _col("inside_suspect", "<i8", role="measured", better="lower"), _col("crossing_pairs", "<i8"),
                         _col("crossing_suspect", "<i8", role="measured", better="lower"),
                         _col("inside_median", "<f8", role="measured"),
                         _col("crossing_median", "<f8", role="measured", headline=True)], switches)
        for rail in (0, 1):
            write_matrix(f, f"sweep/matrices/p2p_bw_rail{rail}", HOSTS,
                         _matrix_values(HOSTS, lambda a, b: rail_speed(a, b, rail)),
                         title=f"p2p_bw rail {rail} (MB/s): row -> column, each direction measured on its own")


def write_mesh(path, hosts, passes, slow, changes):
    """A mesh (fabric-sweep --repeat) of p2p_latency: `passes` passes 10 s apart, every pair each pass (/sweep/pairs
    with its pass), `slow`: pass -> hosts whose pairs are slow in it; `changes`: (pass, change, host, text) rows of
    /sweep/changes (change new or recovered, a node verdict). /sweep/verdicts: the last pass's slow hosts."""
    hosts = list(hosts)
    speed = lambda k, a, b: 500.0 if {a, b} & set(slow.get(k, ())) else 10000.0 + 10 * hosts.index(a) + hosts.index(b)
    with h5py.File(path, "w") as f:
        _root(f, hosts, f"fabric-sweep --metric p2p_latency --repeat {passes} --every 10s --output x.h5")
        f.attrs["repeat"], f.attrs["passes"] = np.int64(passes), np.int64(passes)
        _env(f, hosts)
        pairs = [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]]
        write_table(f, "sweep/pairs", _pair_columns(False, passes=True),
                    [_pair_row(False, k, a, b, 0, "both", _figure("p2p_latency", speed(k, a, b)), metric="p2p_latency",
                               pass_no=k) for k in range(1, passes + 1) for a, b in pairs])
        write_table(f, "sweep/passes", [_col("pass", "<i8", role="key"), _col("started", "S24"),
                                        _col("start_s", "<f8", "s"), _col("wall_s", "<f8", "s")],
                    [(k, f"2026-11-24T06:27:{10 * k:02d}Z", 10.0 * (k - 1), 0.5) for k in range(1, passes + 1)])
        write_table(f, "sweep/changes", [_col("pass", "<i8", role="key"), _col("change", "S16"), _col("kind", "S8"),
                                         _col("metric", "S16"), _col("host_a", "S64"), _col("host_b", "S64"),
                                         _col("text", "S256")],
                    [(k, change, "node", "p2p_latency", host, "", text) for k, change, host, text in changes])
        last = list(slow.get(passes, ()))
        write_table(f, "sweep/nodes", _node_columns(False),
                    [(h, "p2p_latency", 2000.0 if h in last else 100.0, "us", len(hosts) - 1,
                      len(hosts) - 1 if h in last else 0) for h in hosts])
        write_table(f, "sweep/verdicts", _verdict_columns(False),
                    [("p2p_latency", "node", h, "", "all of its pairs suspect") for h in last])
        write_matrix(f, "sweep/matrices/p2p_latency", hosts,
                     _matrix_values(hosts, lambda a, b: _figure("p2p_latency", speed(passes, a, b))), unit="us",
                     better="lower")
