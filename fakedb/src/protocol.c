/* protocol.c: DynamoDB's JSON protocol. Checks a request the way DynamoDB does (size,
 * authentication, X-Amz-Target, content type, JSON), applies faults, dispatches to the
 * operation and writes the answer: the body, x-amzn-RequestId, x-amz-crc32, and errors
 * as {"__type": ..., "message": ...} ("Message" in TransactionCanceledException, as
 * DynamoDB writes it) with DynamoDB's status. */
#include "protocol.h"

#include <sigv4.h>
#include <utf8.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <zlib.h>

/* x-amz-crc32: zlib's CRC-32 (the same polynomial), which reads several bytes a step; the
 * table-driven loop of one byte a step was half of the server's time on a 1 MB page. */
uint32_t fakedb__crc32(const void *data, size_t len)
{
    return (uint32_t)crc32_z(0L, data, len);
}

void fakedb__request_id(fakedb *db, char out[53])
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned long seq = __atomic_add_fetch(&db->request_seq, 1, __ATOMIC_RELAXED);
    uint64_t x = (uint64_t)seq * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)db;
    /* 52 characters from five rounds of a 64-bit mix, 12 base-36 digits from each (36^12
     * is below 2^64) and 4 from the last */
    for (int i = 0; i < 52; i++) {
        if (i % 12 == 0) {
            x += 0x9E3779B97F4A7C15ull;
            x ^= x >> 33;
            x *= 0xff51afd7ed558ccdull;
            x ^= x >> 29;
            x *= 0xc4ceb9fe1a85ec53ull;
            x ^= x >> 32;
        }
        out[i] = alphabet[x % 36];
        x /= 36;
        if (i % 12 == 11)
            x ^= (uint64_t)seq << 17 ^ (uint64_t)i;
    }
    out[52] = 0;
}

void fakedb__resp_json(fakedb__http_resp *rs, int status, json_object *o)
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(o, FDB_JSON_FLAGS, &len);
    rs->status = status;
    /* C0 80 stands for NUL inside fakedb (see map_nul_escapes); each grows to \u0000. */
    size_t nuls = 0;
    for (const char *p = s; (p = memchr(p, 0xC0, len - (size_t)(p - s))) != NULL; p++)
        nuls += (size_t)(p + 1 < s + len && (unsigned char)p[1] == 0x80);
    rs->body = malloc(len + 4 * nuls + 1);
    if (rs->body && !nuls) {
        memcpy(rs->body, s, len + 1);
        rs->body_len = len;
    } else if (rs->body) {
        size_t n = 0;
        for (size_t i = 0; i < len; i++) {
            if ((unsigned char)s[i] == 0xC0 && i + 1 < len && (unsigned char)s[i + 1] == 0x80) {
                memcpy(rs->body + n, "\\u0000", 6);
                n += 6;
                i++;
            } else {
                rs->body[n++] = s[i];
            }
        }
        rs->body[n] = 0;
        rs->body_len = n;
    }
    rs->content_type = "application/json";
}

static void answer_reply(fakedb__http_resp *rs, int status, fakedb__reply *r)
{
    json_object *o;
    if (r->err.type) {
        o = json_object_new_object();
        json_object_object_add(o, "__type", json_object_new_string(r->err.type));
        /* DynamoDB spells the key "Message" in TransactionCanceledException only. */
        /* An empty text is left out: AWS answers an unparseable body with the __type alone. */
        if (r->err.message[0])
            json_object_object_add(o, strstr(r->err.type, "#TransactionCanceledException") ? "Message" : "message",
                                   json_object_new_string(r->err.message));
        if (r->body && json_object_is_type(r->body, json_type_object)) {
            json_object_object_foreach(r->body, k, v) json_object_object_add(o, k, json_object_get(v));
        }
    } else {
        o = json_object_get(r->body ? r->body : NULL);
        if (!o)
            o = json_object_new_object();
    }
    fakedb__resp_json(rs, r->err.type ? status : 200, o);
    if (r->err.type) {
        const char *hash = strchr(r->err.type, '#');
        fakedb__copy_str(rs->error_type, sizeof rs->error_type, hash ? hash + 1 : r->err.type);
    }
    rs->content_type = "application/x-amz-json-1.0";
    rs->amz = true;
    json_object_put(o);
}

