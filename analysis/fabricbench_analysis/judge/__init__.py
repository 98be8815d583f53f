"""judge: what a run says: the answer-first verdicts (answer.py), whether a sweep tested what it planned
(coverage.py), two runs side by side and baselines (compare.py), a sweep's rails, NICs and leaf switches (rails.py).
Imports load only."""
