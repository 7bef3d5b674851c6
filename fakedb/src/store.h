/* store.h: layer 3 of libfakedb, storage. The clock (clock.c), the tables' in-memory
 * view (schema.c), sqlite rows for tables, items, index entries and transaction tokens
 * (store.c), and the expiry of items by time to live (ttl.c). Knows values and the
 * expressions' item size; knows nothing of operations, requests or HTTP.
 *
 * Every function that touches tables or items runs with db->lock held (one lock
 * serialises all data access, which makes every operation atomic and isolated). */
#ifndef FAKEDB_STORE_H
#define FAKEDB_STORE_H

#include "values.h"

#include <fakedb/fakedb.h>
#include <pthread.h>
#include <sqlite3.h>

/* clock.c: the server's clock, the system's or a fake one that moves only when told. */
typedef struct fakedb__clock {
    pthread_mutex_t lock;
    bool fake;
    int64_t fake_now_ms;
} fakedb__clock;

int64_t fakedb__now_ms(fakedb__clock *c);
int64_t fakedb__mono_ms(void);
/* Moves a fake clock to v (relative: by v). FAKEDB_EINVAL when the clock is not fake or
 * would go back; the caller then expires items and answers waiters. */
int fakedb__clock_move(fakedb__clock *c, bool relative, int64_t v);

/* The data: sqlite and the list of tables, under one lock. */
typedef struct fakedb__store {
    pthread_mutex_t lock;
    sqlite3 *sql;
    struct fakedb__stmt_cache *stmts;
    fakedb__table *tables;
    int64_t next_table_id;
    const char *db_path;        /* borrowed; NULL: in memory */
    bool log_requests;
    fakedb__clock *clock;       /* borrowed */
    int64_t stream_seq;         /* the next sequence number of DynamoDB Streams */
    bool ttl_deleting;          /* ttl.c is deleting: stream records say the service did */
    char account[13];           /* the account id of ARNs: 12 digits ("000000000000") */
    int64_t transient_ms;       /* tables stay CREATING/UPDATING/DELETING this long; 0: not */
    struct fakedb__ghost *ghosts; /* deleted tables still DELETING (tables.c makes them) */
    struct fakedb__checkpointer *ckpt; /* with a file: checkpoints the WAL off the
                                          request path (store.c); NULL in memory */
} fakedb__store;

/* store.c (db->lock held) */
int fakedb__store_open(fakedb__store *db, fakedb_error *err);
void fakedb__store_close(fakedb__store *db);
sqlite3_stmt *fakedb__stmt(fakedb__store *db, const char *sql);
bool fakedb__key_from_row(sqlite3_stmt *st, fakedb__key *k);
int fakedb__tx_begin(fakedb__store *db);
int fakedb__tx_commit(fakedb__store *db);
void fakedb__tx_rollback(fakedb__store *db);
int fakedb__item_get(fakedb__store *db, const fakedb__table *t, const fakedb__key *k,
                     json_object **out);
/* The stored JSON of the item at k as it was written (*text, malloc'd; NULL when there is
 * none) and its DynamoDB size in bytes. */
int fakedb__item_get_text(fakedb__store *db, const fakedb__table *t, const fakedb__key *k, char **text,
                          int64_t *size);
int fakedb__item_write(fakedb__store *db, fakedb__table *t, const fakedb__key *k,
                       json_object *old_item, json_object *new_item);
int fakedb__item_remove(fakedb__store *db, fakedb__table *t, const fakedb__key *k,
                        json_object *old_item);
int fakedb__table_save(fakedb__store *db, fakedb__table *t);
/* Deletes t's entry and marks its rows for removal in the background
 * (fakedb__purge_step): a DeleteTable takes the same time whatever the table holds, and
 * t's id is not given to another table before its rows are gone (a file keeps the mark
 * across a restart). */
int fakedb__table_drop(fakedb__store *db, fakedb__table *t);
/* Items of deleted tables still to be removed. */
int64_t fakedb__purge_pending(fakedb__store *db);
int fakedb__index_fill(fakedb__store *db, fakedb__table *t, const fakedb__index *ix);
int fakedb__index_drop(fakedb__store *db, fakedb__table *t, const char *iname);
int fakedb__ttl_refresh(fakedb__store *db, fakedb__table *t);
int fakedb__store_reset(fakedb__store *db);
int fakedb__token_lookup(fakedb__store *db, const char *token, int64_t now_ms, char *digest,
                         size_t n);
int fakedb__token_save(fakedb__store *db, const char *token, const char *digest,
                       int64_t expires_ms);
int64_t fakedb__ttl_of(const fakedb__table *t, json_object *item);