void fakedb__answer_error(fakedb__http_resp *rs, int status, const char *type, const char *msg)
{
    fakedb__reply r;
    memset(&r, 0, sizeof r);
    fakedb__fail(&r.err, type, "%s", msg);
    answer_reply(rs, status, &r);
}

/* A SigV4 Authorization header must name the algorithm, Credential, SignedHeaders and
 * Signature; fills msg with what IncompleteSignatureException says otherwise. */
static bool sigv4_well_formed(const char *auth, bool has_date, char *msg, size_t n)
{
    size_t o = 0;
    msg[0] = 0;
    if (strncmp(auth, "AWS4-HMAC-SHA256 ", 17) != 0) {
        snprintf(msg, n, "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=%.200s", auth);
        return false;
    }
    const char *parts[3] = { "Credential=", "Signature=", "SignedHeaders=" };
    const char *names[3] = { "Credential", "Signature", "SignedHeaders" };
    for (int i = 0; i < 3; i++) {
        if (!strstr(auth, parts[i])) {
            int k = snprintf(msg + o, o < n ? n - o : 0, "Authorization header requires '%s' parameter. ", names[i]);
            if (k > 0)
                o += (size_t)k;
        }
    }
    if (!has_date) {
        int k = snprintf(msg + o, o < n ? n - o : 0, "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ");
        if (k > 0)
            o += (size_t)k;
    }
    if (o == 0)
        return true;
    if (o < n)
        snprintf(msg + o, n - o, "Authorization=%.200s", auth);
    return false;
}

static const char *header(const fakedb__http_req *rq, const char *name)
{
    for (size_t i = 0; i < rq->n_headers; i++)
        if (!strcasecmp(rq->headers[i].name, name))
            return rq->headers[i].value;
    return NULL;
}

static const char *secret_for(void *arg, const char *key_id)
{
    fakedb *db = arg;
    return db->cred_key && !strcmp(db->cred_key, key_id) ? db->cred_secret : NULL;
}

