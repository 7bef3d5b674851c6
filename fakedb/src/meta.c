/* meta.c: the operations tools call about a table rather than its items, often at
 * start-up: TagResource, UntagResource, ListTagsOfResource (tags kept per table, also
 * from CreateTable's Tags), DescribeContinuousBackups and UpdateContinuousBackups
 * (point-in-time recovery kept per table), DescribeLimits and DescribeEndpoints.
 *
 * Tags and the recovery setting live in the table's stored spec ("Tags",
 * "PointInTimeRecovery"), so they survive restarts with a file and go with the table
 * when it is deleted; DescribeTable does not show them, as DynamoDB does not. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FDB_E_TABLE_NOT_FOUND FDB_NS_DDB "TableNotFoundException"

#define MAX_TAGS 50
#define TAG_KEY_MAX 128     /* Unicode characters */
#define TAG_VALUE_MAX 256
#define TAGS_PAGE 50        /* ListTagsOfResource's page: every tag a table can have */
#define PITR_DEFAULT_DAYS 35
#define PITR_LAG_MS (5 * 60 * 1000)     /* LatestRestorableDateTime trails the clock */

/* ---- tags ---- */

/* Characters, not bytes: the body is valid UTF-8 (protocol.c checks it). */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xC0) != 0x80)
            n++;
    return n;
}

/* DynamoDB's tag alphabet: letters, numbers, white space and + - = . _ : /. Every
 * character outside ASCII is taken as a letter (fakedb has no Unicode tables); the NUL
 * a request spells \u0000 arrives as C0 80 and is refused. */
static bool tag_text_ok(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c == 0xC0)
            return false;
        if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            continue;
        if (!strchr(" +-=._:/", c))
            return false;
    }
    return true;
}

static bool reserved_key(const char *k)
{
    return !strncasecmp(k, "aws:", 4);
}

static int serialization(fakedb__reply *r, json_object *v, const char *want)
{
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "NUMBER_VALUE cannot be converted to %s", want);
    if (json_object_is_type(v, json_type_boolean) && !strcmp(want, "String"))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to String",
                                  json_object_get_boolean(v) ? "TRUE_VALUE" : "FALSE_VALUE");
    return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
}

/* A string member, or NULL when absent; -1 with r filled when of another type. */
static int str_member(json_object *o, const char *key, const char **out, fakedb__reply *r)
{
    json_object *v = fakedb__json_get(o, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return serialization(r, v, "String");
    *out = json_object_get_string(v);
    return 0;
}

/* A list member: NULL when absent; -1 when not a list. */
static int list_member(json_object *o, const char *key, json_object **out, fakedb__reply *r)
{
    json_object *v = fakedb__json_get(o, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_array))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    *out = v;
    return 0;
}

/* The members of one Tag, checked as the service's model does: Key 1..128 characters,
 * Value 0..256, both required; then the alphabet and the reserved prefix. */
static int check_tag(json_object *tag, size_t i, const char *list, fakedb__reply *r)
{
    const char *k, *v;
    if (!json_object_is_type(tag, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    if (str_member(tag, "Key", &k, r) || str_member(tag, "Value", &v, r))
        return -1;
    if (!k)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at '%s.%zu.member.key' failed to satisfy constraint: Member must not be null",
                                             list, i + 1);
    if (!v)
        return fakedb__reply_fail_validation(r, "The Tag Value provided is invalid, Value: null");
    size_t kn = utf8_chars(k), vn = utf8_chars(v);
    if (kn < 1 || kn > TAG_KEY_MAX)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%.200s' at '%s.%zu.member.key' failed to satisfy constraint: Member must have length %s",
                                             k, list, i + 1, kn < 1 ? "greater than or equal to 1" : "less than or equal to 128");
    if (vn > TAG_VALUE_MAX)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%.200s' at '%s.%zu.member.value' failed to satisfy constraint: Member must have length less than or equal to 256",
                                             v, list, i + 1);
    return 0;
}

/* The service's checks of a list of tags, with AWS's texts (see docs/fakedb.md):
 * the alphabet, the reserved prefix, a key given twice. */
