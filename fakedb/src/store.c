/* store.c: the sqlite storage of the fake server. Items are kept as DynamoDB JSON text
 * beside their encoded key (so ORDER BY gives DynamoDB's order), index entries point at
 * base items, and table specs survive restarts when a file is used. With a file, each
 * commit is written to the WAL before the answer goes out, so an acknowledged write
 * survives a crash or SIGKILL of the server; the WAL is synced at checkpoints only
 * (synchronous=NORMAL), so a crash of the machine may lose the last writes -- the
 * trade a test server makes for speed (docs/fakedb.md). The checkpoints, which copy the WAL
 * into the file and sync both, run in a thread of their own on a second connection, so
 * that no request waits for a sync under the lock (issue 26). Every statement is prepared
 * once, cached, and takes bound parameters only. The caller holds db->lock. */
#include "store.h"
#include "expr.h"

#include <decimal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fakedb__stmt_cache {
    char *sql;
    sqlite3_stmt *st;
    struct fakedb__stmt_cache *next;
};

/* The WAL's checkpoints, off the request path: a commit that leaves the WAL at CKPT_PAGES
 * pages or more (sqlite's own auto-checkpoint threshold) wakes the checkpointer, which
 * checkpoints PASSIVE on its own connection (no lock of fakedb's, and writers go on
 * appending meanwhile). The WAL restarts from its start at the first write after a
 * checkpoint that caught up; under writes that never pause, none catches up, so a commit
 * that finds the WAL at CKPT_PAGES_MAX pages checkpoints in place, as sqlite would have
 * at every CKPT_PAGES: rare, and with little left to copy. The WAL file is cut back to
 * 16 MB (journal_size_limit) when it restarts. */
#define CKPT_PAGES 1000
#define CKPT_PAGES_MAX 32768

struct fakedb__checkpointer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool due, stopping;
    int backfilled;             /* WAL pages in the file after the last checkpoint */
    sqlite3 *sql;               /* the checkpointer's own connection to the file */
};

