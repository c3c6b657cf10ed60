"""The SQL of the read layer (``listing.py``): one named-statement object per database.

``ListingSQL(dialect, table)`` holds every statement the listing and the
steering modules send, for one table, with its identifiers quoted. The text
is written once, with ``:name`` parameters and a few dialect fragments;
``SQLITE`` and ``POSTGRES`` are the two dialects. Nothing here runs SQL.

Indexes: every page of tasks is a keyset scan ``(run_at, task_id) >
(:run_at, :task_id)`` behind equality on ``state`` (and ``queue`` or
``ref``), so each is a range scan of one index of the form
``(equalities..., state, run_at, task_id)``, whatever the table's size. A
page across several states is one such scan per state present, merged.
Those indexes (``LISTING_INDEXES``) cost every write that changes a row's
state a few index entries, and only a reader needs them: the stores do not
make them, the read layer builds them before its first page of a table
(``Listing``). The finished rows' index by finishing time (``FINISHED_AT``),
which retention reads, is the stores' own (``store_index_statements``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._sql import quote

__all__ = ["FILTER_COLUMNS", "FINISHED", "FINISHED_AT", "LISTING_INDEXES", "POSTGRES",
           "RETIRED_INDEXES", "SQLITE", "TASK_COLUMNS", "TASK_PAGE_COLUMNS", "Dialect",
           "ListingSQL", "index_statements", "store_index_statements"]

# The columns a task's description reads, in this order.
TASK_COLUMNS = ("task_id", "version", "state", "run_at", "priority", "ref", "args", "attempts",
                "seq", "fmt", "error", "lease_owner", "lease_token", "lease_expires", "queue",
                "updated_at")
# The columns of one line of a page of tasks; ``error`` is its first 300 characters.
TASK_PAGE_COLUMNS = ("task_id", "version", "state", "run_at", "priority", "ref", "queue",
                     "attempts", "updated_at", "lease_owner", "lease_expires", "error")
# Filters by equality that have an index of their own (the column leads it).
FILTER_COLUMNS = ("queue", "ref")
SERIES_COLUMNS = ("series_id", "generation", "state", "spec", "ref", "args", "priority", "queue",
                  "created", "floor")
FIRE_COLUMNS = ("fire_time", "state", "attempts", "lease_owner", "lease_expires")
FINAL_OUTCOMES = ("completed", "failed", "error")
# Rows waiting for a retry: pending again with the error of the attempt that failed. A
# literal, so that the partial index that holds only them serves every plan.
RETRYING = "state = 'pending' AND error IS NOT NULL"
# The finished rows, and when each was finished (rows written before ``updated_at``
# existed count by ``run_at``). Literals, written alike in the partial index and in each
# statement it serves: SQLite uses a partial index only for a query that repeats its
# WHERE term, and either database an expression index only for the same expression.
# Equalities joined by OR, not IN: SQLite evaluates a partial index's WHERE on every row
# a statement writes, and builds an IN list's lookup table afresh each time, which cost
# a task more than all of the index's entries.
FINISHED = ("(state = 'cancelled' OR state = 'completed' OR state = 'error'"
            " OR state = 'failed')")
FINISHED_AT = "coalesce(updated_at, run_at)"
# The stores' own index of this module's: retention and the last hour's outcomes read
# the finished rows by finishing time. Name suffix: (columns) and WHERE.
STORE_INDEXES = {"_finished": f"({FINISHED_AT}) WHERE {FINISHED}"}
# The indexes only the listing's pages and counts read: built by the read layer before
# its first page of a table (``Listing``), never by a store.
LISTING_INDEXES = {
    "_list_state": "(state, run_at, task_id)",
    **{f"_list_{column}": f"({column}, state, run_at, task_id)" for column in FILTER_COLUMNS},
    # Pending again after a failure, its error kept: few rows, read by the failed page.
    "_list_retrying": f"(run_at, task_id) WHERE {RETRYING}",
}
# Indexes an older pysched made that these replace: dropped where found. (The finished
# rows' index of an IN list: a query written with OR does not match its WHERE.)
RETIRED_INDEXES = ("_list_updated", "_list_finished")


@dataclass(frozen=True)
class Dialect:
    """What differs between the databases: parameter style and a few expressions."""

    name: str
    pyformat: bool  # psycopg's %(name)s rather than :name
    # Whole 5-minute buckets since ``:since`` of ``updated_at``, truncated toward zero.
    bucket: str
    # The columns of ``table`` (one parameter, ``:table``): one row per column, its name first.
    columns: str
    # The indexes of ``:table``: (name, whether it is ready for use) per index.
    indexes: str
    # What builds an index beside the writers: PostgreSQL's plain CREATE INDEX would hold
    # every write to the table until it is built; CONCURRENTLY lets them run meanwhile.
    create_index: str = "CREATE INDEX"
    # The planner's estimate of ``:table``'s rows and of its states' shares, as
    # (rows, [state, ...], [share, ...]) from the statistics ANALYZE keeps; "" where the
    # database keeps none per value.
    state_estimate: str = ""

    def render(self, sql: str) -> str:
        """``sql`` with its ``:name`` parameters in this dialect's style."""
        if not self.pyformat:
            return sql
        return re.sub(r"(?<![:\w]):([a-z_][a-z0-9_]*)", r"%(\1)s", sql.replace("%", "%%"))