/* An X-Amz-Date ("20260101T000000Z") in ms since the epoch, or -1. */
static int64_t amz_date_ms(const char *d)
{
    struct tm tm = { 0 };
    if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z' ||
        sscanf(d, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? -1 : (int64_t)t * 1000;
}

static void amz_date(int64_t ms, char out[17])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* As AWS: a signature more than 5 minutes off the server's clock is refused (the
 * client corrects its skew from the answer's Date and signs again). */
static int check_signing_time(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs)
{
    const char *d = header(rq, "x-amz-date");
    int64_t signed_ms = amz_date_ms(d);
    if (signed_ms < 0)
        return 0; /* a Date header alone: the signature's own check covers it */
    int64_t now = fakedb__now_ms(&db->clock), window = 5 * 60 * 1000;
    char sd[17], lo[17], hi[17], nd[17], msg[200];
    amz_date(signed_ms, sd);
    amz_date(now, nd);
    if (signed_ms < now - window) {
        amz_date(now - window, lo);
        snprintf(msg, sizeof msg, "Signature expired: %s is now earlier than %s (%s - 5 min.)",
                 sd, lo, nd);
    } else if (signed_ms > now + window) {
        amz_date(now + window, hi);
        snprintf(msg, sizeof msg, "Signature not yet current: %s is still later than %s (%s + 5 min.)",
                 sd, hi, nd);
    } else {
        return 0;
    }
    fakedb__answer_error(rs, 400, FDB_E_INVALID_SIG, msg);
    return -1;
}

static int check_auth(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs)
{
    char msg[600];
    if (!rq->authorization || !rq->authorization[0]) {
        fakedb__answer_error(rs, 400, FDB_E_MISSING_AUTH, "Request is missing Authentication Token");
        return -1;
    }
    bool has_date = header(rq, "x-amz-date") || header(rq, "date");
    if (!sigv4_well_formed(rq->authorization, has_date, msg, sizeof msg)) {
        fakedb__answer_error(rs, 400, FDB_E_INCOMPLETE_SIG, msg);
        return -1;
    }
    if (!db->cred_key)
        return 0;
    dl_sigv4_verdict v = dl__sigv4_verify(rq->method, rq->url, rq->query, rq->headers, rq->n_headers,
                                          rq->body, rq->body_len, secret_for, db, msg, sizeof msg);
    switch (v) {
    case DL_SIGV4_OK:
        return check_signing_time(db, rq, rs);
    case DL_SIGV4_MISSING:
        fakedb__answer_error(rs, 400, FDB_E_MISSING_AUTH, msg[0] ? msg : "Request is missing Authentication Token");
        return -1;
    case DL_SIGV4_MALFORMED:
        fakedb__answer_error(rs, 400, FDB_E_INCOMPLETE_SIG, msg);
        return -1;
    case DL_SIGV4_UNKNOWN_KEY:
        fakedb__answer_error(rs, 400, FDB_E_UNRECOGNIZED, msg[0] ? msg : "The security token included in the request is invalid.");
        return -1;
    default:
        fakedb__answer_error(rs, 400, FDB_E_INVALID_SIG, msg);
        return -1;
    }
}

bool fakedb__signed(fakedb *db, fakedb__http_req *rq, char *why, size_t n)
{
    fakedb__http_resp tmp;
    memset(&tmp, 0, sizeof tmp);
    if (check_auth(db, rq, &tmp) == 0) {
        free(tmp.body);
        return true;
    }
    json_object *o = tmp.body ? json_tokener_parse(tmp.body) : NULL;
    const char *msg = fakedb__json_str(o, "message");
    snprintf(why, n, "%s: %s", tmp.error_type, msg ? msg : "");
    json_object_put(o);
    free(tmp.body);
    return false;
}

/* json-c keeps object keys as C strings, so a NUL (\u0000) in an attribute name or map
 * key would cut it short ("a\u0000b" would overwrite "a"), and names read with
 * json_object_get_string would be cut too. Before parsing, such escapes in keys and in
 * every string that is not a string AttributeValue ("S", or an element of "SS", which
 * json-c keeps whole with its length) become the bytes C0 80: never valid UTF-8 in a
 * request (refused by dl__utf8_valid), so they stand for NUL unambiguously inside
 * fakedb, and fakedb__resp_json writes them back as \u0000. Returns NULL when the body
 * has no such escape (then it is used as it is), or on out of memory (*oom set). */
static char *map_nul_escapes(const char *body, size_t len, size_t *out_len, bool *oom)
{
    enum { MAX_DEPTH = FDB_JSON_DEPTH + 2 };
    *oom = false;
    if (!memmem(body, len, "\\u0000", 6))
        return NULL;
    char *out = malloc(len + 1);
    if (!out) {
        *oom = true;
        return NULL;
    }
    bool is_array[MAX_DEPTH], under_ss[MAX_DEPTH];
    int depth = 0;
    bool expect_key = false, last_key_s = false, last_key_ss = false;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        char c = body[i];
        if (c != '"') {
            if ((c == '{' || c == '[') && depth < MAX_DEPTH) {
                is_array[depth] = c == '[';
                under_ss[depth] = depth > 0 && !is_array[depth - 1] && last_key_ss;
                depth++;
                expect_key = c == '{';
            } else if ((c == '}' || c == ']') && depth > 0) {
                depth--;
            } else if (c == ',') {
                expect_key = depth > 0 && !is_array[depth - 1];
            } else if (c == ':') {
                expect_key = false;
            }
            out[o++] = c;
            i++;
            continue;
        }
        /* a string: a key, a string AttributeValue, or another string */
        bool key = expect_key && depth > 0 && !is_array[depth - 1];
        bool keep = !key && depth > 0 && (is_array[depth - 1] ? under_ss[depth - 1] : last_key_s);
        size_t start = o;
        out[o++] = body[i++];
        while (i < len && body[i] != '"') {
            if (body[i] == '\\' && i + 1 < len) {
                if (!keep && body[i + 1] == 'u' && i + 6 <= len && !memcmp(body + i + 2, "0000", 4)) {
                    out[o++] = (char)0xC0;
                    out[o++] = (char)0x80;
                    i += 6;
                    continue;
                }
                out[o++] = body[i++];
            }
            out[o++] = body[i++];
        }
        if (i < len)
            out[o++] = body[i++];
        if (key) {
            size_t n = o - start;
            last_key_s = n == 3 && !memcmp(out + start, "\"S\"", 3);
            last_key_ss = n == 4 && !memcmp(out + start, "\"SS\"", 4);
        }
    }
    out[o] = 0;
    *out_len = o;
    return out;
}

