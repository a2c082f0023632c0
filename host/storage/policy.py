"""What guest SQL may do in its actor's database: the authorizer's rules, the names it may
never use, and the limits on each connection.

The rules, and why each:
- **Nothing of the guest's runs inside a host statement.** The host's statements run with
  the guest rules off, so anything of the guest's that SQLite could run inside one would
  run with the host's rights. The guest can make nothing that could: no TEMP object of any
  kind (a TEMP trigger may sit on a `main` table, a TEMP view shadows a `main` name), and
  no name of the host's. And should a host statement still reach a trigger, everything
  the trigger does is denied (`host_rule`): the host's tables have no triggers of their
  own.
- **`_wk_host_*` is the host's.** The authorizer denies every operation on a name with
  that prefix it is shown (read, write, create, drop, index, trigger on). It is not shown
  every name: not the new name of `ALTER TABLE ... RENAME TO`, nor a foreign key's
  parent, nor the tables a trigger's body or a view will touch. So a script that changes
  the schema (any CREATE, DROP or ALTER) is refused whole if its text holds the prefix in
  any case: each of those spells the name out, and SQLite's identifiers fold ASCII case
  only. (Even a quoted string counts: SQLite takes `'name'` as an identifier where one
  is expected.) Queries may still mention the prefix, to leave the host's tables out of
  a listing. `_wk_wf_*` is the guest SDK's by convention only: the SDK makes those
  tables with ordinary guest SQL, so the host does not enforce it. The automatic index
  of a host table (`sqlite_autoindex__wk_host_meta_1`) is a host name too: REINDEX and
  the index pragmas name only the index.
- **Nothing of the host's storage either.** `dbstat` walks every b-tree of the file and
  gives each page's table, number, cells and payload sizes: the host's tables' too, and
  the authorizer, shown only its columns, cannot keep their rows out. So the module is
  dropped from the connection (`apply_limits`): no `dbstat`, no `dbstat('main', 1)`, no
  virtual table over it, one made earlier included. The host's schema itself (names,
  definitions, root pages in `sqlite_schema`, `PRAGMA table_list`) is the template every
  actor starts from, and stays visible.
- **Nothing outside the file:** no ATTACH (nor VACUUM INTO), no extension loading, and no
  PRAGMA that weakens durability, changes where temporary data goes, or reaches outside
  the file.
- **Limits** (`apply_limits`, which drops the module above too): a value (string or
  blob) is at most the value cap, a statement's text at most SQL_MAX_BYTES, a prepared
  statement at most VDBE_MAX_OPS instructions, and SQLite starts no helper threads.
  Temporary data (sorts, materialised subqueries, transient indexes) stays in memory
  (`temp_store=MEMORY`), where it counts against the process-wide heap limit
  (`set_heap_limit`) instead of filling a deleted file in the system's temporary
  directory.
"""

from __future__ import annotations

import apsw

HOST_PREFIX = "_wk_host_"

# Pragmas a guest may use; everything else is denied. Info pragmas take a table or index
# name as their argument; the settable ones are harmless to durability and confinement;
# the read-only ones are allowed only without an argument (with one, they would set).
_INFO_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
})
_SET_PRAGMAS = frozenset({
    "user_version", "application_id", "foreign_keys", "defer_foreign_keys", "recursive_triggers",
})
_READ_ONLY_PRAGMAS = frozenset({
    "page_count", "page_size", "freelist_count", "data_version", "compile_options",
    "collation_list", "function_list", "encoding",
})
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
# Virtual table modules an actor's connection keeps: every one SQLite registers but those
# that read the file's storage (see the module's docstring).
_DENIED_MODULES = frozenset({"dbstat"})
_KEPT_MODULES = tuple(
    name for (name,) in apsw.Connection(":memory:").execute("PRAGMA module_list")
    if name not in _DENIED_MODULES)
# The automatic index SQLite makes for a host table's key, named after the table.
_HOST_AUTOINDEX = "sqlite_autoindex_" + HOST_PREFIX
_TEMP_OPS = frozenset({
    apsw.SQLITE_CREATE_TEMP_INDEX, apsw.SQLITE_CREATE_TEMP_TABLE,
    apsw.SQLITE_CREATE_TEMP_TRIGGER, apsw.SQLITE_CREATE_TEMP_VIEW,
    apsw.SQLITE_DROP_TEMP_INDEX, apsw.SQLITE_DROP_TEMP_TABLE,
    apsw.SQLITE_DROP_TEMP_TRIGGER, apsw.SQLITE_DROP_TEMP_VIEW,
})
# The temp schema's own table: read and rewritten by SQLite's nested statements of an
# `ALTER TABLE ... RENAME`, which look for TEMP objects that name the table. With no TEMP
# object allowed, it is always empty.
_TEMP_SCHEMA_TABLES = frozenset({"sqlite_temp_master", "sqlite_temp_schema"})

