"""Differential fuzzing of the core Scheduler: shared by the atheris target and the test suite."""
