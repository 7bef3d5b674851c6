/* stream_store.c: DynamoDB Streams' streams and their records in sqlite. A stream has
 * one shard, whose sequence number range starts with a number taken when the stream is
 * enabled and ends with one taken when it is disabled (or its table deleted); the
 * records between are written by store.c in the transaction of their write. Records
 * older than the retention are trimmed (trim_seq remembers the last one), and a stream
 * disabled for longer than the retention is dropped with its records. db->lock held. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const k_views[] = { NULL, "KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES" };

const char *fakedb__stream_view_name(int view)
{
    return view > FDB_STREAM_NONE && view <= FDB_STREAM_NEW_AND_OLD_IMAGES ? k_views[view] : "";
}

int fakedb__stream_view_parse(const char *s)
{
    for (int v = FDB_STREAM_KEYS_ONLY; s && v <= FDB_STREAM_NEW_AND_OLD_IMAGES; v++)
        if (!strcmp(s, k_views[v]))
            return v;
    return FDB_STREAM_NONE;
}

static const char k_cols[] = "id, tid, view, arn, label, table_name, key_schema, created_ms, start_seq,"
                             " end_seq, disabled_ms, trim_seq";

static int from_row(sqlite3_stmt *st, fakedb__stream *s)
{
    memset(s, 0, sizeof *s);
    s->id = sqlite3_column_int64(st, 0);
    s->tid = sqlite3_column_int64(st, 1);
    s->view = (int)sqlite3_column_int64(st, 2);
    fakedb__copy_str(s->arn, sizeof s->arn, (const char *)sqlite3_column_text(st, 3));
    fakedb__copy_str(s->label, sizeof s->label, (const char *)sqlite3_column_text(st, 4));
    fakedb__copy_str(s->table, sizeof s->table, (const char *)sqlite3_column_text(st, 5));
    const char *ks = (const char *)sqlite3_column_text(st, 6);
    s->key_schema = strdup(ks ? ks : "[]");
    s->created_ms = sqlite3_column_int64(st, 7);
    s->start_seq = sqlite3_column_int64(st, 8);
    s->end_seq = sqlite3_column_int64(st, 9);
    s->disabled_ms = sqlite3_column_int64(st, 10);
    s->trim_seq = sqlite3_column_int64(st, 11);
    /* DynamoDB's form: shardId-<20 digits of time>-<8 hex digits> */
    snprintf(s->shard, sizeof s->shard, "shardId-%020lld-%08llx", (long long)s->created_ms,
             (unsigned long long)((uint64_t)s->id * 0x9E3779B1u & 0xffffffffu));
    return s->key_schema ? 0 : -1;
}

void fakedb__stream_clear(fakedb__stream *s)
{
    free(s->key_schema);
    s->key_schema = NULL;
}

/* A stream's label: the time it was enabled, to the millisecond, as DynamoDB writes it. */
static void make_label(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[128];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    fakedb__copy_str(out, 32, buf);
}

static int arn_taken(fakedb__store *db, const char *arn)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT 1 FROM fdb_streams WHERE arn = ?1");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, arn, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int fakedb__stream_enable(fakedb__store *db, fakedb__table *t, int view, const char *region)
{
    int64_t now = fakedb__now_ms(db->clock);
    char label[32], arn[640];
    /* a new stream has a new ARN, even when enabled again within the same millisecond */
    for (int64_t ms = now;; ms++) {
        make_label(ms, label);
        snprintf(arn, sizeof arn, "arn:aws:dynamodb:%s:%s:table/%s/stream/%s", region, db->account,
                 t->name, label);
        int taken = arn_taken(db, arn);
        if (taken < 0)
            return -1;
        if (!taken)
            break;
    }
    json_object *ks = fakedb__json_get(t->spec, "KeySchema");
    sqlite3_stmt *st = fakedb__stmt(db, "INSERT INTO fdb_streams(arn, tid, table_name, label, view, key_schema,"
                                        " created_ms, start_seq, trim_seq) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    char *a = strdup(arn), *l = strdup(label);
    if (!st || !a || !l) {
        free(a);
        free(l);
        return -1;
    }
    int64_t start = db->stream_seq++;
    sqlite3_bind_text(st, 1, arn, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t->id);
    sqlite3_bind_text(st, 3, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, label, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, view);
    sqlite3_bind_text(st, 6, ks ? json_object_to_json_string_ext(ks, FDB_JSON_FLAGS) : "[]", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 7, now);
    sqlite3_bind_int64(st, 8, start);
    sqlite3_bind_int64(st, 9, start);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        free(a);
        free(l);
        return -1;
    }
    free(t->stream_arn);
    free(t->stream_label);
    t->stream_arn = a;
    t->stream_label = l;
    t->stream_id = sqlite3_last_insert_rowid(db->sql);
    t->stream_view = view;
    return 0;
}