static void *checkpointer_main(void *arg)
{
    struct fakedb__checkpointer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->due && !c->stopping)
            pthread_cond_wait(&c->cond, &c->lock);
        if (c->stopping)
            break;
        c->due = false;
        pthread_mutex_unlock(&c->lock);
        int backfilled = 0;
        if (sqlite3_wal_checkpoint_v2(c->sql, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, &backfilled) != SQLITE_OK)
            backfilled = 0;
        pthread_mutex_lock(&c->lock);
        c->backfilled = backfilled;
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* sqlite calls this after each commit (db->lock held), in place of its auto-checkpoint. */
static int on_wal_commit(void *arg, sqlite3 *sql, const char *name, int pages)
{
    struct fakedb__checkpointer *c = arg;
    if (pages >= CKPT_PAGES_MAX) {
        sqlite3_wal_checkpoint_v2(sql, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    } else if (pages >= CKPT_PAGES) {
        pthread_mutex_lock(&c->lock);
        /* CKPT_PAGES more than the last checkpoint left (or than none: a restarted WAL) */
        int base = pages < c->backfilled ? 0 : c->backfilled;
        if (!c->due && pages - base >= CKPT_PAGES) {
            c->due = true;
            pthread_cond_signal(&c->cond);
        }
        pthread_mutex_unlock(&c->lock);
    }
    return SQLITE_OK;
}

static void checkpointer_stop(fakedb__store *db)
{
    struct fakedb__checkpointer *c = db->ckpt;
    if (!c)
        return;
    if (db->sql)
        sqlite3_wal_hook(db->sql, NULL, NULL);
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    /* closed first, so that the main connection's close, the last, checkpoints and
     * removes the WAL as before */
    sqlite3_close(c->sql);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
    db->ckpt = NULL;
}

/* Starts the checkpointer of a file's WAL; without it (no memory, no thread) sqlite's
 * auto-checkpoint stays, on the request path as before. */
static void checkpointer_start(fakedb__store *db)
{
    struct fakedb__checkpointer *c = calloc(1, sizeof *c);
    if (!c)
        return;
    /* the connection opens the WAL when it first reads */
    if (sqlite3_open_v2(db->db_path, &c->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(c->sql, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(c->sql);
        free(c);
        return;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    if (pthread_create(&c->thread, NULL, checkpointer_main, c) != 0) {
        sqlite3_close(c->sql);
        pthread_cond_destroy(&c->cond);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return;
    }
    db->ckpt = c;
    sqlite3_wal_hook(db->sql, on_wal_commit, c); /* replaces the auto-checkpoint */
}

static const char *const k_schema =
    "CREATE TABLE IF NOT EXISTS fdb_tables(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
    " spec TEXT NOT NULL, created_ms INTEGER NOT NULL, ttl_attr TEXT);"
    "CREATE TABLE IF NOT EXISTS fdb_items(tid INTEGER NOT NULL, pk BLOB NOT NULL, sk BLOB NOT NULL,"
    " item TEXT NOT NULL, size INTEGER NOT NULL, ttl INTEGER, PRIMARY KEY(tid, pk, sk)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS fdb_items_ttl ON fdb_items(ttl) WHERE ttl IS NOT NULL;"
    "CREATE TABLE IF NOT EXISTS fdb_index(tid INTEGER NOT NULL, iname TEXT NOT NULL, ipk BLOB NOT NULL,"
    " isk BLOB NOT NULL, pk BLOB NOT NULL, sk BLOB NOT NULL,"
    " PRIMARY KEY(tid, iname, ipk, isk, pk, sk)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS fdb_tokens(token TEXT PRIMARY KEY, digest TEXT NOT NULL,"
    " expires_ms INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS fdb_streams(id INTEGER PRIMARY KEY, arn TEXT UNIQUE NOT NULL,"
    " tid INTEGER NOT NULL, table_name TEXT NOT NULL, label TEXT NOT NULL, view INTEGER NOT NULL,"
    " key_schema TEXT NOT NULL, created_ms INTEGER NOT NULL, start_seq INTEGER NOT NULL,"
    " end_seq INTEGER NOT NULL DEFAULT 0, disabled_ms INTEGER NOT NULL DEFAULT 0,"
    " trim_seq INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS fdb_stream_records(sid INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " created_ms INTEGER NOT NULL, event TEXT NOT NULL, keys TEXT NOT NULL, new_image TEXT,"
    " old_image TEXT, size INTEGER NOT NULL, by_ttl INTEGER NOT NULL,"
    " PRIMARY KEY(sid, seq)) WITHOUT ROWID;"
    /* the deleted tables whose rows are still being removed (fakedb__purge_step) and how
     * many of their items are left */
    "CREATE TABLE IF NOT EXISTS fdb_purge(tid INTEGER PRIMARY KEY, items INTEGER NOT NULL);";

/* The stored key in columns 0 (partition) and 1 (sort) of a row. False when it does not
 * fit a key (a file written by something else). */
bool fakedb__key_from_row(sqlite3_stmt *st, fakedb__key *k)
{
    k->pk_len = (size_t)sqlite3_column_bytes(st, 0);
    k->sk_len = (size_t)sqlite3_column_bytes(st, 1);
    if (k->pk_len > sizeof k->pk || k->sk_len > sizeof k->sk)
        return false;
    if (k->pk_len)
        memcpy(k->pk, sqlite3_column_blob(st, 0), k->pk_len);
    if (k->sk_len)
        memcpy(k->sk, sqlite3_column_blob(st, 1), k->sk_len);
    return true;
}

sqlite3_stmt *fakedb__stmt(fakedb__store *db, const char *sql)
{
    struct fakedb__stmt_cache *c, **prev;
    for (prev = &db->stmts; (c = *prev) != NULL; prev = &c->next) {
        if (!strcmp(c->sql, sql)) {
            /* to the front: a workload's few statements are found at the first compares */
            *prev = c->next;
            c->next = db->stmts;
            db->stmts = c;
            sqlite3_reset(c->st);
            sqlite3_clear_bindings(c->st);
            return c->st;
        }
    }
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->sql = strdup(sql);
    if (!c->sql || sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->st, NULL) != SQLITE_OK) {
        if (db->log_requests) {
            char safe[1024];
            fprintf(stderr, "fakedb: sql: %s: %s\n", sqlite3_errmsg(db->sql), fakedb__log_text(sql, safe, sizeof safe));
        }
        free(c->sql);
        free(c);
        return NULL;
    }
    c->next = db->stmts;
    db->stmts = c;
    return c->st;
}

static int exec_simple(fakedb__store *db, const char *sql)
{
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

int fakedb__tx_begin(fakedb__store *db)
{
    return exec_simple(db, "BEGIN IMMEDIATE");
}

int fakedb__tx_commit(fakedb__store *db)
{
    if (exec_simple(db, "COMMIT") == 0)
        return 0;
    fakedb__tx_rollback(db);
    return -1;
}

void fakedb__tx_rollback(fakedb__store *db)
{
    if (!sqlite3_get_autocommit(db->sql))
        exec_simple(db, "ROLLBACK");
}

/* The table's latest stream (its ARN and label stay in DescribeTable once disabled). */
static int load_stream(fakedb__store *db, fakedb__table *t)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT id, arn, label, view, end_seq FROM fdb_streams"
                                        " WHERE tid = ?1 ORDER BY id DESC LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        t->stream_id = sqlite3_column_int64(st, 0);
        t->stream_arn = strdup((const char *)sqlite3_column_text(st, 1));
        t->stream_label = strdup((const char *)sqlite3_column_text(st, 2));
        t->stream_view = sqlite3_column_int64(st, 4) == 0 ? (int)sqlite3_column_int64(st, 3) : FDB_STREAM_NONE;
        rc = t->stream_arn && t->stream_label ? 0 : -1;
    }
    sqlite3_reset(st);
    return rc;
}

static int load_tables(fakedb__store *db)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT id, name, spec, created_ms, ttl_attr FROM fdb_tables ORDER BY id");
    if (!st)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_object *spec = fakedb__json_from_text((const char *)sqlite3_column_text(st, 2));
        fakedb__table *t = spec ? fakedb__table_from_spec((const char *)sqlite3_column_text(st, 1), spec) : NULL;
        json_object_put(spec);
        if (!t)
            continue;
        t->id = sqlite3_column_int64(st, 0);
        t->created_ms = sqlite3_column_int64(st, 3);
        if (sqlite3_column_type(st, 4) != SQLITE_NULL)
            t->ttl_attr = strdup((const char *)sqlite3_column_text(st, 4));
        if (t->id >= db->next_table_id)
            db->next_table_id = t->id + 1;
        t->next = db->tables;
        db->tables = t;
    }
    sqlite3_reset(st);
    for (fakedb__table *t = db->tables; t; t = t->next) {
        st = fakedb__stmt(db, "SELECT count(*), coalesce(sum(size), 0) FROM fdb_items WHERE tid = ?1");
        if (!st)
            return -1;
        sqlite3_bind_int64(st, 1, t->id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            t->item_count = sqlite3_column_int64(st, 0);
            t->size_bytes = sqlite3_column_int64(st, 1);
        }
        sqlite3_reset(st);
        if (load_stream(db, t))
            return -1;
    }
    /* a deleted table's id is not given again while its rows are being removed */
    st = fakedb__stmt(db, "SELECT coalesce(max(tid), 0) FROM fdb_purge");
    if (!st)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) >= db->next_table_id)
        db->next_table_id = sqlite3_column_int64(st, 0) + 1;
    sqlite3_reset(st);
    st = fakedb__stmt(db, "SELECT max(coalesce((SELECT max(seq) FROM fdb_stream_records), 0),"
                          " coalesce((SELECT max(max(start_seq, end_seq)) FROM fdb_streams), 0))");
    if (!st)
        return -1;
    db->stream_seq = 1;
    if (sqlite3_step(st) == SQLITE_ROW)
        db->stream_seq = sqlite3_column_int64(st, 0) + 1;
    sqlite3_reset(st);
    return 0;
}

