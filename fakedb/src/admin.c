/* admin.c: the control endpoints under /fake/ (JSON in, JSON out): health, the clock
 * (read, advance, set, and a long poll until it reaches a time), faults, reset and
 * statistics; the metrics in Prometheus's text format (metrics.c); and the console
 * (console.c), handed everything under /fake/console. DynamoDB's API never uses these
 * paths. */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void reply(fakedb__http_resp *rs, int status, json_object *o)
{
    fakedb__resp_json(rs, status, o);
    json_object_put(o);
}

static void reply_error(fakedb__http_resp *rs, int status, const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    reply(rs, status, o);
}

static json_object *clock_json(fakedb *db)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "now_ms", json_object_new_int64(fakedb__now_ms(&db->clock)));
    pthread_mutex_lock(&db->clock.lock);
    bool fake = db->clock.fake;
    pthread_mutex_unlock(&db->clock.lock);
    json_object_object_add(o, "fake", json_object_new_boolean(fake));
    return o;
}

static json_object *body_json(fakedb__http_req *rq)
{
    if (!rq->body || rq->body_len == 0)
        return json_object_new_object();
    return fakedb__json_object_from(rq->body, rq->body_len);
}

static bool get_i64(json_object *o, const char *key, int64_t *out)
{
    json_object *v = fakedb__json_get(o, key);
    if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    if (!s || !*s)
        return false;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return false;
    *out = v;
    return true;
}

static void add_fault(fakedb *db, json_object *b, fakedb__http_resp *rs)
{
    const char *why = NULL;
    long id = fakedb__fault_add_json(db, b, &why);
    if (id < 0) {
        reply_error(rs, id == FAKEDB_ENOMEM ? 500 : 400, why);
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(id));
    reply(rs, 200, o);
}

static json_object *stats_json(fakedb *db)
{
    json_object *o = json_object_new_object();
    fakedb_stats all = fakedb_get_stats(db, NULL);
    json_object_object_add(o, "requests", json_object_new_int64(all.requests));
    json_object_object_add(o, "condition_failures", json_object_new_int64(all.condition_failures));
    json_object *ops = json_object_new_object();
    for (int i = 0; i < FDB_OP_COUNT; i++) {
        fakedb_stats s = fakedb_get_stats(db, fakedb__op_name(i));
        if (!s.requests)
            continue;
        json_object *e = json_object_new_object();
        json_object_object_add(e, "requests", json_object_new_int64(s.requests));
        json_object_object_add(e, "condition_failures", json_object_new_int64(s.condition_failures));
        json_object_object_add(ops, fakedb__op_name(i), e);
    }
    json_object_object_add(o, "operations", ops);
    pthread_mutex_lock(&db->conn_lock);
    unsigned conns = db->conn_count;
    pthread_mutex_unlock(&db->conn_lock);
    json_object_object_add(o, "connections", json_object_new_int64(conns));
    return o;
}

/* A request under /fake/ to a server with credentials: signed with them (SigV4, as a
 * DynamoDB request), or "Authorization: Bearer SECRET" with their secret access key. */
bool fakedb__admin_authorized(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs)
{
    const char *auth = rq->authorization;
    char why[600] = "";
    if (auth && !strncasecmp(auth, "Bearer ", 7)) {
        const char *token = auth + 7;
        size_t n = strlen(token), m = strlen(db->cred_secret);
        unsigned char diff = (unsigned char)(n != m);
        for (size_t i = 0; i < n && i < m; i++) /* the same time for every wrong token */
            diff |= (unsigned char)(token[i] ^ db->cred_secret[i]);
        if (!diff)
            return true;
        snprintf(why, sizeof why, "the bearer token is not the server's secret access key");
    } else if (auth && *auth) {
        if (fakedb__signed(db, rq, why, sizeof why))
            return true;
    } else {
        snprintf(why, sizeof why, "no Authorization header");
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(
        "fakedb runs with --credentials: /fake/ endpoints other than /fake/health need them, "
        "as a request signed with SigV4 (as DynamoDB requests are) or the header "
        "'Authorization: Bearer SECRET' with the secret access key"));
    json_object_object_add(o, "reason", json_object_new_string(why));
    reply(rs, 403, o);
    return false;
}

void fakedb__admin_wait_answer(fakedb *db, int64_t until_ms, fakedb__http_resp *rs)
{
    json_object *o = clock_json(db);
    int64_t now = json_object_get_int64(fakedb__json_get(o, "now_ms"));
    json_object_object_add(o, "reached", json_object_new_boolean(now >= until_ms));
    reply(rs, 200, o);
}

