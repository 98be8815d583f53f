"""fabric-report import: other tools' output (nccl-tests, OSU, perftest) as fabricbench files, so that every
judgement, baseline, comparison, plot, page and workbook of fabric-report works on them unchanged (docs/import.md).
The tool is told from the file's own lines (or --tool); each source becomes one file; several sources, or a folder of
them, become one folder of files and one table comparing their headline figures."""