# The largest string or blob a statement may make, unless the host says otherwise
# (`--db-max-value-mb`). A workflow's journal loads as one value: a run's recorded
# results together must fit.
DEFAULT_MAX_VALUE_BYTES = 32 << 20
SQL_MAX_BYTES = 1 << 20
VDBE_MAX_OPS = 250_000


_SCHEMA_CHANGES = frozenset(
    getattr(apsw, name) for name in dir(apsw)
    if name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_")) or name == "SQLITE_ALTER_TABLE")


# A script may hold any number of statements, each under SQL_MAX_BYTES: its text is
# searched a slice at a time, so the GIL changes hands between slices and no copy of a
# guest-sized script is made at once.
_SEARCH_SLICE = 1 << 20


def names_host(sql: str) -> bool:
    """Whether a guest script's text holds the host's prefix, in any case."""
    if len(sql) <= _SEARCH_SLICE:
        return HOST_PREFIX in sql.lower()
    # Slices overlap by the prefix's length less one, so a prefix across two is seen:
    # lowering never makes a character shorter, so one spans at most that many characters.
    overlap = len(HOST_PREFIX) - 1
    return any(HOST_PREFIX in sql[at:at + _SEARCH_SLICE + overlap].lower()
               for at in range(0, len(sql), _SEARCH_SLICE))


def is_host_name(name: str) -> bool:
    """Whether a table, index, trigger or view name the authorizer is shown is the host's."""
    lower = name.lower()
    return lower.startswith(HOST_PREFIX) or lower.startswith(_HOST_AUTOINDEX)


def guest_rule(op: int, p1: str | None, p2: str | None, db: str | None,
               script_names_host: bool) -> int:
    """The authorizer's answer for an operation of guest SQL, whose script's text holds
    the host's prefix if `script_names_host`."""
    if op in (apsw.SQLITE_ATTACH, apsw.SQLITE_DETACH) or op in _TEMP_OPS:
        return apsw.SQLITE_DENY
    if script_names_host and op in _SCHEMA_CHANGES:
        return apsw.SQLITE_DENY
    if db == "temp" and not (op in (apsw.SQLITE_READ, apsw.SQLITE_UPDATE)
                             and (p1 or "").lower() in _TEMP_SCHEMA_TABLES):
        return apsw.SQLITE_DENY
    if op == apsw.SQLITE_PRAGMA:
        return _pragma_rule((p1 or "").lower(), p2)
    if op == apsw.SQLITE_FUNCTION:
        return apsw.SQLITE_DENY if (p2 or "").lower() in _DENIED_FUNCTIONS else apsw.SQLITE_OK
    # Every other operation names tables, columns, indexes, triggers or views in p1 and p2.
    for name in (p1, p2):
        if name is not None and is_host_name(name):
            return apsw.SQLITE_DENY
    return apsw.SQLITE_OK


def _pragma_rule(name: str, arg: str | None) -> int:
    if arg is not None and is_host_name(arg):
        return apsw.SQLITE_DENY  # `PRAGMA table_info(_wk_host_meta)` reads the host's too
    ok = name in _INFO_PRAGMAS or name in _SET_PRAGMAS or (
        arg is None and name in _READ_ONLY_PRAGMAS)
    return apsw.SQLITE_OK if ok else apsw.SQLITE_DENY


def host_rule(trigger: str | None) -> int:
    """The authorizer's answer for an operation of a host statement: anything but what
    a trigger or a view does. (SQLite names the view, or the common table expression,
    that an access comes through as it names a trigger: host SQL uses neither.)"""
    return apsw.SQLITE_OK if trigger is None else apsw.SQLITE_DENY


def apply_limits(conn: apsw.Connection, max_value_bytes: int) -> None:
    """The per-connection limits of the module's docstring, and the modules it drops;
    set before any guest SQL."""
    conn.drop_modules(_KEPT_MODULES)
    conn.limit(apsw.SQLITE_LIMIT_ATTACHED, 0)
    conn.limit(apsw.SQLITE_LIMIT_LENGTH, max_value_bytes)
    conn.limit(apsw.SQLITE_LIMIT_SQL_LENGTH, SQL_MAX_BYTES)
    conn.limit(apsw.SQLITE_LIMIT_VDBE_OP, VDBE_MAX_OPS)
    conn.limit(apsw.SQLITE_LIMIT_WORKER_THREADS, 0)
    list(conn.execute("PRAGMA temp_store=MEMORY"))


def set_heap_limit(max_bytes: int) -> None:
    """SQLite's memory, process-wide: past the hard limit an allocation fails, and the
    statement that asked gets SQLITE_NOMEM, never the process. Past the soft limit (half
    of it) SQLite first gives page caches back."""
    apsw.hard_heap_limit(max_bytes)
    apsw.soft_heap_limit(max_bytes // 2)