/* The longest a /fake/clock/wait may be asked to wait: a day. */
#define FAKEDB_WAIT_MAX_MS INT64_C(86400000)

int fakedb__handle_admin(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs,
                         int64_t *until_ms, int64_t *timeout_ms)
{
    const char *path = rq->url + strlen("/fake");
    bool get = !strcmp(rq->method, "GET"), post = !strcmp(rq->method, "POST"),
         del = !strcmp(rq->method, "DELETE");
    if (!strcmp(path, "/health") && get) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "ok", json_object_new_boolean(1));
        json_object_object_add(o, "version", json_object_new_string(fakedb_version()));
        reply(rs, 200, o);
        return 0;
    }
    if (!strcmp(path, "/console") || !strncmp(path, "/console/", 9)) {
        return fakedb__console_handle(db, rq, rs, path + strlen("/console"), until_ms, timeout_ms);
    }
    if (!strcmp(path, "/clock") && get) {
        reply(rs, 200, clock_json(db));
        return 0;
    }
    if (!strcmp(path, "/clock/wait") && get) {
        int64_t until, timeout = 30000;
        if (!parse_i64(rq->get_arg(rq->arg_ctx, "until_ms"), &until)) {
            reply_error(rs, 400, "until_ms (an integer) is required");
            return 0;
        }
        const char *t = rq->get_arg(rq->arg_ctx, "timeout_ms");
        /* Bounded: the wait's deadline is the monotonic clock plus this, which a value
         * near INT64_MAX would overflow. */
        if (t && (!parse_i64(t, &timeout) || timeout < 0 || timeout > FAKEDB_WAIT_MAX_MS)) {
            reply_error(rs, 400, "timeout_ms must be an integer from 0 to 86400000 (a day)");
            return 0;
        }
        if (fakedb__now_ms(&db->clock) >= until || timeout == 0) {
            fakedb__admin_wait_answer(db, until, rs);
            return 0;
        }
        *until_ms = until;
        *timeout_ms = timeout;
        return 1;
    }
    if ((!strcmp(path, "/clock/advance") || !strcmp(path, "/clock/set")) && post) {
        bool adv = !strcmp(path, "/clock/advance");
        json_object *b = body_json(rq);
        int64_t v;
        if (!b || !get_i64(b, adv ? "ms" : "now_ms", &v)) {
            json_object_put(b);
            reply_error(rs, 400, adv ? "body must be {\"ms\": N}" : "body must be {\"now_ms\": N}");
            return 0;
        }
        json_object_put(b);
        int rc = adv ? fakedb_clock_advance(db, v) : fakedb_clock_set(db, v);
        if (rc) {
            reply_error(rs, 400, "the clock is not fake, or the move goes backwards");
            return 0;
        }
        reply(rs, 200, clock_json(db));
        return 0;
    }
    if (!strcmp(path, "/faults")) {
        if (get) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "faults", fakedb__faults_json(db));
            reply(rs, 200, o);
            return 0;
        }
        if (del) {
            fakedb_fault_clear(db);
            reply(rs, 200, json_object_new_object());
            return 0;
        }
        if (post) {
            json_object *b = body_json(rq);
            if (!b) {
                reply_error(rs, 400, "body must be a JSON object");
                return 0;
            }
            add_fault(db, b, rs);
            json_object_put(b);
            return 0;
        }
    }
    if (!strncmp(path, "/faults/", 8) && del) {
        int64_t id;
        if (!parse_i64(path + 8, &id)) {
            reply_error(rs, 400, "fault id must be an integer");
            return 0;
        }
        fakedb_fault_remove(db, (long)id);
        reply(rs, 200, json_object_new_object());
        return 0;
    }
    if (!strcmp(path, "/reset") && post) {
        fakedb_reset(db);
        reply(rs, 200, json_object_new_object());
        return 0;
    }
    if (!strcmp(path, "/stats") && get) {
        reply(rs, 200, stats_json(db));
        return 0;
    }
    if (!strcmp(path, "/metrics") && get) {
        pthread_mutex_lock(&db->conn_lock);
        unsigned conns = db->conn_count;
        pthread_mutex_unlock(&db->conn_lock);
        rs->body = fakedb__metrics_text(db, conns, &rs->body_len);
        if (!rs->body) {
            reply_error(rs, 500, "out of memory");
            return 0;
        }
        rs->status = 200;
        rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
        return 0;
    }
    reply_error(rs, 404, "no such endpoint");
    return 0;
}
