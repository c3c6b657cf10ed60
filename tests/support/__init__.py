"""Helpers shared by the test folders (importable as ``support.*``: pyproject's pytest
``pythonpath`` puts tests/ on sys.path). No test module imports another test module."""