SQLITE = Dialect("sqlite", pyformat=False,
                 bucket="CAST((updated_at - :since) / 300 AS INTEGER)",
                 columns="SELECT name FROM pragma_table_info(:table)",
                 indexes="SELECT name, 1 FROM sqlite_master WHERE type = 'index'"
                         " AND tbl_name = :table")
POSTGRES = Dialect("postgres", pyformat=True,
                   bucket="CAST(floor((updated_at - :since) / 300) AS integer)",
                   columns="SELECT column_name FROM information_schema.columns"
                           " WHERE table_schema = current_schema() AND table_name = :table",
                   # An index CONCURRENTLY being built, or whose build failed, is not valid.
                   indexes="SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c"
                           " ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(:table)",
                   create_index="CREATE INDEX CONCURRENTLY",
                   state_estimate="SELECT c.reltuples, CAST(CAST(s.most_common_vals AS text)"
                                  " AS text[]), s.most_common_freqs FROM pg_class c"
                                  " LEFT JOIN pg_stats s ON s.schemaname = current_schema()"
                                  " AND s.tablename = c.relname AND s.attname = 'state'"
                                  " WHERE c.oid = to_regclass(:table)")


def index_statements(table: str, indexes: dict[str, str], create: str = "CREATE INDEX"
                     ) -> list[str]:
    """``create`` (``CREATE INDEX [CONCURRENTLY]``) ``IF NOT EXISTS`` of each of ``indexes``
    (name suffix: definition) on ``table``, in SQL both databases accept."""
    t = quote(table)
    return [f"{create} IF NOT EXISTS {quote(table + suffix)} ON {t} {definition}"
            for suffix, definition in indexes.items()]


def store_index_statements(table: str) -> list[str]:
    """The indexes of this module the stores make beside their own (``STORE_INDEXES``)."""
    return index_statements(table, STORE_INDEXES)


