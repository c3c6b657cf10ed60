"""The constants and names that the Cython core and the pure-Python twin share.

They live here, in a module that imports nothing, so that loading the core
does not load the twin: the twins re-export them and state what they mean.
"""

# Scheduler: the states of a task version.
PENDING = "pending"
RUNNING = "running"
CANCELLED = "cancelled"
COMPLETED = "completed"
FAILED = "failed"

# Scheduler: below this many heap entries stale ones are left for the pops to
# drop: rebuilding a tiny heap costs more than it saves.
REBUILD_FLOOR = 64

# StableBoundedPriorityQueue: below this many dead nodes in a heap they are
# left for the roots to drop: compacting a tiny heap costs more than it saves.
COMPACT_FLOOR = 64

# StableBoundedPriorityQueue: why an entry left the queue (QueueEntry.reason).
EVICTED = "evicted"  # an old worst entry made room for a better newcomer
CAPACITY = "capacity"  # the newcomer was refused: full of entries at least as good
QUOTA = "quota"  # the newcomer was refused: its tenant held tenant_limit entries
POPPED = "popped"
REMOVED = "removed"
