"""export: a run written out for people and other programs: the HTML page (html.py) and Prometheus' text format for
node_exporter's textfile collector (prometheus.py, `fabric-report metrics`). Imports load, judge and draw; only cli
and the package's __init__ import it."""