static int check_tag_texts(json_object *tags, fakedb__reply *r)
{
    size_t n = json_object_array_length(tags);
    for (size_t i = 0; i < n; i++) {
        json_object *tag = json_object_array_get_idx(tags, i);
        const char *k = fakedb__json_str(tag, "Key"), *v = fakedb__json_str(tag, "Value");
        if (!tag_text_ok(k))
            return fakedb__reply_fail_validation(r, "The Tag Key provided is invalid, Key: %.200s", k);
        if (!tag_text_ok(v))
            return fakedb__reply_fail_validation(r, "The Tag Value provided is invalid, Value: %.300s", v);
        if (reserved_key(k))
            return fakedb__reply_fail_validation(r, "Tag Key cannot be prefixed with aws:, Key: %.200s", k);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(k, fakedb__json_str(json_object_array_get_idx(tags, j), "Key")))
                return fakedb__reply_fail_validation(r, "Duplicate Tag Keys provided as input: Duplicate Tag Key found %.200s", k);
    }
    return 0;
}

static int too_many_tags(fakedb__reply *r)
{
    return fakedb__reply_fail_validation(r, "Number of Tags exceed the current limit for the provided ResourceArn");
}

static int cmp_tags(const void *a, const void *b)
{
    json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
    return strcmp(fakedb__json_str(x, "Key"), fakedb__json_str(y, "Key"));
}

/* The tags of `cur` with those of `add` set (a key tagged again takes the new value)
 * and the keys of `drop` removed, sorted by key. A new array. */
static json_object *merge_tags(json_object *cur, json_object *add, json_object *drop)
{
    json_object *byk = json_object_new_object();
    json_object *lists[2] = { cur, add };
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; lists[l] && i < json_object_array_length(lists[l]); i++) {
            json_object *t = json_object_array_get_idx(lists[l], i);
            json_object *o = json_object_new_object();
            json_object_object_add(o, "Key", json_object_new_string(fakedb__json_str(t, "Key")));
            json_object_object_add(o, "Value", json_object_new_string(fakedb__json_str(t, "Value")));
            json_object_object_add(byk, fakedb__json_str(t, "Key"), o);
        }
    for (size_t i = 0; drop && i < json_object_array_length(drop); i++)
        json_object_object_del(byk, json_object_get_string(json_object_array_get_idx(drop, i)));
    json_object *out = json_object_new_array();
    json_object_object_foreach(byk, key, val) {
        (void)key;
        json_object_array_add(out, json_object_get(val));
    }
    json_object_put(byk);
    json_object_array_sort(out, cmp_tags);
    return out;
}

json_object *fakedb__tags_for_create(json_object *req, fakedb__reply *r)
{
    json_object *tags;
    if (list_member(req, "Tags", &tags, r))
        return NULL;
    if (!tags)
        return json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(tags); i++)
        if (check_tag(json_object_array_get_idx(tags, i), i, "tags", r))
            return NULL;
    if (check_tag_texts(tags, r))
        return NULL;
    json_object *out = merge_tags(NULL, tags, NULL);
    if (json_object_array_length(out) > MAX_TAGS) {
        json_object_put(out);
        too_many_tags(r);
        return NULL;
    }
    return out;
}

/* What arn_table finds wrong with an ARN: each has its own text at AWS. */
enum { ARN_OK, ARN_NO_PREFIX, ARN_NOT_DYNAMODB, ARN_NOT_TABLE, ARN_BAD_TABLE, ARN_STREAM };

/* The table an ARN names: arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME, with any
 * region and account (fakedb is one account in one region). Fills `name` and returns
 * ARN_OK, or what is wrong. */
static int arn_table(const char *arn, char *name, size_t cap)
{
    const char *p = arn;
    if (strncmp(p, "arn:", 4))
        return ARN_NO_PREFIX;
    p += 4;
    const char *part = p;
    if (!(p = strchr(p, ':')) || p == part)
        return ARN_NOT_DYNAMODB;
    p++;
    if (strncmp(p, "dynamodb:", 9))
        return ARN_NOT_DYNAMODB;
    p += 9;
    const char *region = p;
    if (!(p = strchr(p, ':')) || p == region)
        return ARN_BAD_TABLE;
    p++;
    const char *acct = p;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == acct || *p != ':')
        return ARN_BAD_TABLE;
    p++;
    if (strncmp(p, "table/", 6))
        return ARN_NOT_TABLE;
    p += 6;
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (slash && !strncmp(slash, "/stream/", 8))
        return ARN_STREAM;
    if (slash)
        return ARN_NOT_TABLE;
    if (n < 3 || n > 255 || n >= cap)
        return ARN_BAD_TABLE;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return ARN_BAD_TABLE;
    }
    memcpy(name, p, n + 1);
    return ARN_OK;
}

/* ResourceArn checked in DynamoDB's order: present, then a table's ARN. */
static int resource_arn(json_object *req, const char **arn, fakedb__reply *r)
{
    if (str_member(req, "ResourceArn", arn, r))
        return -1;
    if (!*arn)
        return fakedb__reply_fail_validation(r, "Invalid TableArn");
    return 0;
}

