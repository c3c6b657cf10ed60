# Task: one claimed version, as the scheduler hands it out (pysched/_scheduler_py.py's Task).

@cython.final
@cython.freelist(64)  # a next() drain frees each Task before the next claim; pop_due(64) holds 64
cdef class Task:
    """One claimed version of a task: what ``Scheduler.next()`` hands out.

    ``state`` is ``"running"`` until the task is finished through its scheduler
    as ``"completed"``, ``"failed"`` (then ``exception`` holds the error) or
    ``"cancelled"`` (released unstarted).
    ``cancel_requested`` turns true when ``cancel()`` reaches it while it runs;
    stopping is up to the running code. The attributes are read-only.
    """
    cdef readonly object task_id
    cdef uint64_t _version
    cdef readonly double run_at
    cdef readonly int64_t priority
    cdef readonly object fn
    cdef readonly str state
    cdef readonly bint cancel_requested
    cdef readonly object exception
    cdef Py_ssize_t _slot     # its id's slot while running: finishing needs no hash lookup
    cdef bint _in_batch       # set only while complete_many() checks its batch for repeats

    @property
    def version(self):
        """The version number, from 1 per task id."""
        return self._version

    def __repr__(self):
        return (f"<Task {self.task_id!r} v{self._version} {self.state}"
                f" run_at={self.run_at!r} priority={self.priority}>")