/* The value of \uXXXX at p (p[0] == '\\'), or -1. */
static long u_escape(const char *p, const char *end)
{
    if (end - p < 6 || p[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int c = (unsigned char)p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Whether a string of the body holds an escaped surrogate that is not half of a pair
 * ("\ud800", "\udc00"): json-c decodes each to U+FFFD, so "k\ud800" and "k\udc00"
 * would be one key. Such a string has no UTF-8 form, which DynamoDB's strings are. */
static bool lone_surrogate(const char *body, size_t len)
{
    const char *end = body + len;
    for (const char *p = memchr(body, '\\', len); p; p = memchr(p, '\\', (size_t)(end - p))) {
        long v = u_escape(p, end);
        if (v < 0) {
            p += p + 1 < end ? 2 : 1; /* another escape, "\\" among them */
            continue;
        }
        if (v >= 0xDC00 && v <= 0xDFFF)
            return true;
        if (v >= 0xD800 && v <= 0xDBFF) {
            long lo = u_escape(p + 6, end);
            if (p + 6 >= end || p[6] != '\\' || lo < 0xDC00 || lo > 0xDFFF)
                return true;
            p += 12;
            continue;
        }
        p += 6;
    }
    return false;
}

static json_object *parse_body(const char *body, size_t len, fakedb__http_resp *rs)
{
    if (len == 0) {
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION, "Start of structure or map found where not expected.");
        return NULL;
    }
    if (!dl__utf8_valid(body, len)) { /* stricter than json-c's own check */
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION, "Invalid UTF-8 in request");
        return NULL;
    }
    if (lone_surrogate(body, len)) {
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION,
                             "Invalid UTF-8 in request: a string holds an unpaired surrogate escape");
        return NULL;
    }
    bool oom;
    size_t mapped_len = 0;
    char *mapped = map_nul_escapes(body, len, &mapped_len, &oom);
    json_tokener *tok = oom ? NULL : fakedb__tokener_get(mapped ? mapped_len : len,
                                                        JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    if (!tok) {
        free(mapped);
        fakedb__answer_error(rs, 500, FDB_E_INTERNAL, "Internal server error");
        return NULL;
    }
    if (mapped) {
        body = mapped;
        len = mapped_len;
    }
    json_object *o = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    fakedb__tokener_put(tok, len);
    while (o && used < len && (body[used] == ' ' || body[used] == '\n' || body[used] == '\r' || body[used] == '\t'))
        used++;
    bool trailing_ok = used == len;
    free(mapped);
    if (!o || e != json_tokener_success || !trailing_ok) {
        json_object_put(o);
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION,
                     e == json_tokener_error_depth ? "Document nesting depth exceeds the limit"
                     : e == json_tokener_error_parse_utf8_string ? "Invalid UTF-8 in request"
                                                                 : "");
        return NULL;
    }
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION, "Start of structure or map found where not expected.");
        return NULL;
    }
    return o;
}

static bool content_type_ok(const char *ct)
{
    return ct && (!strncasecmp(ct, "application/x-amz-json-1.0", 26) ||
                  !strncasecmp(ct, "application/x-amz-json-1.1", 26) ||
                  !strncasecmp(ct, "application/json", 16));
}

/* Handles one request; returns its operation (-1 when not known). */
/* The region of the request's SigV4 credential scope (Credential=KEY/DATE/REGION/...),
 * for its ARNs; NULL (us-east-1) when there is none or it is not a region's name. */
static const char *request_region(const fakedb__http_req *rq, char *out, size_t n)
{
    const char *auth = header(rq, "authorization");
    const char *c = auth ? strstr(auth, "Credential=") : NULL;
    if (!c)
        return NULL;
    c += strlen("Credential=");
    for (int slashes = 0; slashes < 2; c++) {
        if (!*c || *c == ',' || *c == ' ')
            return NULL;
        slashes += *c == '/';
    }
    size_t len = 0;
    while (c[len] && c[len] != '/' && len < n)
        len++;
    if (len == 0 || len >= n || c[len] != '/')
        return NULL;
    for (size_t i = 0; i < len; i++)
        if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '-'))
            return NULL;
    memcpy(out, c, len);
    out[len] = 0;
    return out;
}