int fakedb__stream_disable(fakedb__store *db, fakedb__table *t)
{
    if (!t->stream_view)
        return 0;
    sqlite3_stmt *st = fakedb__stmt(db, "UPDATE fdb_streams SET end_seq = ?2, disabled_ms = ?3 WHERE id = ?1");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->stream_id);
    sqlite3_bind_int64(st, 2, db->stream_seq++);
    sqlite3_bind_int64(st, 3, fakedb__now_ms(db->clock));
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    t->stream_view = FDB_STREAM_NONE;
    return 0;
}

int fakedb__stream_get(fakedb__store *db, const char *arn, fakedb__stream *out)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM fdb_streams WHERE arn = ?1", k_cols);
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, arn, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int found = rc == SQLITE_ROW ? (from_row(st, out) ? -1 : 1) : rc == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(st);
    return found;
}

int fakedb__stream_list(fakedb__store *db, const char *table, int64_t after_id, size_t max,
                        fakedb__stream *out, size_t *n)
{
    char sql[320];
    snprintf(sql, sizeof sql, "SELECT %s FROM fdb_streams WHERE id > ?1 AND (?2 IS NULL OR table_name = ?2)"
                              " ORDER BY id LIMIT ?3", k_cols);
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    *n = 0;
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, after_id);
    if (table)
        sqlite3_bind_text(st, 2, table, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, (int64_t)max);
    int rc = 0;
    while (*n < max && sqlite3_step(st) == SQLITE_ROW) {
        if (from_row(st, &out[*n])) {
            fakedb__stream_clear(&out[*n]);
            rc = -1;
            break;
        }
        (*n)++;
    }
    sqlite3_reset(st);
    return rc;
}

int fakedb__stream_records(fakedb__store *db, int64_t sid, int64_t from, int limit,
                           int (*fn)(void *arg, const fakedb__stream_rec *rec), void *arg)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT seq, created_ms, event, keys, new_image, old_image, size, by_ttl"
                                        " FROM fdb_stream_records WHERE sid = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, sid);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int(st, 3, limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        fakedb__stream_rec r = {
            .seq = sqlite3_column_int64(st, 0),
            .created_ms = sqlite3_column_int64(st, 1),
            .event = (const char *)sqlite3_column_text(st, 2),
            .keys = (const char *)sqlite3_column_text(st, 3),
            .new_image = (const char *)sqlite3_column_text(st, 4),
            .old_image = (const char *)sqlite3_column_text(st, 5),
            .size = sqlite3_column_int64(st, 6),
            .by_ttl = sqlite3_column_int(st, 7) != 0,
        };
        if (fn(arg, &r))
            break;
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static int exec_one(fakedb__store *db, const char *sql, int64_t a)
{
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, a);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Whether anything is due: the oldest record of any stream, or a stream disabled, is
 * past the cutoff. Cheap, since the system clock's ticker asks every second. */
static int trim_due(fakedb__store *db, int64_t cutoff)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT EXISTS(SELECT 1 FROM fdb_streams s WHERE"
                                        " (s.disabled_ms > 0 AND s.disabled_ms < ?1) OR"
                                        " (SELECT created_ms FROM fdb_stream_records r WHERE r.sid = s.id"
                                        " ORDER BY seq LIMIT 1) < ?1)");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, cutoff);
    int due = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_reset(st);
    return due;
}

int fakedb__streams_trim(fakedb__store *db, int64_t now_ms)
{
    int64_t cutoff = now_ms - FDB_STREAM_RETENTION_MS;
    int due = trim_due(db, cutoff);
    if (due <= 0)
        return due;
    if (fakedb__tx_begin(db))
        return -1;
    int rc = exec_one(db, "UPDATE fdb_streams SET trim_seq = max(trim_seq, (SELECT max(seq) FROM fdb_stream_records r"
                            " WHERE r.sid = fdb_streams.id AND r.created_ms < ?1)) WHERE EXISTS(SELECT 1 FROM"
                            " fdb_stream_records r WHERE r.sid = fdb_streams.id AND r.created_ms < ?1)",
                  cutoff);
    if (rc == 0)
        rc = exec_one(db, "DELETE FROM fdb_stream_records WHERE created_ms < ?1", cutoff);
    if (rc == 0)
        rc = exec_one(db, "DELETE FROM fdb_stream_records WHERE sid IN (SELECT id FROM fdb_streams"
                            " WHERE disabled_ms > 0 AND disabled_ms < ?1)", cutoff);
    if (rc == 0)
        rc = exec_one(db, "DELETE FROM fdb_streams WHERE disabled_ms > 0 AND disabled_ms < ?1", cutoff);
    if (rc || fakedb__tx_commit(db)) {
        fakedb__tx_rollback(db);
        return -1;
    }
    return 0;
}
