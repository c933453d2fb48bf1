"""What one bulk read of an nsys table is, as a value, and the one place its SQL is rendered.

A :class:`ReadPlan` (table, columns, WHERE) is frozen and hashable: the loader (``NsysDb.read``)
and the background prefetch (``loaders/prefetch.py``) both describe a read by its plan, and the
prefetch cache (``loaders/prefetch_store.py``) is keyed by the plan, never by SQL text, so the two
cannot drift apart by a space. :func:`render` turns a plan into its SELECTs (:class:`SelectPlan`).

Pandas- and numpy-free on purpose: ``prefetch`` builds plans before pandas is imported.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Col:
    """One column to read.

    ``kind``: ``int`` (int64; NULL → ``fill``), ``float`` (float64; NULL → NaN), ``text``
    (→ ``nsys_db.Text``; NULL → ``''``), ``isnull`` (bool: the expression is NULL).
    ``expr`` is an SQL expression over the table (a quoted column name by default).
    ``strict`` (``int`` only): text or blob values count as NULL (→ ``fill``) instead of SQLite's
    ``CAST('abc' AS INTEGER) = 0`` — for times, where a silent 0 would be a wrong number.
    """

    name: str
    kind: str
    expr: str = ""
    fill: int = -1
    strict: bool = False

    @property
    def sql(self) -> str:
        return self.expr or f'"{self.name}"'


@dataclass(frozen=True)
class ReadPlan:
    """One bulk read: columns ``cols`` of table ``table`` (its actual name in the file), rows
    matching ``where`` (an SQL condition, '' = all rows; windows and row limits are pushed down
    here). Equal plans render equal SQL, so a plan is the prefetch cache key."""

    table: str
    cols: tuple[Col, ...]
    where: str = ""

    @classmethod
    def of(cls, table: str, cols: Sequence[Col], where: str = "") -> "ReadPlan":
        return cls(table, tuple(cols), where)

    def render(self) -> "SelectPlan":
        return render(self)


@dataclass(frozen=True)
class SelectPlan:
    """The SQL of one read: the type-stable ``sql`` (``ncols`` expressions) and, when some
    columns are plain, the uncast ``fast_sql`` tried first through ADBC (``fast_ncols``
    expressions; ``int_fill``/``float_plain`` mark its plain columns, see ``_plain_sql``)."""

    sql: str
    ncols: int
    fast_sql: str | None
    fast_ncols: int
    int_fill: dict[int, int]
    float_plain: frozenset[int]

    @property
    def first_sql(self) -> str:
        """What ``NsysDb.read`` runs first through ADBC (and so what the prefetch reads)."""
        return self.fast_sql or self.sql


def and_where(*clauses: str) -> str:
    """Join non-empty SQL conditions with AND."""
    return " AND ".join(f"({c})" for c in clauses if c)


def _expressions(c: Col) -> list[str]:
    """Type-stable, NULL-free SELECT expressions of one column (two for a float: value, NULL flag)."""
    if c.kind == "int" and c.strict:
        return [f"CASE typeof({c.sql}) WHEN 'integer' THEN {c.sql} WHEN 'real' THEN "
                f"CAST({c.sql} AS INTEGER) ELSE {int(c.fill)} END"]
    if c.kind == "int":
        return [f"ifnull(CAST({c.sql} AS INTEGER), {int(c.fill)})"]
    if c.kind == "float":
        return [f"ifnull(CAST({c.sql} AS REAL), 0.0)", f"({c.sql} IS NULL)"]
    if c.kind == "text":
        return [f"ifnull(CAST({c.sql} AS BLOB), x'')"]
    if c.kind == "isnull":
        return [f"({c.sql} IS NULL)"]
    raise ValueError(c.kind)  # pragma: no cover - programming error


def render(plan: ReadPlan) -> SelectPlan:
    """The SELECTs of ``plan`` (see ``NsysDb.read``); pure — the only place read SQL is built."""
    exprs = [e for c in plan.cols for e in _expressions(c)]
    tail = f' FROM "{plan.table}"' + (f" WHERE {plan.where}" if plan.where else "")
    fast, int_fill, float_plain = _plain_sql(plan.cols, exprs)
    fast_sql = f'SELECT {", ".join(fast)}{tail}' if int_fill or float_plain else None
    return SelectPlan(f'SELECT {", ".join(exprs)}{tail}', len(exprs), fast_sql, len(fast),
                      int_fill, float_plain)


def select_plan(actual: str, cols: Sequence[Col], where: str = "") -> SelectPlan:
    """``render(ReadPlan.of(actual, cols, where))``."""
    return render(ReadPlan.of(actual, cols, where))


def _plain_sql(cols: Sequence[Col], exprs: list[str]
               ) -> tuple[list[str], dict[int, int], frozenset[int]]:
    """The fast SELECT list (perf, see ``NsysDb.read``): each plain column (no custom
    expression) uncast — integers keep one expression, floats lose their ``IS NULL`` companion.
    Returns the expressions, fast index → NULL fill of the plain integers, and the fast indices
    of the plain floats."""
    fast: list[str] = []
    int_fill: dict[int, int] = {}
    floats: set[int] = set()
    i = 0
    for c in cols:
        if c.kind == "int" and not c.expr:
            int_fill[len(fast)] = int(c.fill)
            fast.append(c.sql)
        elif c.kind == "float" and not c.expr:
            floats.add(len(fast))
            fast.append(c.sql)
        else:
            fast.extend(exprs[i:i + (2 if c.kind == "float" else 1)])
        i += 2 if c.kind == "float" else 1
    return fast, int_fill, frozenset(floats)