/* A deleted table that is DELETING for a while (--delay-transient-statuses): DescribeTable
 * and ListTables still show it, CreateTable of its name is refused; its data is gone. */
typedef struct fakedb__ghost {
    char *name;
    json_object *desc;          /* owned: its TableDescription, TableStatus DELETING */
    int64_t until_ms;
    struct fakedb__ghost *next;
} fakedb__ghost;
void fakedb__ghost_free(fakedb__ghost *g);   /* schema.c */
void fakedb__ghosts_clear(fakedb__store *db); /* schema.c */

/* schema.c (db->lock held unless said) */
fakedb__table *fakedb__table_find(fakedb__store *db, const char *name);
void fakedb__table_free(fakedb__table *t);
fakedb__table *fakedb__table_from_spec(const char *name, json_object *spec);
void fakedb__tables_clear(fakedb__store *db); /* the DELETING ones too */
const fakedb__index *fakedb__index_find(const fakedb__table *t, const char *name);
/* A spec's AttributeType of `name` ('S', 'N', 'B'; 0 when not defined), and the
 * HASH and RANGE names of a KeySchema (NULL when absent). */
char fakedb__spec_attr_type(json_object *defs, const char *name);
void fakedb__spec_key_names(json_object *ks, const char **hash, const char **range);

/* stream_store.c: DynamoDB Streams, one shard per stream (db->lock held). A committed
 * write of a table with an enabled stream adds its record in store.c (fakedb__item_write,
 * fakedb__item_remove), inside the write's transaction; sequence numbers come from
 * db->stream_seq, which a stream's start and end (its shard's range) take one of too.
 * Records and disabled streams are kept FDB_STREAM_RETENTION_MS on db->clock. */
#define FDB_STREAM_RETENTION_MS (24LL * 3600 * 1000)
typedef struct fakedb__stream {
    int64_t id, tid;
    int view;                   /* FDB_STREAM_* */
    char arn[640], label[32], table[256], shard[64];
    char *key_schema;           /* owned: the table's KeySchema as JSON */
    int64_t created_ms, start_seq;
    int64_t end_seq;            /* 0 while enabled: the shard is open */
    int64_t disabled_ms;        /* 0 while enabled */
    int64_t trim_seq;           /* records up to this one were trimmed */
} fakedb__stream;

typedef struct fakedb__stream_rec {
    int64_t seq, created_ms, size;
    const char *event;          /* INSERT, MODIFY, REMOVE */
    const char *keys, *new_image, *old_image; /* JSON text; images NULL when not kept */
    bool by_ttl;
} fakedb__stream_rec;

const char *fakedb__stream_view_name(int view);
int fakedb__stream_view_parse(const char *s); /* FDB_STREAM_NONE when not a view type */
/* Enables a stream of view `view` on t (a new ARN), or disables t's enabled stream (its
 * shard closes; it stays readable until retention ends). In the caller's transaction. */
int fakedb__stream_enable(fakedb__store *db, fakedb__table *t, int view, const char *region);
int fakedb__stream_disable(fakedb__store *db, fakedb__table *t);
/* 1 with *out filled, 0 when no such stream, -1 on an error. */
int fakedb__stream_get(fakedb__store *db, const char *arn, fakedb__stream *out);
void fakedb__stream_clear(fakedb__stream *s);
/* Up to `max` streams in creation order, of table `table` (NULL: any), after the stream
 * `after_id` (0: from the first); *n set. Each must be cleared. */
int fakedb__stream_list(fakedb__store *db, const char *table, int64_t after_id, size_t max,
                        fakedb__stream *out, size_t *n);
/* Calls fn for each record of stream `sid` from sequence number `from` on, in order, at
 * most `limit`, until fn returns nonzero. */
int fakedb__stream_records(fakedb__store *db, int64_t sid, int64_t from, int limit,
                           int (*fn)(void *arg, const fakedb__stream_rec *rec), void *arg);
/* Drops the records older than retention (a stream's trim_seq follows) and the streams
 * disabled longer than retention; runs its own transaction. */
int fakedb__streams_trim(fakedb__store *db, int64_t now_ms);

/* store.c: removes up to 1,000 rows of a deleted table in a transaction of its own,
 * taking and releasing db->lock (the caller calls again while it answers 1, so that
 * requests run between the slices). 1: it removed some, 0: nothing is left, -1: sqlite
 * failed. */
int fakedb__purge_step(fakedb__store *db);

/* ttl.c: deletes the items whose time to live is due on db->clock; takes db->lock. */
int fakedb__ttl_sweep(fakedb__store *db);

#endif
