"""Whether a sweep tested what it planned (coverage_gap): a sweep whose budget ran out, or that left hosts untested,
is no pass whatever its verdicts say. The answer leads with it (answer.py) and `fabric-report metrics` exports it
(export/prometheus.py: sweep_coverage_complete)."""
from __future__ import annotations

import re

from . import rails


def _count(attrs, name):
    """An integer root attribute, None where absent or unreadable."""
    try:
        return int(attrs[name])
    except (KeyError, TypeError, ValueError):
        return None


def coverage_gap(run) -> str:
    """Why a sweep is no pass whatever its verdicts say, '' when it tested what it planned: the counts of its root
    attributes where `coverage_complete` is 0 or fewer hosts were tested than planned ('0 of 28 pairs and 0 of 8 hosts
    tested', with the cause the untested verdicts give, '(--budget 2s)'), else verdicts of kind untested (the hosts
    they name, else the first one's reason)."""
    a = run.attrs
    planned, tested = _count(a, "hosts_planned"), _count(a, "hosts_tested")
    short = _count(a, "coverage_complete") == 0 or (None not in (planned, tested) and tested < planned)
    if short and None not in (planned, tested):
        pairs_planned, pairs_tested = _count(a, "pairs_planned"), _count(a, "pairs_tested")
        pairs = f"{pairs_tested} of {pairs_planned} pairs and " if None not in (pairs_planned, pairs_tested) else ""
        cause = re.search(r"\((--budget [^)]*)\)", " ".join(str(r.get("reason", "")) for r in rails.untested_rows(run)))
        return f"{pairs}{tested} of {planned} hosts tested" + (f" ({cause.group(1)})" if cause else "")
    untested, rows = rails.untested_hosts(run), rails.untested_rows(run)
    if untested:
        hosts = [h for h in str(a.get("hosts", "")).split(",") if h]
        return f"{len(untested)} of {len(hosts)} hosts not tested"
    if rows:
        return str(rows[0].get("reason", "")) or "a verdict of kind untested"
    return ""
