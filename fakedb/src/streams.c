/* streams.c: the DynamoDB Streams API (target DynamoDBStreams_20120810): ListStreams,
 * DescribeStream, GetShardIterator and GetRecords over the streams and records that
 * stream_store.c keeps. A stream has one shard. A shard iterator is self-contained:
 * "<stream ARN>|1|<hex: position, time issued, check>", so it needs no server state; it
 * expires 15 minutes after it was issued on the server's clock. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERATOR_TTL_MS (15LL * 60 * 1000)
#define MAX_RECORDS 1000
#define MAX_RECORD_BYTES (1024 * 1024)


/* A string member: absent is *out NULL, or DynamoDB's null error when required. */
static int str_param(json_object *req, const char *key, const char *what, bool required,
                     size_t min, size_t max, const char **out, fakedb__reply *r)
{
    json_object *v = fakedb__json_get(req, key);
    *out = NULL;
    if (!v) {
        if (required)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", what);
        return 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s", json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
                                                                    ? "NUMBER_VALUE cannot be converted to String"
                                                                    : "Unexpected value type in payload");
    const char *s = json_object_get_string(v);
    size_t n = strlen(s);
    if (n < min)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to %zu", s, what, min);
    if (n > max)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%.64s...' at '%s' failed to satisfy constraint: Member must have length less than or equal to %zu", s, what, max);
    *out = s;
    return 0;
}

static int limit_param(json_object *req, int64_t dflt, int64_t max, int64_t *out, fakedb__reply *r)
{
    *out = dflt;
    if (fakedb__json_int_param(req, "Limit", out, &r->err))
        return -1;
    if (*out < 1)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%lld' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", (long long)*out);
    if (*out > max)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%lld' at 'limit' failed to satisfy constraint: Member must have value less than or equal to %lld", (long long)*out, (long long)max);
    return 0;
}

static void seq_text(int64_t seq, char out[32])
{
    snprintf(out, 32, "%021lld", (long long)seq);
}

static int stream_not_found(fakedb__reply *r, const char *arn)
{
    return fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Stream: %s not found", arn);
}

static bool in_set(char c, const char *set)
{
    return c && strchr(set, c);
}

/* Whether arn has a stream ARN's form, arn:PARTITION:dynamodb:REGION:ACCOUNT:table/
 * TABLE/stream/LABEL (a 12-digit account, a table name's characters and length, the
 * label a time to the millisecond, as stream_store.c writes it). */
