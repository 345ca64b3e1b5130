"""The PostgreSQL store's schema: its tables, the migrations between versions, and the
migration run on open (see :mod:`offprompt.stores.postgres` for the layout).

Imports no driver: :func:`migrate` runs on the connection the store hands it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from offprompt.errors import NotAStoreError, StorageError
from offprompt.stores import _tasks

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION = 6
#: Taken by every migration, so concurrent first opens migrate once.
_MIGRATION_LOCK = 0x0FF9_0A57
_TABLES = (
    "offprompt_messages",
    "offprompt_state",
    "offprompt_sessions",
    "offprompt_blobs",
    "offprompt_blob_refs",
    "offprompt_batches",
    "offprompt_tasks",
    "offprompt_task_blobs",
    "offprompt_task_parts",
)

_PART_COLS = (
    "tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',"
    " agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT ''"
)
PART_KEY = "tenant, user_id, agent, run"

#: Migration N takes the schema from version N-1 to N.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE offprompt_schema_version ("
        " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        f"CREATE TABLE offprompt_sessions ({_PART_COLS}, session_id text NOT NULL,"
        " next_seq bigint NOT NULL, epoch bigint NOT NULL, message_count bigint NOT NULL,"
        f" last_activity double precision, PRIMARY KEY ({PART_KEY}, session_id))",
        "CREATE INDEX offprompt_sessions_user ON offprompt_sessions (user_id)",
        # The key covers what a window's catch-up reads, so read_index skips the bodies.
        f"CREATE TABLE offprompt_messages ({_PART_COLS}, session_id text NOT NULL,"
        " seq bigint NOT NULL, role text NOT NULL, tokens bigint NOT NULL,"
        " appended_at double precision NOT NULL, body text NOT NULL,"
        f" PRIMARY KEY ({PART_KEY}, session_id, seq) INCLUDE (tokens, role, appended_at))",
        "CREATE INDEX offprompt_messages_user ON offprompt_messages (user_id)",
        f"CREATE TABLE offprompt_state ({_PART_COLS}, session_id text NOT NULL,"
        f" key text NOT NULL, value text NOT NULL, PRIMARY KEY ({PART_KEY}, session_id, key))",
        "CREATE INDEX offprompt_state_user ON offprompt_state (user_id)",
        f"CREATE TABLE offprompt_blobs ({_PART_COLS}, key text NOT NULL, data bytea NOT NULL,"
        f" PRIMARY KEY ({PART_KEY}, key))",
        f"CREATE TABLE offprompt_blob_refs ({_PART_COLS}, session_id text NOT NULL,"
        " seq bigint NOT NULL, key text NOT NULL,"
        f" PRIMARY KEY ({PART_KEY}, session_id, seq, key))",
        f"CREATE INDEX offprompt_blob_refs_key ON offprompt_blob_refs ({PART_KEY}, key)",
    ),
    2: (
        # v2: idempotency keys, so a writer that saw an error can retry a batch safely.
        "ALTER TABLE offprompt_messages ADD COLUMN batch text",
        f"CREATE TABLE offprompt_batches ({_PART_COLS}, session_id text NOT NULL,"
        " key text NOT NULL, first_seq bigint NOT NULL, size integer NOT NULL,"
        f" committed_at double precision NOT NULL, PRIMARY KEY ({PART_KEY}, session_id, key))",
        "CREATE INDEX offprompt_batches_user ON offprompt_batches (user_id)",
    ),
    3: (
        # v3: messages are found through their session's counter row (see op_forget_scope),
        # so an append updates one index per message instead of two.
        "DROP INDEX IF EXISTS offprompt_messages_user",
    ),
    # v4: stored tool outputs (TaskMemory(store=...)): metadata rows and raw bytes.
    4: _tasks.TASK_DDL("bytea"),
    # v5: a stored output's bytes go to TOAST uncompressed. pglz, the default, took about
    # half of storing a large output (one backend compresses it alone); logs and JSON
    # take a few times the space uncompressed. Applies to bytes stored from now on.
    5: ("ALTER TABLE offprompt_task_blobs ALTER COLUMN data SET STORAGE EXTERNAL",),
    # v6: a large output's bytes as part rows that several connections write and read at
    # once (one backend TOASTing a large output is slow; see _tasks.py). Blobs stored before
    # stay one row (parts = 0) and read as before.
    6: _tasks.PARTS_DDL,
}

#: Whether the server can compress TOAST with lz4 (PostgreSQL 14+ built ``--with-lz4``:
#: only then is ``lz4`` among the values of ``default_toast_compression``).
HAS_LZ4 = (
    "SELECT coalesce(bool_or('lz4' = ANY(enumvals)), false) FROM pg_settings"
    " WHERE name = 'default_toast_compression'"
)

#: Run after the statements of a migration when the server has lz4.
WITH_LZ4: dict[int, tuple[str, ...]] = {
    # lz4 TOAST compression: on these logs it stored faster than no compression (less
    # to write: a few times smaller) and much faster than pglz, and reads back faster
    # (fewer TOAST chunks). Without lz4 the columns stay EXTERNAL (uncompressed).
    6: tuple(
        f"ALTER TABLE {table} ALTER COLUMN data SET STORAGE EXTENDED,"
        " ALTER COLUMN data SET COMPRESSION lz4"
        for table in ("offprompt_task_parts", "offprompt_task_blobs")
    ),
}


def migrate(conn: psycopg.Connection[Any], where: str) -> None:
    """Take the database of ``conn`` (autocommit) to :data:`SCHEMA_VERSION`, in one
    transaction under an advisory lock, so concurrent first opens migrate once.

    Raises:
        NotAStoreError: An ``offprompt_messages`` table without the version table.
        StorageError: The schema is newer than this offprompt understands.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        found = conn.execute(
            "SELECT to_regclass('offprompt_schema_version') IS NOT NULL,"
            " to_regclass('offprompt_messages') IS NOT NULL"
        ).fetchone()
        assert found is not None
        has_versions, has_messages = found
        if has_messages and not has_versions:
            raise NotAStoreError(
                f"PostgreSQL at {where} has an offprompt_messages table but no "
                "offprompt_schema_version: another application's table? offprompt "
                "left it untouched",
                host=where,
            )
        version = 0
        if has_versions:
            row = conn.execute(
                "SELECT coalesce(max(version), 0) FROM offprompt_schema_version"
            ).fetchone()
            version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"PostgreSQL at {where} has offprompt schema version {version}, "
                f"newer than this offprompt understands ({SCHEMA_VERSION}); upgrade "
                "offprompt",
                host=where,
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            # One round trip per migration: statements without parameters can share one.
            conn.execute(
                "; ".join(
                    (*MIGRATIONS[step], f"INSERT INTO offprompt_schema_version VALUES ({step})")
                )
            )
            if step in WITH_LZ4:
                lz4 = conn.execute(HAS_LZ4).fetchone()
                if lz4 is not None and lz4[0]:
                    conn.execute("; ".join(WITH_LZ4[step]))


def vacuum_sql(full: bool) -> str:
    return f"VACUUM {'FULL ' if full else ''}{', '.join(_TABLES)}"