static int arn_format(const char *arn, char *name, size_t cap, fakedb__reply *r)
{
    switch (arn_table(arn, name, cap)) {
    case ARN_OK:
        return 0;
    case ARN_NO_PREFIX:
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: ARNs must start with 'arn:': %.900s", arn);
    case ARN_NOT_DYNAMODB:
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Provided Arn is not a DynamoDB resource arn: %.900s", arn);
    case ARN_NOT_TABLE:
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted. Provided resource arn: %.900s", arn);
    case ARN_STREAM:    /* AWS tags streams too; fakedb has none to tag */
        return fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: ResourcArn: %.900s not found", arn);
    default:
        return fakedb__reply_fail_validation(r, "Invalid TableArn: Invalid ResourceArn provided as input %.900s", arn);
    }
}

/* The table of a checked ARN; db->lock held. */
static fakedb__table *arn_lookup(fakedb__store *db, const char *arn, const char *name, fakedb__reply *r)
{
    fakedb__table *t = fakedb__table_find(db, name);
    if (!t)
        fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: ResourcArn: %.900s not found", arn);
    return t;
}

/* Replaces the table's tags with `tags` (taken) and saves the spec; db->lock held. */
static int save_tags(fakedb__store *db, fakedb__table *t, json_object *tags, fakedb__reply *r)
{
    json_object *old = json_object_get(fakedb__json_get(t->spec, "Tags"));
    json_object_object_add(t->spec, "Tags", tags);
    if (fakedb__tx_begin(db) || fakedb__table_save(db, t) || fakedb__tx_commit(db)) {
        fakedb__tx_rollback(db);
        if (old)
            json_object_object_add(t->spec, "Tags", old);
        else
            json_object_object_del(t->spec, "Tags");
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    json_object_put(old);
    return 0;
}

int fakedb__op_tag_resource(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *arn;
    char name[256];
    json_object *tags;
    if (resource_arn(req, &arn, r) || list_member(req, "Tags", &tags, r))
        return -1;
    if (!tags)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null");
    for (size_t i = 0; i < json_object_array_length(tags); i++)
        if (check_tag(json_object_array_get_idx(tags, i), i, "tags", r))
            return -1;
    if (arn_format(arn, name, sizeof name, r))
        return -1;
    if (json_object_array_length(tags) == 0)
        return fakedb__reply_fail_validation(r, "Atleast one Tag needs to be provided as Input.");
    if (check_tag_texts(tags, r))
        return -1;
    pthread_mutex_lock(&db->lock);
    int rc = -1;
    fakedb__table *t = arn_lookup(db, arn, name, r);
    if (t) {
        json_object *merged = merge_tags(fakedb__json_get(t->spec, "Tags"), tags, NULL);
        if (json_object_array_length(merged) > MAX_TAGS) {
            json_object_put(merged);
            too_many_tags(r);
        } else {
            rc = save_tags(db, t, merged, r);
        }
    }
    pthread_mutex_unlock(&db->lock);
    if (rc == 0)
        r->body = json_object_new_object();
    return rc;
}

int fakedb__op_untag_resource(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *arn;
    char name[256];
    json_object *keys;
    if (resource_arn(req, &arn, r) || list_member(req, "TagKeys", &keys, r))
        return -1;
    if (!keys)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'tagKeys' failed to satisfy constraint: Member must not be null");
    size_t n = json_object_array_length(keys);
    for (size_t i = 0; i < n; i++) {
        json_object *k = json_object_array_get_idx(keys, i);
        if (!k || !json_object_is_type(k, json_type_string))
            return k ? serialization(r, k, "String")
                     : fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'tagKeys.%zu.member' failed to satisfy constraint: Member must not be null", i + 1);
        size_t kn = utf8_chars(json_object_get_string(k));
        if (kn < 1 || kn > TAG_KEY_MAX)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%.200s' at 'tagKeys.%zu.member' failed to satisfy constraint: Member must have length %s",
                                                 json_object_get_string(k), i + 1, kn < 1 ? "greater than or equal to 1" : "less than or equal to 128");
    }
    if (arn_format(arn, name, sizeof name, r))
        return -1;
    if (n == 0)
        return fakedb__reply_fail_validation(r, "Atleast one Tag Key needs to be provided as Input.");
    for (size_t i = 0; i < n; i++)
        if (reserved_key(json_object_get_string(json_object_array_get_idx(keys, i))))
            return fakedb__reply_fail_validation(r, "Tag Key cannot be prefixed with aws:, Key: %.200s", json_object_get_string(json_object_array_get_idx(keys, i)));
    pthread_mutex_lock(&db->lock);
    int rc = -1;
    fakedb__table *t = arn_lookup(db, arn, name, r);
    if (t)
        rc = save_tags(db, t, merge_tags(fakedb__json_get(t->spec, "Tags"), NULL, keys), r);
    pthread_mutex_unlock(&db->lock);
    if (rc == 0)
        r->body = json_object_new_object();
    return rc;
}