int fakedb__store_open(fakedb__store *db, fakedb_error *err)
{
    const char *path = db->db_path ? db->db_path : ":memory:";
    if (!db->account[0])
        memcpy(db->account, "000000000000", sizeof db->account);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &db->sql, flags, NULL) != SQLITE_OK) {
        if (err) {
            err->code = FAKEDB_EIO;
            snprintf(err->message, sizeof err->message, "cannot open database %s: %s", path,
                     db->sql ? sqlite3_errmsg(db->sql) : "out of memory");
        }
        return FAKEDB_EIO;
    }
    /* In memory, pages of 16 KiB: a million items make a tree a level shallower and a
     * page cache of a quarter as many pages, whose commit sqlite walks in part; with 4 KiB
     * pages PutItem lost a fifth of its throughput from 2,000 to 1,000,000 items
     * (bench/RESULTS.md, issue 26). A file keeps sqlite's 4 KiB, which each commit
     * writes to the WAL once per page it changed. */
    const char *pragmas = db->db_path
        ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;"
          " PRAGMA journal_size_limit=16777216;"
        : "PRAGMA page_size=16384; PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF;";
    char *msg = NULL;
    if (sqlite3_exec(db->sql, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db->sql, k_schema, NULL, NULL, &msg) != SQLITE_OK) {
        if (err) {
            err->code = FAKEDB_EIO;
            snprintf(err->message, sizeof err->message, "cannot set up database %s: %s", path,
                     msg ? msg : sqlite3_errmsg(db->sql));
        }
        sqlite3_free(msg);
        return FAKEDB_EIO;
    }
    db->next_table_id = 1;
    if (db->db_path)
        checkpointer_start(db);
    if (load_tables(db) != 0) {
        /* a statement that could not be made without an error of SQLite's: memory */
        int sqlerr = sqlite3_errcode(db->sql);
        int code = sqlerr == SQLITE_OK || sqlerr == SQLITE_NOMEM ? FAKEDB_ENOMEM : FAKEDB_EIO;
        if (err) {
            err->code = code;
            snprintf(err->message, sizeof err->message, "cannot read tables of %s: %s", path,
                     code == FAKEDB_ENOMEM ? "out of memory" : sqlite3_errmsg(db->sql));
        }
        return code;
    }
    return 0;
}