static int handle(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs, bool after_delay)
{
    int64_t t0 = fakedb__mono_ms();
    if (rq->body_too_large) {
        fakedb__answer_error(rs, 413, FDB_E_VALIDATION, "Request size exceeded 16777216 bytes");
        return -1;
    }
    if (check_auth(db, rq, rs))
        return -1;
    const char *target = rq->target;
    static const char prefix[] = "DynamoDB_20120810.", streams_prefix[] = "DynamoDBStreams_20120810.";
    int op = -1;
    if (target && !strncmp(target, prefix, sizeof prefix - 1)) {
        op = fakedb__op_lookup(target + sizeof prefix - 1);
        if (op >= 0 && fakedb__op_is_streams(op))
            op = -1;
    } else if (target && !strncmp(target, streams_prefix, sizeof streams_prefix - 1)) {
        /* DynamoDB Streams: its own target on the same endpoint */
        op = fakedb__op_lookup(target + sizeof streams_prefix - 1);
        if (op >= 0 && !fakedb__op_is_streams(op))
            op = -1;
    }
    if (op < 0) {
        fakedb__answer_error(rs, 400, FDB_E_UNKNOWN_OP, "An unknown operation was requested.");
        return op;
    }
    if (!content_type_ok(rq->content_type)) {
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION, "Missing or unsupported Content-Type; expected application/x-amz-json-1.0");
        return op;
    }
    /* A compressed body (Content-Encoding): signed as sent, read once decoded, and no
     * larger decoded than a request may be. */
    char *decoded = NULL;
    size_t decoded_len = 0;
    const char *why = NULL;
    int dec = fakedb__body_decode(header(rq, "content-encoding"), rq->body, rq->body_len,
                                  (size_t)FDB_MAX_REQUEST_BYTES, &decoded, &decoded_len, &why);
    if (dec == FDB_DECODE_TOO_LARGE) {
        fakedb__answer_error(rs, 413, FDB_E_VALIDATION, "Request size exceeded 16777216 bytes");
        fakedb__stat_count(db, op, false);
        return op;
    }
    if (dec == FDB_DECODE_BAD) {
        char msg[160];
        snprintf(msg, sizeof msg, "The request body could not be decoded (Content-Encoding): %s", why);
        fakedb__answer_error(rs, 400, FDB_E_SERIALIZATION, msg);
        fakedb__stat_count(db, op, false);
        return op;
    }
    json_object *req = decoded ? parse_body(decoded, decoded_len, rs) : parse_body(rq->body, rq->body_len, rs);
    free(decoded);
    if (!req) {
        fakedb__stat_count(db, op, false);
        return op;
    }
    const char *tname = fakedb__json_str(req, "TableName");
    if (tname) {
        size_t n = strnlen(tname, sizeof rs->table - 1);
        memcpy(rs->table, tname, n);
        rs->table[n] = 0;
    }
    fakedb_error no_db = { 0 };
    fakedb__store *store = fakedb__database_for(db, rq->authorization, &no_db);
    if (!store) {
        if (no_db.code == FAKEDB_EINVAL)
            fakedb__answer_error(rs, 400, FDB_E_UNRECOGNIZED, no_db.message);
        else if (no_db.code == FAKEDB_ELIMIT)
            fakedb__answer_error(rs, 400, FDB_E_LIMIT, no_db.message);
        else
            fakedb__answer_error(rs, 500, FDB_E_INTERNAL, "Internal server error");
        fakedb__stat_count(db, op, false);
        json_object_put(req);
        return op;
    }
    fakedb__faults_store_set(store);
    fakedb__fault_hit hit;
    const char *name = fakedb__op_name(op);
    if (!after_delay && fakedb__fault_match(db, name, req, FAKEDB_FAULT_DELAY, &hit) && hit.delay_ms > 0) {
        rs->delay_ms = hit.delay_ms;
        json_object_put(req);
        return op;
    }
    fakedb__reply r;
    memset(&r, 0, sizeof r);
    if (fakedb__fault_match(db, name, req, FAKEDB_FAULT_ERROR, &hit)) {
        char type[200];
        snprintf(type, sizeof type, "%s%s", strchr(hit.error_type, '#') ? "" : FDB_NS_DDB, hit.error_type);
        const char *msg = strstr(hit.error_type, "ProvisionedThroughputExceeded")
            ? "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."
            : strstr(hit.error_type, "Throttling") ? "Rate of requests exceeds the allowed throughput."
            : strstr(hit.error_type, "RequestLimitExceeded") ? "Throughput exceeds the current throughput limit for your account. Please contact AWS Support at https://aws.amazon.com/support request a limit increase"
            : hit.status >= 500 ? "Internal server error" : "Injected fault";
        fakedb__answer_error(rs, hit.status, type, msg);
        fakedb__stat_count(db, op, false);
        json_object_put(req);
        return op;
    }
    if (fakedb__fault_match(db, name, req, FAKEDB_FAULT_LOST_REQUEST, &hit)) {
        /* As a request lost on its way: nothing applied, nothing answered. */
        fakedb__stat_count(db, op, false);
        rs->lose = true;
        json_object_put(req);
        return op;
    }
    bool lose = fakedb__fault_match(db, name, req, FAKEDB_FAULT_LOST_RESPONSE, &hit);
    fakedb__fault_hit unprocessed;
    if ((!strcmp(name, "BatchWriteItem") || !strcmp(name, "BatchGetItem")) &&
        fakedb__fault_match(db, name, req, FAKEDB_FAULT_UNPROCESSED, &unprocessed)) {
        r.leave_out = fakedb__fault_covers;
        r.leave_out_arg = &unprocessed;
    }
    char region[33];
    r.region = request_region(rq, region, sizeof region);
    /* Only DescribeEndpoints answers the Host: no other request pays for the look-up. */
    for (size_t i = 0; op == FDB_OP_DESCRIBE_ENDPOINTS && i < rq->n_headers; i++)
        if (!strcasecmp(rq->headers[i].name, "host"))
            r.host = rq->headers[i].value;
    r.render_only = true;
    fakedb__op_call(op, store, req, &r);
    fakedb__stat_count(db, op, r.condition_failure);
    answer_reply(rs, fakedb__error_status(&r.err), &r);
    rs->lose = lose;
    if (db->log_requests) {
        const char *t = r.err.type ? strchr(r.err.type, '#') : NULL;
        const char *table = fakedb__json_str(req, "TableName");
        char safe_table[4 * 256 + 1], safe_type[4 * 128 + 1];
        fprintf(stderr, "fakedb: %s %s %d %s%s%lldms\n", name,
                table ? fakedb__log_text(table, safe_table, sizeof safe_table) : "-", rs->status,
                t ? fakedb__log_text(t + 1, safe_type, sizeof safe_type) : "", t ? " " : "",
                (long long)(fakedb__mono_ms() - t0));
    }
    json_object_put(r.body);
    json_object_put(req);
    return op;
}

void fakedb__handle_ddb(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs, bool after_delay)
{
    uint64_t t0 = fakedb__metrics_now_ns();
    int op = handle(db, rq, rs, after_delay);
    if (rs->delay_ms > 0)
        return; /* counted when handled after the delay */
    /* Accept-Encoding: gzip compresses the answer (x-amz-crc32 is then of the bytes sent) */
    const char *accept = rs->body && !rs->lose ? header(rq, "accept-encoding") : NULL;
    char *zipped;
    size_t zipped_len;
    if (accept && fakedb__accepts_gzip(accept) && !fakedb__gzip(rs->body, rs->body_len, &zipped, &zipped_len)) {
        free(rs->body);
        rs->body = zipped;
        rs->body_len = zipped_len;
        rs->gzip = true;
    }
    uint64_t t1 = fakedb__metrics_now_ns();
    fakedb__metrics_request(&db->metrics, op, rs->lose ? 0 : rs->status, rs->error_type, t1 - t0);
    fakedb__recent_add(&db->recent, op, rs->lose ? 0 : rs->status, rs->table, rs->error_type, t1, t1 - t0);
}
