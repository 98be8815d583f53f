"""perftest's output (ib_write/read/send/atomic _bw and _lat): the text either side prints (its settings block, then
the result table, MB/sec = MiB/s or Gb/sec with --report_gbits) and the JSON of --out_json. Rows go to /results/verbs
as fabric-verbs writes them (its formulas are perftest's). A row is checked as perftest computes it (MsgRate =
bandwidth / size); a figure of inf or 0.00, which perftest prints when its clock calibration failed, is refused: it is
not a measurement."""
from __future__ import annotations

import math
import re

from . import jsondoc
from .imported import Imported
from .lines import column_names, read_lines
from .values import figure, whole

_TITLE = re.compile(r"^(RDMA_Write|RDMA_Read|Send|Atomic \S+|Atomic)\s+(?:Bidirectional\s+)?(BW|Latency|Lat)\s+Test",
                    re.I)
# perftest's warning when its timestamps drift (seen under emulation), glued to the end of the last row.
_GLUED = re.compile(r"Correlation coefficient r\^2: \S+ < \S+\s*$")
_TESTS = {"rdma_write": "write", "rdma_read": "read", "send": "send", "atomic": "atomic"}
_SETTING = re.compile(r"([A-Za-z][A-Za-z .*]+?)\s*:\s*(\S+)")
# perftest's column labels -> the suite's columns
LABELS = {"#bytes": "bytes", "#iterations": "iterations", "BW peak[MB/sec]": "bw_peak_mibps",
          "BW average[MB/sec]": "bw_avg_mibps", "BW peak[MiB/sec]": "bw_peak_mibps",
          "BW average[MiB/sec]": "bw_avg_mibps", "BW peak[Gb/sec]": "bw_peak_gbitps",
          "BW average[Gb/sec]": "bw_avg_gbitps", "MsgRate[Mpps]": "msg_rate_mps", "t_min[usec]": "time_us_min",
          "t_max[usec]": "time_us_max", "t_typical[usec]": "latency_us", "t_avg[usec]": "time_us_mean",
          "t_stdev[usec]": "time_us_stddev", "99% percentile[usec]": "time_us_p99",
          "99.9% percentile[usec]": "time_us_p999"}


def signature(line) -> bool:
    """A line only perftest prints."""
    return bool(_TITLE.match(line.stripped)) or ("#bytes" in line.text and "#iterations" in line.text)


def _test(title) -> str:
    verb = _TESTS.get(title.group(1).split()[0].lower(), title.group(1).lower())
    return f"{verb}_{'bw' if title.group(2).upper() == 'BW' else 'lat'}"


def check_row(run: Imported, line: int, row: dict) -> None:
    for name, value in row.items():
        if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
            raise run.refuse(line, f"{name} is {value}: perftest's clock calibration failed (not a measurement; "
                                   "run it again)")
    bw = row.get("bw_avg_mibps", float("nan")) * 1048576 / 1e6
    if math.isnan(bw):
        bw = row.get("bw_avg_gbitps", float("nan")) * 1e9 / 8 / 1e6
    if not math.isnan(bw):
        if bw == 0:
            raise run.refuse(line, "bandwidth 0.00: perftest's clock calibration failed (not a measurement; run it "
                                   "again)")
        rate = row.get("msg_rate_mps")
        if rate is not None and row["bytes"] > 0:
            want = bw / row["bytes"]
            # The bandwidth is printed to 2 decimals, MsgRate to 6: at small sizes the bandwidth's rounding decides.
            to_bytes = 1048576 if "bw_avg_mibps" in row else 1e9 / 8
            if abs(rate - want) > 2e-6 + 0.01 * want + 0.005 * to_bytes / 1e6 / row["bytes"]:
                raise run.refuse(line, f"MsgRate {rate} Mpps is not bandwidth / size ({want:.6f}): not a row perftest "
                                       "wrote")


def read_text(path, run: Imported, start=None, other=lambda line: False) -> Imported:
    """One perftest test's text, from the line `start`; it ends where another test's (or tool's) output begins."""
    run.table = "results/verbs"
    test, settings, columns = "", {}, None
    for x in read_lines(path, start):
        s = x.stripped
        if not s or set(s) <= {"-"}:
            continue
        if run.rows and (_TITLE.match(s) or other(x)):
            run.next_run = x  # the next test's output: read as a run of its own
            break
        m = _TITLE.match(s)
        if m:
            if test:
                raise run.refuse(x.number, "a second perftest test in one file; import each from a file of its own")
            test = _test(m)
            continue
        if "#bytes" in s:
            columns = column_names(s, LABELS)
            continue
        if columns is None:
            for key, value in _SETTING.findall(x.text):
                settings[key.strip()] = value
            continue
        glued = _GLUED.search(s)
        if glued:
            run.notes.append(f"perftest warned: {glued.group(0).strip()} (its clock; the row before it is kept)")
            s = s[:glued.start()]
        if s == "Can't produce a report":  # perftest gave up on the rest of its sizes (after a clock warning)
            run.stopped = f"perftest stopped at line {x.number}: 'Can't produce a report' (the sizes after it were " \
                          "not run)"
            break
        words = s.split()
        if not words[0].isdigit():
            if s.startswith(("local address", "remote address", "GID")):
                continue
            raise run.refuse(x.number, f"not a row of perftest's table: '{s[:80]}'")
        if len(words) != len(columns):
            raise run.refuse(x.number, f"not a row of perftest's table ({len(words)} fields, {len(columns)} wanted): "
                                       f"'{s[:80]}'")
        row = _row(run, x.number, test, settings, dict(zip(columns, words)))
        check_row(run, x.number, row)
        run.rows.append(row)
    if not test:
        raise run.refuse(0, "no perftest title ('RDMA_Write BW Test', ...)")
    if not run.rows:
        raise run.refuse(0, "no row of perftest's result table (a run stopped before its result, or the side of a "
                            "test that prints none: import the other side's output)")
    return run