static bool arn_well_formed(const char *arn)
{
    static const char lower[] = "abcdefghijklmnopqrstuvwxyz0123456789-";
    static const char name[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
    const char *p = arn;
    if (strncmp(p, "arn:aws", 7))
        return false;
    for (p += 7; in_set(*p, lower); p++)
        ;
    if (strncmp(p, ":dynamodb:", 10))
        return false;
    const char *region = p += 10;
    while (in_set(*p, lower))
        p++;
    if (p == region || *p++ != ':')
        return false;
    for (int i = 0; i < 12; i++, p++)
        if (*p < '0' || *p > '9')
            return false;
    if (strncmp(p, ":table/", 7))
        return false;
    const char *table = p += 7;
    while (in_set(*p, name))
        p++;
    if (p - table < 3 || p - table > 255 || strncmp(p, "/stream/", 8))
        return false;
    p += 8;
    /* YYYY-MM-DDTHH:MM:SS.mmm */
    static const char form[] = "dddd-dd-ddTdd:dd:dd.ddd";
    for (size_t i = 0; i < sizeof form - 1; i++)
        if (form[i] == 'd' ? (p[i] < '0' || p[i] > '9') : p[i] != form[i])
            return false;
    return p[sizeof form - 1] == 0;
}

/* Finds the stream after trimming what retention let go; 1 found, else r filled: a
 * ValidationException for what is no stream ARN, as DynamoDB Streams answers ("Invalid
 * StreamArn"), ResourceNotFoundException for a stream ARN that names no stream. */
static int find_stream(fakedb__store *db, const char *arn, fakedb__stream *s, fakedb__reply *r)
{
    if (!arn_well_formed(arn))
        return fakedb__reply_fail_validation(r, "Invalid StreamArn");
    fakedb__streams_trim(db, fakedb__now_ms(db->clock));
    int found = fakedb__stream_get(db, arn, s);
    if (found < 0)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    if (found == 0)
        return stream_not_found(r, arn);
    return 1;
}

/* Whether records from `pos` on were trimmed away. */
static bool trimmed(const fakedb__stream *s, int64_t pos)
{
    return s->trim_seq > s->start_seq && pos <= s->trim_seq;
}

static int trimmed_fail(fakedb__reply *r)
{
    return fakedb__reply_fail(r, FDB_E_TRIMMED, "The data you are trying to access has been trimmed.");
}

/* ---- ListStreams ---- */

int fakedb__op_list_streams(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *table, *start;
    int64_t limit;
    if (str_param(req, "TableName", "tableName", false, 3, 255, &table, r) ||
        (table && fakedb__valid_name(table, "tableName", r)) ||
        str_param(req, "ExclusiveStartStreamArn", "exclusiveStartStreamArn", false, 37, 1024, &start, r) ||
        limit_param(req, 100, 100, &limit, r))
        return -1;
    fakedb__stream *list = calloc((size_t)limit + 1, sizeof *list);
    if (!list)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    size_t n = 0;
    int rc = 0;
    pthread_mutex_lock(&db->lock);
    int64_t after = 0;
    if (start) {
        fakedb__stream s;
        rc = find_stream(db, start, &s, r) == 1 ? 0 : -1;
        if (rc == 0) {
            after = s.id;
            fakedb__stream_clear(&s);
        }
    } else {
        fakedb__streams_trim(db, fakedb__now_ms(db->clock));
    }
    if (rc == 0 && fakedb__stream_list(db, table, after, (size_t)limit + 1, list, &n))
        rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    pthread_mutex_unlock(&db->lock);
    if (rc == 0) {
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < n && i < (size_t)limit; i++) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "StreamArn", json_object_new_string(list[i].arn));
            json_object_object_add(o, "TableName", json_object_new_string(list[i].table));
            json_object_object_add(o, "StreamLabel", json_object_new_string(list[i].label));
            json_object_array_add(arr, o);
        }
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Streams", arr);
        if (n > (size_t)limit)
            json_object_object_add(r->body, "LastEvaluatedStreamArn", json_object_new_string(list[limit - 1].arn));
    }
    for (size_t i = 0; i < n; i++)
        fakedb__stream_clear(&list[i]);
    free(list);
    return rc;
}

/* ---- DescribeStream ---- */

/* ShardFilter {Type: CHILD_SHARDS, ShardId}: *child_of is the parent shard named, NULL
 * without a filter. The API's shape has both members optional; a filter without both
 * filters nothing DynamoDB documents, so it is refused. */
