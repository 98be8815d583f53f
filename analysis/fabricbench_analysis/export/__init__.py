"""export: a run written out for people and other programs: an Excel workbook (excel.py), CSV files (csv_dir.py), JSON
lines (json_lines.py), the HTML page (html.py), Prometheus' text format for node_exporter (prometheus.py, `fabric-report
metrics`). Imports load, judge and draw; only cli and the package's __init__ import it."""