def _int(text, default=-1):
    m = re.match(r"-?\d+", str(text))
    return int(m.group()) if m else default


def _row(run, line, test, settings, values) -> dict:
    """One row of /results/verbs from perftest's settings block and one line (or JSON object) of its table."""
    row = {"test": test, "memory": "host", "pairs": 1, "qps": _int(settings.get("Number of qps", 1), 1),
           "tx_depth": _int(settings.get("TX depth", -1)), "mtu": _int(settings.get("Mtu", -1)),
           "device": settings.get("Device", ""), "port": _int(settings.get("ib_port", -1)),
           "link_layer": settings.get("Link type", ""), "gid_index": _int(settings.get("GID index", -1))}
    for name in ("qps", "tx_depth", "mtu", "port", "gid_index"):
        whole(run, line, f"the setting {name}", row[name])
    for name, value in values.items():
        row[name] = whole(run, line, name, value) if name in ("bytes", "iterations") else \
            figure(run, line, name, value)
    return row


_JSON_TEST = re.compile(r"(RDMA_Write|RDMA_Read|Send|Atomic)_(?:\w+_)?(BW|Latency|Lat)_Test")
# --out_json's result keys (perftest_parameters.h REPORT_FMT_JSON and the latency report) as the suite's columns;
# BW_peak and BW_average are MiB/s, or Gb/s with --report_gbits, which the JSON does not record (see _bandwidth_unit).
_JSON = {"MsgSize": "bytes", "n_iterations": "iterations", "MsgRate": "msg_rate_mps", "t_min": "time_us_min",
         "t_max": "time_us_max", "t_typical": "latency_us", "t_avg": "time_us_mean", "t_stdev": "time_us_stddev",
         "percentile_99": "time_us_p99", "percentile_99.9": "time_us_p999"}
_JSON_SETTINGS = {"Number_of_qps": "Number of qps", "Mtu": "Mtu", "Link_type": "Link type", "GID_index": "GID index",
                  "Device": "Device", "TX_depth": "TX depth"}


def _bandwidth_unit(run: Imported, r: dict) -> str:
    """MiB/s or Gb/s: the one for which MsgRate = bandwidth / size, as perftest computes it (the two differ 119x)."""
    size = whole(run, 0, "results.MsgSize", r.get("MsgSize"))
    rate, avg = (figure(run, 0, f"results.{k}", r.get(k)) for k in ("MsgRate", "BW_average"))
    if size <= 0:
        raise run.refuse(0, f"perftest JSON: MsgSize {size}: not a message size (bytes above 0 wanted)")
    fits = []
    for unit, to_bytes in (("mibps", 1048576.0), ("gbitps", 1e9 / 8)):
        want = avg * to_bytes / size / 1e6
        if abs(rate - want) <= 1e-6 + 0.01 * want:
            fits.append(unit)
    if len(fits) != 1:
        raise run.refuse(0, f"perftest JSON: BW_average {avg} with MsgRate {rate} at {size} B fits "
                            f"{'both' if fits else 'neither of'} MiB/s and Gb/s (its JSON does not say which; "
                            "--report_gbits makes it Gb/s): import the text output")
    return fits[0]


def read_json(path, run: Imported) -> Imported:
    """perftest's --out_json file (one test, one size: with -a it holds the last size only, as perftest writes it)."""
    run.table = "results/verbs"
    doc = jsondoc.load(path, run, "perftest wrote with --out_json (two processes writing one file interleave "
                                  "their objects: give each side its own --out_json_file)")
    info = doc.get("test_info") if isinstance(doc, dict) else None
    result = doc.get("results") if isinstance(doc, dict) else None
    m = _JSON_TEST.match(str(info.get("test", ""))) if isinstance(info, dict) else None
    if not m or not isinstance(result, dict):
        raise run.refuse(0, "not the JSON perftest writes with --out_json (test_info.test and results wanted)")
    test = f"{_TESTS[m.group(1).lower()]}_{'bw' if m.group(2) == 'BW' else 'lat'}"
    settings = {name: str(info[key])[:64] for key, name in _JSON_SETTINGS.items() if key in info}
    values = {_JSON[k]: v for k, v in result.items() if k in _JSON}
    if "BW_average" in result:
        unit = _bandwidth_unit(run, result)
        values[f"bw_avg_{unit}"], values[f"bw_peak_{unit}"] = result["BW_average"], result.get("BW_peak")
    row = _row(run, 0, test, settings, values)
    check_row(run, 0, row)
    run.rows.append(row)
    run.notes.append("perftest's JSON holds one size (with -a, the last): the text output has every size")
    return run