int fakedb__op_list_tags(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *arn, *next;
    char name[256];
    if (resource_arn(req, &arn, r) || str_member(req, "NextToken", &next, r) ||
        arn_format(arn, name, sizeof name, r))
        return -1;
    pthread_mutex_lock(&db->lock);
    fakedb__table *t = arn_lookup(db, arn, name, r);
    if (t) {
        /* Pages in key order; a NextToken is the last key of the page before. */
        json_object *all = fakedb__json_get(t->spec, "Tags");
        json_object *out = json_object_new_array();
        size_t n = all ? json_object_array_length(all) : 0, i = 0;
        while (next && i < n && strcmp(fakedb__json_str(json_object_array_get_idx(all, i), "Key"), next) <= 0)
            i++;
        for (; i < n && json_object_array_length(out) < TAGS_PAGE; i++)
            json_object_array_add(out, fakedb__json_copy(json_object_array_get_idx(all, i)));
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Tags", out);
        if (i < n)
            json_object_object_add(r->body, "NextToken",
                                   json_object_new_string(fakedb__json_str(json_object_array_get_idx(all, i - 1), "Key")));
    }
    pthread_mutex_unlock(&db->lock);
    return t ? 0 : -1;
}

/* ---- continuous backups ---- */

/* The table TableName names (a name or a table's ARN); TableNotFoundException as
 * DynamoDB answers these two operations. db->lock held. */
static fakedb__table *backup_table(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *tn;
    if (str_member(req, "TableName", &tn, r))
        return NULL;
    if (!tn) {
        fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null");
        return NULL;
    }
    size_t n = strlen(tn);
    if (n < 1 || n > 1024) {
        fakedb__reply_fail_validation(r, "1 validation error detected: Value '%.200s' at 'tableName' failed to satisfy constraint: Member must have length %s",
                                      tn, n < 1 ? "greater than or equal to 1" : "less than or equal to 1024");
        return NULL;
    }
    char name[256];
    const char *look = tn;
    if (!strncmp(tn, "arn:", 4))
        look = arn_table(tn, name, sizeof name) == ARN_OK ? name : NULL;
    fakedb__table *t = look ? fakedb__table_find(db, look) : NULL;
    if (!t)
        fakedb__reply_fail(r, FDB_E_TABLE_NOT_FOUND, "Table not found: %.900s", tn);
    return t;
}

static double seconds(int64_t ms)
{
    return (double)ms / 1000.0;
}

static json_object *backups_description(fakedb__store *db, fakedb__table *t)
{
    json_object *p = fakedb__json_get(t->spec, "PointInTimeRecovery");
    json_object *d = json_object_new_object(), *pd = json_object_new_object();
    json_object_object_add(d, "ContinuousBackupsStatus", json_object_new_string("ENABLED"));
    if (p) {
        int64_t now = fakedb__now_ms(db->clock);
        int64_t since = json_object_get_int64(fakedb__json_get(p, "EnabledMs"));
        int64_t days = json_object_get_int64(fakedb__json_get(p, "RecoveryPeriodInDays"));
        int64_t earliest = now - days * 86400000;
        if (earliest < since)
            earliest = since;
        int64_t latest = now - PITR_LAG_MS;
        if (latest < earliest)
            latest = earliest;
        json_object_object_add(pd, "PointInTimeRecoveryStatus", json_object_new_string("ENABLED"));
        json_object_object_add(pd, "RecoveryPeriodInDays", json_object_new_int64(days));
        json_object_object_add(pd, "EarliestRestorableDateTime", json_object_new_double(seconds(earliest)));
        json_object_object_add(pd, "LatestRestorableDateTime", json_object_new_double(seconds(latest)));
    } else {
        json_object_object_add(pd, "PointInTimeRecoveryStatus", json_object_new_string("DISABLED"));
    }
    json_object_object_add(d, "PointInTimeRecoveryDescription", pd);
    return d;
}