static int shard_filter(json_object *req, const char **child_of, fakedb__reply *r)
{
    json_object *f = fakedb__json_get(req, "ShardFilter");
    *child_of = NULL;
    if (!f)
        return 0;
    if (!json_object_is_type(f, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Start of structure or map found where not expected.");
    const char *type, *shard;
    if (str_param(f, "Type", "shardFilter.type", false, 0, 64, &type, r) ||
        str_param(f, "ShardId", "shardFilter.shardId", false, 28, 65, &shard, r))
        return -1;
    if (type && strcmp(type, "CHILD_SHARDS"))
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'shardFilter.type' failed to satisfy constraint: Member must satisfy enum value set: [CHILD_SHARDS]", type);
    if (!type || !shard)
        return fakedb__reply_fail_validation(r, "ShardFilter needs both Type (CHILD_SHARDS) and ShardId");
    *child_of = shard;
    return 0;
}

int fakedb__op_describe_stream(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *arn, *start;
    int64_t limit;
    const char *child_of = NULL;
    if (str_param(req, "StreamArn", "streamArn", true, 37, 1024, &arn, r) ||
        str_param(req, "ExclusiveStartShardId", "exclusiveStartShardId", false, 28, 65, &start, r) ||
        limit_param(req, 100, 100, &limit, r) || shard_filter(req, &child_of, r))
        return -1;
    fakedb__stream s;
    pthread_mutex_lock(&db->lock);
    int rc = find_stream(db, arn, &s, r) == 1 ? 0 : -1;
    pthread_mutex_unlock(&db->lock);
    if (rc)
        return rc;
    json_object *d = json_object_new_object();
    json_object_object_add(d, "StreamArn", json_object_new_string(s.arn));
    json_object_object_add(d, "StreamLabel", json_object_new_string(s.label));
    json_object_object_add(d, "StreamStatus", json_object_new_string(s.end_seq ? "DISABLED" : "ENABLED"));
    json_object_object_add(d, "StreamViewType", json_object_new_string(fakedb__stream_view_name(s.view)));
    json_object_object_add(d, "CreationRequestDateTime", json_object_new_double((double)s.created_ms / 1000.0));
    json_object_object_add(d, "TableName", json_object_new_string(s.table));
    json_object *ks = fakedb__json_from_text(s.key_schema);
    json_object_object_add(d, "KeySchema", ks ? ks : json_object_new_array());
    json_object *shards = json_object_new_array();
    /* A stream's one shard never splits: it is no shard's child, and has none. */
    if (!child_of && (!start || strcmp(start, s.shard) < 0)) {
        char a[32], b[32];
        json_object *sh = json_object_new_object(), *range = json_object_new_object();
        json_object_object_add(sh, "ShardId", json_object_new_string(s.shard));
        seq_text(s.start_seq, a);
        json_object_object_add(range, "StartingSequenceNumber", json_object_new_string(a));
        if (s.end_seq) {
            seq_text(s.end_seq, b);
            json_object_object_add(range, "EndingSequenceNumber", json_object_new_string(b));
        }
        json_object_object_add(sh, "SequenceNumberRange", range);
        json_object_array_add(shards, sh);
    }
    json_object_object_add(d, "Shards", shards);
    r->body = json_object_new_object();
    json_object_object_add(r->body, "StreamDescription", d);
    fakedb__stream_clear(&s);
    return 0;
}

/* ---- shard iterators ---- */

static uint32_t iterator_check(const char *arn, uint64_t pos, uint64_t issued)
{
    uint32_t h = 2166136261u;
    for (const char *p = arn; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    for (int i = 0; i < 8; i++) {
        h = (h ^ (uint8_t)(pos >> (8 * i))) * 16777619u;
        h = (h ^ (uint8_t)(issued >> (8 * i))) * 16777619u;
    }
    return h;
}

static json_object *iterator_make(const char *arn, int64_t pos, int64_t issued)
{
    char buf[1200];
    snprintf(buf, sizeof buf, "%s|1|%016llx%016llx%08x", arn, (unsigned long long)pos,
             (unsigned long long)issued, iterator_check(arn, (uint64_t)pos, (uint64_t)issued));
    return json_object_new_string(buf);
}

/* Reads an iterator back: its stream ARN (into arn), position and time issued. */
static bool iterator_parse(const char *it, char *arn, size_t cap, int64_t *pos, int64_t *issued)
{
    const char *bar = strrchr(it, '|');
    size_t alen;
    if (!bar || strlen(bar + 1) != 40 || bar - it < 3 || strncmp(bar - 2, "|1", 2))
        return false;
    alen = (size_t)(bar - 2 - it);
    if (alen == 0 || alen >= cap)
        return false;
    memcpy(arn, it, alen);
    arn[alen] = 0;
    char hex[17];
    unsigned long long p, t;
    unsigned int check;
    memcpy(hex, bar + 1, 16);
    hex[16] = 0;
    if (sscanf(hex, "%16llx", &p) != 1)
        return false;
    memcpy(hex, bar + 17, 16);
    if (sscanf(hex, "%16llx", &t) != 1 || sscanf(bar + 33, "%8x", &check) != 1)
        return false;
    for (const char *c = bar + 1; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    if (check != iterator_check(arn, p, t) || p > INT64_MAX || t > INT64_MAX)
        return false;
    *pos = (int64_t)p;
    *issued = (int64_t)t;
    return true;
}

static const char *const k_iter_types[] = { "TRIM_HORIZON", "LATEST", "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER", NULL };

int fakedb__op_get_shard_iterator(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *arn, *shard, *type, *seqs;
    if (str_param(req, "StreamArn", "streamArn", true, 37, 1024, &arn, r) ||
        str_param(req, "ShardId", "shardId", true, 28, 65, &shard, r) ||
        str_param(req, "ShardIteratorType", "shardIteratorType", true, 0, 64, &type, r) ||
        str_param(req, "SequenceNumber", "sequenceNumber", false, 21, 40, &seqs, r))
        return -1;
    int kind = -1;
    for (int i = 0; k_iter_types[i]; i++)
        if (!strcmp(type, k_iter_types[i]))
            kind = i;
    if (kind < 0)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'shardIteratorType' failed to satisfy constraint: Member must satisfy enum value set: [TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER]", type);
    bool by_seq = kind >= 2;
    if (by_seq && !seqs)
        return fakedb__reply_fail_validation(r, "A SequenceNumber is required for ShardIteratorType %s", type);
    if (!by_seq && seqs)
        return fakedb__reply_fail_validation(r, "A SequenceNumber may not be given with ShardIteratorType %s", type);
    int64_t seq = 0;
    if (seqs) {
        for (const char *c = seqs; *c; c++)
            if (*c < '0' || *c > '9')
                return fakedb__reply_fail_validation(r, "Invalid SequenceNumber: %s", seqs);
        const char *c = seqs;
        while (*c == '0' && c[1])
            c++;
        if (strlen(c) > 18)     /* past fakedb's numbers: in no shard */
            return fakedb__reply_fail_validation(r, "Invalid SequenceNumber for the shard: %s", seqs);
        seq = strtoll(c, NULL, 10);
    }
    fakedb__stream s;
    pthread_mutex_lock(&db->lock);
    int rc = find_stream(db, arn, &s, r) == 1 ? 0 : -1;
    int64_t next_seq = db->stream_seq;
    pthread_mutex_unlock(&db->lock);
    if (rc)
        return rc;
    int64_t pos = 0;
    if (strcmp(shard, s.shard)) {
        rc = fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Shard does not exist");
    } else if (kind == 0) {
        pos = (s.trim_seq > s.start_seq ? s.trim_seq : s.start_seq) + 1;
    } else if (kind == 1) {
        pos = s.end_seq ? s.end_seq + 1 : next_seq;
    } else if (seq < s.start_seq || (s.end_seq && seq > s.end_seq)) {
        rc = fakedb__reply_fail_validation(r, "Invalid SequenceNumber for the shard: %s", seqs);
    } else {
        pos = kind == 3 ? seq + 1 : seq;
        if (trimmed(&s, pos))
            rc = trimmed_fail(r);
    }
    if (rc == 0) {
        r->body = json_object_new_object();
        json_object_object_add(r->body, "ShardIterator", iterator_make(s.arn, pos, fakedb__now_ms(db->clock)));
    }
    fakedb__stream_clear(&s);
    return rc;
}

/* ---- GetRecords ---- */

typedef struct gather {
    json_object *records;
    const fakedb__stream *s;
    int64_t limit, bytes, last_seq;
    int count;
    bool more;
} gather;

static json_object *image(const char *text)
{
    return text ? fakedb__json_from_text(text) : NULL;
}

static int add_record(void *arg, const fakedb__stream_rec *rec)
{
    gather *g = arg;
    if (g->count == g->limit || (g->count > 0 && g->bytes + rec->size > MAX_RECORD_BYTES)) {
        g->more = true;
        return 1;
    }
    char seq[32], id[40];
    seq_text(rec->seq, seq);
    uint64_t x = (uint64_t)rec->seq * 0x9E3779B97F4A7C15ull ^ (uint64_t)g->s->id;
    uint64_t y = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
    snprintf(id, sizeof id, "%016llx%016llx", (unsigned long long)x, (unsigned long long)(y ^ (y >> 27)));
    json_object *ddb = json_object_new_object();
    json_object_object_add(ddb, "ApproximateCreationDateTime", json_object_new_int64(rec->created_ms / 1000));
    json_object_object_add(ddb, "Keys", image(rec->keys));
    json_object *ni = image(rec->new_image), *oi = image(rec->old_image);
    if (ni)
        json_object_object_add(ddb, "NewImage", ni);
    if (oi)
        json_object_object_add(ddb, "OldImage", oi);
    json_object_object_add(ddb, "SequenceNumber", json_object_new_string(seq));
    json_object_object_add(ddb, "SizeBytes", json_object_new_int64(rec->size));
    json_object_object_add(ddb, "StreamViewType", json_object_new_string(fakedb__stream_view_name(g->s->view)));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "eventID", json_object_new_string(id));
    json_object_object_add(o, "eventName", json_object_new_string(rec->event));
    json_object_object_add(o, "eventVersion", json_object_new_string("1.1"));
    json_object_object_add(o, "eventSource", json_object_new_string("aws:dynamodb"));
    /* the region of the stream's ARN: arn:aws:dynamodb:REGION:... */
    const char *region = g->s->arn + strlen("arn:aws:dynamodb:");
    size_t region_len = strcspn(region, ":");
    json_object_object_add(o, "awsRegion", json_object_new_string_len(region, (int)region_len));
    json_object_object_add(o, "dynamodb", ddb);
    if (rec->by_ttl) {
        json_object *u = json_object_new_object();
        json_object_object_add(u, "PrincipalId", json_object_new_string("dynamodb.amazonaws.com"));
        json_object_object_add(u, "Type", json_object_new_string("Service"));
        json_object_object_add(o, "userIdentity", u);
    }
    json_object_array_add(g->records, o);
    g->count++;
    g->bytes += rec->size;
    g->last_seq = rec->seq;
    return 0;
}

int fakedb__op_get_records(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *it;
    int64_t limit;
    if (str_param(req, "ShardIterator", "shardIterator", true, 1, 2048, &it, r) ||
        limit_param(req, MAX_RECORDS, INT32_MAX, &limit, r))
        return -1;
    /* the API's shape has no maximum: the service refuses more than 1000 with
     * LimitExceededException, in the words of the Streams API reference (DynamoDB Local
     * answers a ValidationException: docs/fakedb.md) */
    if (limit > MAX_RECORDS)
        return fakedb__reply_fail(r, FDB_E_LIMIT, "GetRecords was called with a value of more than 1000 for the limit request parameter");
    char arn[1100];
    int64_t pos, issued;
    if (!iterator_parse(it, arn, sizeof arn, &pos, &issued))
        return fakedb__reply_fail_validation(r, "Invalid ShardIterator");
    fakedb__stream s;
    memset(&s, 0, sizeof s);
    gather g = { .limit = limit, .s = &s };
    pthread_mutex_lock(&db->lock);
    int64_t now = fakedb__now_ms(db->clock);
    int rc = 0;
    if (now - issued > ITERATOR_TTL_MS)
        rc = fakedb__reply_fail(r, FDB_E_EXPIRED_ITERATOR, "The provided iterator exceeds the maximum age allowed.");
    else if (find_stream(db, arn, &s, r) != 1)
        rc = -1;
    else if (trimmed(&s, pos))
        rc = trimmed_fail(r);
    if (rc == 0) {
        g.records = json_object_new_array();
        if (fakedb__stream_records(db, s.id, pos, (int)limit + 1, add_record, &g))
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    pthread_mutex_unlock(&db->lock);
    if (rc == 0) {
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Records", g.records);
        g.records = NULL;
        int64_t next = g.count ? g.last_seq + 1 : pos;
        /* a closed shard read to its end has no next iterator */
        if (!s.end_seq || g.more)
            json_object_object_add(r->body, "NextShardIterator", iterator_make(s.arn, next, now));
    }
    json_object_put(g.records);
    fakedb__stream_clear(&s);
    return rc;
}