class ListingSQL:
    """Every statement of the read layer for ``table`` in ``dialect``, rendered once."""

    def __init__(self, dialect: Dialect, table: str) -> None:
        self.dialect = dialect
        self.table = table
        self.series_table = f"{table}_series"
        self.fires_table = f"{table}_fires"
        self.notes_table = f"{table}_series_notes"
        t, s, f = quote(table), quote(self.series_table), quote(self.fires_table)
        n = quote(self.notes_table)
        r = dialect.render
        self.columns = r(dialect.columns)
        self.indexes = r(dialect.indexes)
        # The listing's indexes by name, each with the statement that builds it.
        self.listing_indexes = dict(zip(
            (table + suffix for suffix in LISTING_INDEXES),
            index_statements(table, LISTING_INDEXES, dialect.create_index), strict=True))
        self.task = r(f"SELECT {', '.join(TASK_COLUMNS)} FROM {t} WHERE task_id = :task_id")
        self.state_estimate = r(dialect.state_estimate) if dialect.state_estimate else ""
        outcomes = ", ".join(f"'{state}'" for state in FINAL_OUTCOMES)
        # Due -> finished: the store keeps no start time, so lateness and run time together.
        # By 5-minute bucket and state: the sums make each state's mean, one scan for both,
        # of the finished rows' index from ``:since`` on.
        self.finished = r(f"SELECT {dialect.bucket}, state, count(*),"
                          f" sum(updated_at - run_at), max(updated_at - run_at) FROM {t}"
                          f" WHERE {FINISHED} AND {FINISHED_AT} >= :since"
                          f" AND updated_at IS NOT NULL AND state IN ({outcomes})"
                          " GROUP BY 1, 2")
        self.task_leases = r(f"SELECT lease_owner, count(*), max(lease_expires) FROM {t}"
                             " WHERE lease_owner IS NOT NULL GROUP BY lease_owner")
        self.fire_leases = r(f"SELECT lease_owner, count(*), max(lease_expires) FROM {f}"
                             " WHERE state = 'running' AND lease_owner IS NOT NULL"
                             " GROUP BY lease_owner")
        self.series_counts = r(f"SELECT state, count(*) FROM {s} GROUP BY state")
        last = (f"FROM {f} x WHERE x.series_id = s.series_id AND x.generation = s.generation")
        series_cols = ", ".join(f"s.{c}" for c in SERIES_COLUMNS)
        # The newest fire time claimed and its state, by the primary key, newest first.
        summary = (f"{series_cols}, (SELECT max(x.fire_time) {last}),"
                   f" (SELECT x.state {last} ORDER BY x.fire_time DESC LIMIT 1)")
        self.series_page = r(f"SELECT {summary} FROM {s} s WHERE s.series_id > :after"
                             " AND (:all = 1 OR s.state <> 'cancelled')"
                             " ORDER BY s.series_id LIMIT :limit")
        self.series_one = r(f"SELECT {summary} FROM {s} s WHERE s.series_id = :series_id")
        self.fires = r(f"SELECT {', '.join(FIRE_COLUMNS)} FROM {f} WHERE series_id = :series_id"
                       " AND generation = :generation ORDER BY fire_time DESC LIMIT :limit")
        self.fire_counts = r(f"SELECT state, count(*) FROM {f} WHERE series_id = :series_id"
                             " AND generation = :generation GROUP BY state")
        self.note = r(f"SELECT generation, note, written FROM {n} WHERE series_id = :series_id")
        self.notes_of = r(f"SELECT series_id, generation, note FROM {n}"
                          " WHERE series_id > :after AND series_id <= :last")
        self.create_notes = (f"CREATE TABLE IF NOT EXISTS {n} (series_id text PRIMARY KEY,"
                             " generation bigint NOT NULL, note text NOT NULL,"
                             " written double precision NOT NULL)")
        self.put_note = r(f"INSERT INTO {n} (series_id, generation, note, written) VALUES"
                          " (:series_id, :generation, :note, :written) ON CONFLICT (series_id)"
                          " DO UPDATE SET generation = excluded.generation,"
                          " note = excluded.note, written = excluded.written")
        self.drop_note = r(f"DELETE FROM {n} WHERE series_id = :series_id")
        self._t = t
        self._page_columns = ", ".join("substr(error, 1, 300) AS error" if c == "error" else c
                                       for c in TASK_PAGE_COLUMNS)

    def states(self, equal: Sequence[str]) -> str:
        """The distinct states of the rows with ``column = :column`` for each of ``equal``
        (of ``FILTER_COLUMNS``): one index probe per state found (a loose index scan)."""
        return self.distinct("state", equal)

    def distinct(self, column: str, equal: Sequence[str] = ()) -> str:
        """The distinct values of ``column`` (``state``, or one of ``FILTER_COLUMNS``,
        which leads an index) among the rows with each of ``equal`` equal to its
        parameter, at most ``:limit``: one index probe per value (a loose index scan)."""
        if column not in ("state", *FILTER_COLUMNS):
            raise ValueError(f"no index leads with {column!r}")
        where = "".join(f" AND {c} = :{c}" for c in equal)
        t = self._t
        return self.dialect.render(
            f"WITH RECURSIVE found(v) AS (SELECT min({column}) FROM {t} WHERE 1 = 1{where}"
            f" UNION ALL SELECT (SELECT min({column}) FROM {t} WHERE {column} > found.v{where})"
            " FROM found WHERE found.v IS NOT NULL)"
            " SELECT v FROM found WHERE v IS NOT NULL LIMIT :limit")

    def capped_counts(self, groups: int, by_queue: bool) -> str:
        """For each group i (``:state{i}``, and ``:queue{i}`` if ``by_queue``), its number
        of rows counted up to ``:cap``: each count reads at most ``:cap`` index entries, so
        the statement costs O(groups * cap) however large the table."""
        rows = []
        for i in range(groups):
            where = f"state = :state{i}" + (f" AND queue = :queue{i}" if by_queue else "")
            # In the index's order: a planner that takes the rows of a state for spread
            # evenly would otherwise scan the table for the first ``:cap`` of them.
            rows.append(f"SELECT {i}, (SELECT count(*) FROM (SELECT 1 FROM {self._t}"
                        f" WHERE {where} ORDER BY run_at, task_id LIMIT :cap) AS c{i})")
        return self.dialect.render(" UNION ALL ".join(rows))

    def retrying_page(self, after: bool) -> str:
        """A page of the tasks waiting for a retry (``RETRYING``), next due first, after the
        cursor ``(:run_at, :task_id)`` if ``after``; ``:limit`` rows."""
        where = " AND (run_at, task_id) > (:run_at, :task_id)" if after else ""
        return self.dialect.render(f"SELECT {self._page_columns} FROM {self._t} WHERE"
                                   f" {RETRYING}{where} ORDER BY run_at, task_id LIMIT :limit")

    def tasks_page(self, equal: Sequence[str], states: int, after: bool, desc: bool) -> str:
        """A page of tasks in ``(run_at, task_id)`` order (``desc``: newest first), of the
        states ``:state0`` .. ``:state{states-1}``, each column of ``equal`` equal to its
        parameter, after the cursor ``(:run_at, :task_id)`` if ``after``; ``:limit`` rows."""
        if not states > 0:
            raise ValueError("a page of tasks reads at least one state")
        for column in equal:
            if column not in FILTER_COLUMNS:
                raise ValueError(f"no index leads with {column!r}")
        cols = self._page_columns
        where = "".join(f" AND {column} = :{column}" for column in equal)
        if after:
            where += f" AND (run_at, task_id) {'<' if desc else '>'} (:run_at, :task_id)"
        order = " DESC" if desc else ""
        by = f" ORDER BY run_at{order}, task_id{order} LIMIT :limit"
        branches = [f"SELECT {cols} FROM {self._t} WHERE state = :state{i}{where}{by}"
                    for i in range(states)]
        if states == 1:
            return self.dialect.render(branches[0])
        # Each branch is one index range scan; the merge sorts at most states * limit rows.
        merged = " UNION ALL ".join(f"SELECT * FROM ({b}) AS b{i}" for i, b in enumerate(branches))
        return self.dialect.render(merged + by)