void fakedb__store_close(fakedb__store *db)
{
    checkpointer_stop(db);
    struct fakedb__stmt_cache *c = db->stmts, *n;
    for (; c; c = n) {
        n = c->next;
        sqlite3_finalize(c->st);
        free(c->sql);
        free(c);
    }
    db->stmts = NULL;
    fakedb__tables_clear(db);
    if (db->sql)
        sqlite3_close(db->sql);
    db->sql = NULL;
}

/* Steps the lookup of the item at k: SQLITE_ROW leaves *st on its row (item, size) for
 * the caller to read and reset; anything else (SQLITE_DONE: there is none) is reset. */
static int find_item(fakedb__store *db, const fakedb__table *t, const fakedb__key *k, sqlite3_stmt **st)
{
    *st = fakedb__stmt(db, "SELECT item, size FROM fdb_items WHERE tid = ?1 AND pk = ?2 AND sk = ?3");
    if (!*st)
        return SQLITE_ERROR;
    sqlite3_bind_int64(*st, 1, t->id);
    sqlite3_bind_blob(*st, 2, k->pk, (int)k->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(*st, 3, k->sk, (int)k->sk_len, SQLITE_STATIC);
    int rc = sqlite3_step(*st);
    if (rc != SQLITE_ROW)
        sqlite3_reset(*st);
    return rc;
}

int fakedb__item_get(fakedb__store *db, const fakedb__table *t, const fakedb__key *k, json_object **out)
{
    *out = NULL;
    sqlite3_stmt *st;
    int rc = find_item(db, t, k, &st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? 0 : -1;
    *out = fakedb__json_from_text((const char *)sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    return *out ? 0 : -1;
}

int fakedb__item_get_text(fakedb__store *db, const fakedb__table *t, const fakedb__key *k, char **text,
                          int64_t *size)
{
    *text = NULL;
    *size = 0;
    sqlite3_stmt *st;
    int rc = find_item(db, t, k, &st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? 0 : -1;
    const char *json = (const char *)sqlite3_column_text(st, 0); /* then its length */
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    *size = sqlite3_column_int64(st, 1);
    *text = json ? malloc(n + 1) : NULL;
    if (*text) {
        memcpy(*text, json, n);
        (*text)[n] = '\0';
    }
    sqlite3_reset(st);
    return *text ? 0 : -1;
}

int64_t fakedb__ttl_of(const fakedb__table *t, json_object *item)
{
    if (!t->ttl_attr)
        return INT64_MIN;
    json_object *av = fakedb__json_get(item, t->ttl_attr);
    const char *n = fakedb__json_str(av, "N");
    if (!n)
        return INT64_MIN;
    dl_decimal d;
    int64_t v;
    if (dl__decimal_parse(n, strlen(n), &d) != DL_DEC_OK)
        return INT64_MIN;
    if (dl__decimal_to_i64(&d, &v) == 0)
        return v;
    /* fractional seconds: keep the integer part; out of range: never expires */
    char *end = NULL;
    double x = strtod(n, &end);
    if (x > 9.2e18 || x < -9.2e18)
        return INT64_MIN;
    return (int64_t)x;
}

static int index_row(fakedb__store *db, const char *sql, fakedb__table *t, const fakedb__index *ix,
                     const fakedb__key *ik, const fakedb__key *k)
{
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_text(st, 2, ix->name, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, ik->pk, (int)ik->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 4, ik->sk, (int)ik->sk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 5, k->pk, (int)k->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 6, k->sk, (int)k->sk_len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static const char *const k_idx_insert =
    "INSERT OR REPLACE INTO fdb_index(tid, iname, ipk, isk, pk, sk) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
static const char *const k_idx_delete =
    "DELETE FROM fdb_index WHERE tid = ?1 AND iname = ?2 AND ipk = ?3 AND isk = ?4 AND pk = ?5 AND sk = ?6";

static int indexes_update(fakedb__store *db, fakedb__table *t, const fakedb__key *k,
                          json_object *old_item, json_object *new_item)
{
    fakedb__error scratch;
    fakedb__key *ik = malloc(sizeof *ik);
    if (!ik)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < t->n_idx && rc == 0; i++) {
        const fakedb__index *ix = &t->idx[i];
        memset(&scratch, 0, sizeof scratch);
        if (old_item && fakedb__index_key(ix, old_item, ik, &scratch) == 1)
            rc = index_row(db, k_idx_delete, t, ix, ik, k);
        memset(&scratch, 0, sizeof scratch);
        if (rc == 0 && new_item && fakedb__index_key(ix, new_item, ik, &scratch) == 1)
            rc = index_row(db, k_idx_insert, t, ix, ik, k);
    }
    free(ik);
    return rc;
}

static int64_t stored_size(fakedb__store *db, const fakedb__table *t, const fakedb__key *k)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT size FROM fdb_items WHERE tid = ?1 AND pk = ?2 AND sk = ?3");
    int64_t n = 0;
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_blob(st, 2, k->pk, (int)k->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, k->sk, (int)k->sk_len, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return n;
}

static int bind_json(sqlite3_stmt *st, int col, json_object *o)
{
    if (!o)
        return sqlite3_bind_null(st, col);
    size_t len = 0;
    const char *text = json_object_to_json_string_length(o, FDB_JSON_FLAGS, &len);
    return text ? sqlite3_bind_text(st, col, text, (int)len, SQLITE_TRANSIENT) : SQLITE_NOMEM;
}

/* The stream record of a write to a table with an enabled stream, in the write's
 * transaction (a write rolled back leaves none; records follow commit order). As
 * DynamoDB Streams, a write that changes nothing (a put of the same item) has none. */
static int stream_record(fakedb__store *db, fakedb__table *t, json_object *old_item, json_object *new_item)
{
    if (old_item && new_item && json_object_equal(old_item, new_item))
        return 0;
    int view = t->stream_view;
    json_object *keys = fakedb__key_of(t, new_item ? new_item : old_item);
    json_object *ni = view == FDB_STREAM_NEW_IMAGE || view == FDB_STREAM_NEW_AND_OLD_IMAGES ? new_item : NULL;
    json_object *oi = view == FDB_STREAM_OLD_IMAGE || view == FDB_STREAM_NEW_AND_OLD_IMAGES ? old_item : NULL;
    int64_t size = (int64_t)(fakedb__item_size(keys) + (ni ? fakedb__item_size(ni) : 0) +
                             (oi ? fakedb__item_size(oi) : 0));
    sqlite3_stmt *st = fakedb__stmt(db, "INSERT INTO fdb_stream_records(sid, seq, created_ms, event, keys,"
                                        " new_image, old_image, size, by_ttl) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    int rc = -1;
    if (st && keys) {
        sqlite3_bind_int64(st, 1, t->stream_id);
        sqlite3_bind_int64(st, 2, db->stream_seq++);
        sqlite3_bind_int64(st, 3, fakedb__now_ms(db->clock));
        sqlite3_bind_text(st, 4, !old_item ? "INSERT" : new_item ? "MODIFY" : "REMOVE", -1, SQLITE_STATIC);
        if (bind_json(st, 5, keys) == SQLITE_OK && bind_json(st, 6, ni) == SQLITE_OK &&
            bind_json(st, 7, oi) == SQLITE_OK) {
            sqlite3_bind_int64(st, 8, size);
            sqlite3_bind_int(st, 9, db->ttl_deleting);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
        }
        sqlite3_reset(st);
    }
    json_object_put(keys);
    return rc;
}

int fakedb__item_write(fakedb__store *db, fakedb__table *t, const fakedb__key *k, json_object *old_item,
                       json_object *new_item)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(new_item, FDB_JSON_FLAGS, &len);
    int64_t size = (int64_t)fakedb__item_size(new_item);
    int64_t old_size = old_item ? stored_size(db, t, k) : 0;
    int64_t ttl = fakedb__ttl_of(t, new_item);
    sqlite3_stmt *st = fakedb__stmt(db, "INSERT OR REPLACE INTO fdb_items(tid, pk, sk, item, size, ttl) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st || !text)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_blob(st, 2, k->pk, (int)k->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, k->sk, (int)k->sk_len, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, text, (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, size);
    if (ttl == INT64_MIN)
        sqlite3_bind_null(st, 6);
    else
        sqlite3_bind_int64(st, 6, ttl);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    if (indexes_update(db, t, k, old_item, new_item))
        return -1;
    if (t->stream_view && stream_record(db, t, old_item, new_item))
        return -1;
    if (!old_item)
        t->item_count++;
    t->size_bytes += size - old_size;
    return 0;
}

int fakedb__item_remove(fakedb__store *db, fakedb__table *t, const fakedb__key *k, json_object *old_item)
{
    int64_t old_size = stored_size(db, t, k);
    sqlite3_stmt *st = fakedb__stmt(db, "DELETE FROM fdb_items WHERE tid = ?1 AND pk = ?2 AND sk = ?3");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_blob(st, 2, k->pk, (int)k->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, k->sk, (int)k->sk_len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int changed = sqlite3_changes(db->sql);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    if (changed > 0) {
        t->item_count--;
        t->size_bytes -= old_size;
        if (t->stream_view && old_item && stream_record(db, t, old_item, NULL))
            return -1;
    }
    return old_item ? indexes_update(db, t, k, old_item, NULL) : 0;
}

int fakedb__table_save(fakedb__store *db, fakedb__table *t)
{
    sqlite3_stmt *st = fakedb__stmt(db, "INSERT OR REPLACE INTO fdb_tables(id, name, spec, created_ms, ttl_attr) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, json_object_to_json_string_ext(t->spec, FDB_JSON_FLAGS), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, t->created_ms);
    if (t->ttl_attr)
        sqlite3_bind_text(st, 5, t->ttl_attr, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 5);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int delete_by_tid(fakedb__store *db, const char *sql, int64_t tid)
{
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, tid);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int fakedb__table_drop(fakedb__store *db, fakedb__table *t)
{
    if (delete_by_tid(db, "DELETE FROM fdb_tables WHERE id = ?1", t->id))
        return -1;
    sqlite3_stmt *st = fakedb__stmt(db, "INSERT OR REPLACE INTO fdb_purge(tid, items) VALUES(?1, ?2)");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_int64(st, 2, t->item_count);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Rows removed per transaction: about a millisecond of work, after which the lock is
 * free for the requests waiting on it. */
#define PURGE_SLICE 1000

/* Runs sql with ?1 the table's id and ?2 v; the rows it changed, or -1. */
static int64_t run_tid(fakedb__store *db, const char *sql, int64_t tid, int64_t v)
{
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, tid);
    sqlite3_bind_int64(st, 2, v);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? sqlite3_changes64(db->sql) : -1;
}

static int purge_slice(fakedb__store *db)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT tid FROM fdb_purge ORDER BY tid LIMIT 1");
    if (!st)
        return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        return 0;
    }
    int64_t tid = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (fakedb__tx_begin(db))
        return -1;
    /* the items first (counted down in the mark), then the index rows, then the mark */
    int64_t n = run_tid(db, "DELETE FROM fdb_items WHERE tid = ?1 AND (pk, sk) IN"
                            " (SELECT pk, sk FROM fdb_items WHERE tid = ?1 LIMIT ?2)", tid, PURGE_SLICE);
    if (n > 0 && run_tid(db, "UPDATE fdb_purge SET items = max(items - ?2, 0) WHERE tid = ?1", tid, n) < 0)
        n = -1;
    if (n == 0)
        n = run_tid(db, "DELETE FROM fdb_index WHERE tid = ?1 AND (iname, ipk, isk, pk, sk) IN"
                        " (SELECT iname, ipk, isk, pk, sk FROM fdb_index WHERE tid = ?1 LIMIT ?2)", tid, PURGE_SLICE);
    if (n == 0)
        n = delete_by_tid(db, "DELETE FROM fdb_purge WHERE tid = ?1", tid);
    if (n < 0 || fakedb__tx_commit(db)) {
        fakedb__tx_rollback(db);
        return -1;
    }
    return 1;
}

int fakedb__purge_step(fakedb__store *db)
{
    pthread_mutex_lock(&db->lock);
    int rc = purge_slice(db);
    pthread_mutex_unlock(&db->lock);
    return rc;
}

int64_t fakedb__purge_pending(fakedb__store *db)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT coalesce(sum(items), 0) FROM fdb_purge");
    if (!st)
        return 0;
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return n;
}

int fakedb__index_drop(fakedb__store *db, fakedb__table *t, const char *iname)
{
    sqlite3_stmt *st = fakedb__stmt(db, "DELETE FROM fdb_index WHERE tid = ?1 AND iname = ?2");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_text(st, 2, iname, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Calls fn for every item of a table (in key order). The statement is not cached since
 * fn may run other statements. */
static int each_item(fakedb__store *db, fakedb__table *t,
                     int (*fn)(fakedb__store *, fakedb__table *, const fakedb__key *, json_object *, const void *),
                     const void *arg)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->sql, "SELECT pk, sk, item FROM fdb_items WHERE tid = ?1", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    fakedb__key *k = malloc(sizeof *k);
    int rc = k ? 0 : -1;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (!fakedb__key_from_row(st, k))
            continue;
        json_object *item = fakedb__json_from_text((const char *)sqlite3_column_text(st, 2));
        if (item)
            rc = fn(db, t, k, item, arg);
        json_object_put(item);
    }
    free(k);
    sqlite3_finalize(st);
    return rc;
}

static int fill_one(fakedb__store *db, fakedb__table *t, const fakedb__key *k, json_object *item, const void *arg)
{
    const fakedb__index *ix = arg;
    fakedb__error scratch;
    fakedb__key ik;
    memset(&scratch, 0, sizeof scratch);
    int in = fakedb__index_key(ix, item, &ik, &scratch);
    return in == 1 ? index_row(db, k_idx_insert, t, ix, &ik, k) : 0;
}

int fakedb__index_fill(fakedb__store *db, fakedb__table *t, const fakedb__index *ix)
{
    return each_item(db, t, fill_one, ix);
}

static int ttl_one(fakedb__store *db, fakedb__table *t, const fakedb__key *k, json_object *item, const void *arg)
{
    (void)arg;
    sqlite3_stmt *st = fakedb__stmt(db, "UPDATE fdb_items SET ttl = ?4 WHERE tid = ?1 AND pk = ?2 AND sk = ?3");
    if (!st)
        return -1;
    int64_t ttl = fakedb__ttl_of(t, item);
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_blob(st, 2, k->pk, (int)k->pk_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, k->sk, (int)k->sk_len, SQLITE_STATIC);
    if (ttl == INT64_MIN)
        sqlite3_bind_null(st, 4);
    else
        sqlite3_bind_int64(st, 4, ttl);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int fakedb__ttl_refresh(fakedb__store *db, fakedb__table *t)
{
    return each_item(db, t, ttl_one, NULL);
}

int fakedb__store_reset(fakedb__store *db)
{
    int rc = 0;
    rc |= exec_simple(db, "DELETE FROM fdb_items");
    rc |= exec_simple(db, "DELETE FROM fdb_index");
    rc |= exec_simple(db, "DELETE FROM fdb_tables");
    rc |= exec_simple(db, "DELETE FROM fdb_tokens");
    rc |= exec_simple(db, "DELETE FROM fdb_streams");
    rc |= exec_simple(db, "DELETE FROM fdb_stream_records");
    rc |= exec_simple(db, "DELETE FROM fdb_purge");
    fakedb__tables_clear(db);
    return rc ? -1 : 0;
}

int fakedb__token_lookup(fakedb__store *db, const char *token, int64_t now_ms, char *digest, size_t n)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT digest FROM fdb_tokens WHERE token = ?1 AND expires_ms > ?2");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ms);
    int found = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(digest, n, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    sqlite3_reset(st);
    return found;
}

int fakedb__token_save(fakedb__store *db, const char *token, const char *digest, int64_t expires_ms)
{
    sqlite3_stmt *st = fakedb__stmt(db, "INSERT OR REPLACE INTO fdb_tokens(token, digest, expires_ms) VALUES(?1, ?2, ?3)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, digest, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, expires_ms);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}
