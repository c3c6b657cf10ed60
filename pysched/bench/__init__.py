"""pysched's benchmark comparison: ``python -m pysched.bench``.

Every figure is measured in one process, each competitor in turn on the same
inputs, so ratios hold even when the machine's speed drifts.
"""