int fakedb__op_describe_backups(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    pthread_mutex_lock(&db->lock);
    fakedb__table *t = backup_table(db, req, r);
    if (t) {
        r->body = json_object_new_object();
        json_object_object_add(r->body, "ContinuousBackupsDescription", backups_description(db, t));
    }
    pthread_mutex_unlock(&db->lock);
    return t ? 0 : -1;
}

int fakedb__op_update_backups(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *spec = fakedb__json_get(req, "PointInTimeRecoverySpecification");
    if (!spec)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'pointInTimeRecoverySpecification' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(spec, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    json_object *en = fakedb__json_get(spec, "PointInTimeRecoveryEnabled");
    if (!en)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'pointInTimeRecoverySpecification.pointInTimeRecoveryEnabled' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(en, json_type_boolean))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to Boolean",
                                  json_object_is_type(en, json_type_string) ? "STRING_VALUE"
                                  : json_object_is_type(en, json_type_int) || json_object_is_type(en, json_type_double) ? "NUMBER_VALUE"
                                                                                                                       : "Value");
    int64_t days = PITR_DEFAULT_DAYS;
    bool has_days = fakedb__json_get(spec, "RecoveryPeriodInDays") != NULL;
    if (fakedb__json_int_param(spec, "RecoveryPeriodInDays", &days, &r->err))
        return -1;
    if (days < 1 || days > 35)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%lld' at 'pointInTimeRecoverySpecification.recoveryPeriodInDays' failed to satisfy constraint: Member must have value %s",
                                             (long long)days, days < 1 ? "greater than or equal to 1" : "less than or equal to 35");
    bool enable = json_object_get_boolean(en);
    if (!enable && has_days)
        return fakedb__reply_fail_validation(r, "Invalid Request: Cannot specify RecoveryPeriodInDays when disabling point-in-time recovery.");
    pthread_mutex_lock(&db->lock);
    int rc = -1;
    fakedb__table *t = backup_table(db, req, r);
    if (t) {
        json_object *old = json_object_get(fakedb__json_get(t->spec, "PointInTimeRecovery"));
        if (enable) {
            /* enabling again keeps the start of the window; the period may change */
            json_object *p = json_object_new_object();
            int64_t since = old ? json_object_get_int64(fakedb__json_get(old, "EnabledMs")) : fakedb__now_ms(db->clock);
            json_object_object_add(p, "EnabledMs", json_object_new_int64(since));
            json_object_object_add(p, "RecoveryPeriodInDays", json_object_new_int64(days));
            json_object_object_add(t->spec, "PointInTimeRecovery", p);
        } else {
            json_object_object_del(t->spec, "PointInTimeRecovery");
        }
        if (fakedb__tx_begin(db) || fakedb__table_save(db, t) || fakedb__tx_commit(db)) {
            fakedb__tx_rollback(db);
            if (old)
                json_object_object_add(t->spec, "PointInTimeRecovery", json_object_get(old));
            else
                json_object_object_del(t->spec, "PointInTimeRecovery");
            fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        } else {
            rc = 0;
            r->body = json_object_new_object();
            json_object_object_add(r->body, "ContinuousBackupsDescription", backups_description(db, t));
        }
        json_object_put(old);
    }
    pthread_mutex_unlock(&db->lock);
    return rc;
}

/* ---- account ---- */

int fakedb__op_describe_limits(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    (void)db;
    (void)req;
    /* AWS's default quotas for an account in a region (provisioned mode) */
    r->body = json_object_new_object();
    json_object_object_add(r->body, "AccountMaxReadCapacityUnits", json_object_new_int64(80000));
    json_object_object_add(r->body, "AccountMaxWriteCapacityUnits", json_object_new_int64(80000));
    json_object_object_add(r->body, "TableMaxReadCapacityUnits", json_object_new_int64(40000));
    json_object_object_add(r->body, "TableMaxWriteCapacityUnits", json_object_new_int64(40000));
    return 0;
}

int fakedb__op_describe_endpoints(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    (void)db;
    (void)req;
    /* AWS names its own regional endpoint; fakedb names the address the client used,
     * so a client that discovers endpoints keeps talking to fakedb. */
    json_object *e = json_object_new_object();
    json_object_object_add(e, "Address", json_object_new_string(r->host && r->host[0] ? r->host : "localhost"));
    json_object_object_add(e, "CachePeriodInMinutes", json_object_new_int64(1440));
    json_object *list = json_object_new_array();
    json_object_array_add(list, e);
    r->body = json_object_new_object();
    json_object_object_add(r->body, "Endpoints", list);
    return 0;
}
