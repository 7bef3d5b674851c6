/* sim.c: a deterministic simulation of the lock protocol. Several processes (a client,
 * a fake clock whose rate drifts within a bound, and a lock table each) contend for one
 * lock over one in-process fakedb, driven by one seeded schedule: per request a lost
 * answer, a late answer, a throttle or a 500; per process a pause (a frozen VM), a crash
 * and a restart, a jump of the wall clock. The real library runs unchanged; every step
 * ends with the fake clock's settle, so the threads' interleaving cannot change the run,
 * and a seed replays it bit for bit. A checker reads the history as it is made (see
 * docs/internals/simulation.md for the rules it checks).
 *
 *   sim [--seeds N] [--first S] [--steps K] [--procs P] [--replay-check M] [--quiet]
 *       [--trace] [--stop-on-failure]
 */
#include <dynalock/coord.h>
#include <fakedb/fakedb.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord_internal.h"
#include "internal.h" /* the fake clock's wall jumps and scheduler settle */

#define LEASE_MS 30000
#define MAX_PROCS 6
#define LOCK "job"
#define DRIFT_PPM 100         /* clocks run at 1 +/- 100 ppm of true time */
#define SETTLE_MS 20000       /* a guard against a hang, in real time */
#define LOG_MAX (1 << 20)

/* ------------------------------------------------------------- the schedule */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    /* splitmix64: one 64-bit state, good enough for schedules, replayable */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rng_range(rng *r, int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static bool rng_chance(rng *r, int per_mille)
{
    return (int)(rng_next(r) % 1000) < per_mille;
}

/* ------------------------------------------------------------- the world */

typedef struct proc proc;
typedef struct sim sim;

struct proc {
    sim *s;
    int id, gen;              /* index, and restarts so far */
    ddb_clock *clock;
    int64_t rate_ppm;         /* drift of this process's clock */
    int64_t owed_us;          /* fraction of a ms its clock is owed */
    ddb_client *client;
    ddb_table *table;
    ddb_lock_table *locks;
    ddb_lease *lease;
    int owner;                /* the lease's owner, as a sequence number */
    int64_t token;
    int64_t deadline_ms;      /* the checker's own account: last good send + lease */
    /* Renewals in flight (the heartbeat's and ddb_lease_renew's may overlap): their span
     * and their send on the process's own clock. */
    struct {
        uint64_t span;
        int64_t sent_ms;
    } renewing[4];
    bool paused_since_send;   /* paused while this lease was held */
    int pause_left;           /* steps it stays frozen */
    bool crashed;             /* frozen for good: its replacement runs */
    int64_t synced_ms;        /* the true time its clock was last moved to */
    bool in_request;          /* a request of its own is starting (fault hook) */
};

struct sim {
    uint64_t seed;
    rng r;
    fakedb *db;
    ddb_client *observer;     /* reads the truth, no faults */
    ddb_table *otable;
    int n;
    proc *p[MAX_PROCS * 8];   /* live ones first; crashed ones stay frozen */
    int np;
    int64_t now_ms;           /* true time */
    int next_owner;
    char owners[4096][33];    /* owner id -> sequence number (by first appearance) */
    int n_owners;
    int64_t token_owner[4096];
    int64_t last_accepted;    /* the resource's view: highest token written */
    int64_t freed_at_ms;      /* true time since which nobody holds the lock, or -1 */
    char *log;
    size_t log_len;
    bool trace;
    const char *violation;
    char why[512];
    char who[2][16];          /* the processes a violation names, for its trace */
    int64_t max_dt;
    bool in_delay;            /* a request is being delayed: no second delay inside it */
    long delays;              /* requests delayed so far (the others acted meanwhile) */
    int64_t writes;           /* fenced writes so far: each carries its number as "w" */
    bool closing;             /* the run is over: no more faults, no more records */
    /* Guards the renewals in flight of every process: a new lease's first renewal may
     * start on its scheduler's thread while its acquire is still returning. */
    pthread_mutex_t mu;
    pthread_t main_thread;    /* the simulator's own */
};

static void ev(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev(sim *s, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (s->log_len + len + 32 < LOG_MAX) {
        s->log_len += (size_t)snprintf(s->log + s->log_len, LOG_MAX - s->log_len,
                                       "%8" PRId64 " %.*s\n", s->now_ms, (int)len, line);
    }
    if (s->trace)
        fprintf(stderr, "%8" PRId64 " %.*s\n", s->now_ms, (int)len, line);
}

static void violate(sim *s, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void violate(sim *s, const char *rule, const char *fmt, ...)
{
    if (s->violation)
        return;
    s->violation = rule;
    /* The processes it names ("pN.G"), whose events make its trace. */
    va_list names;
    va_start(names, fmt);
    int id = va_arg(names, int), gen = va_arg(names, int);
    snprintf(s->who[0], sizeof s->who[0], "p%d.%d ", id, gen);
    va_end(names);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    ev(s, "VIOLATION %s: %s", rule, s->why);
}

static int owner_seq(sim *s, const char *owner)
{
    for (int i = 0; i < s->n_owners; i++)
        if (strcmp(s->owners[i], owner) == 0)
            return i + 1;
    if (s->n_owners == 4096)
        return 0;
    snprintf(s->owners[s->n_owners], sizeof s->owners[0], "%s", owner);
    return ++s->n_owners;
}

/* Whether an owner id was handed out in a lease, or left by an outcome in doubt. */
static bool owner_known(sim *s, const char *owner)
{
    for (int i = 0; i < s->n_owners; i++)
        if (strcmp(s->owners[i], owner) == 0)
            return true;
    return false;
}

/* The truth, as the observer reads it (consistent, no faults): the lock item, or NULL. */
static ddb_item *read_item(sim *s, const char *pk, const char *sk)
{
    ddb_item *key = ddb_item_new();
    ddb_item_set_s(key, "pk", pk);
    ddb_item_set_s(key, "sk", sk);
    ddb_result res = {0};
    ddb_table_get_item(s->otable, key, &(ddb_get_options){.consistent_read = true}, &res, NULL,
                       NULL);
    ddb_item_free(key);
    ddb_item *it = res.item;
    res.item = NULL;
    ddb_result_cleanup(&res);
    return it;
}

static ddb_item *read_lock(sim *s)
{
    char pk[64];
    snprintf(pk, sizeof pk, "LOCK#%s", LOCK);
    return read_item(s, pk, "LOCK");
}

static int64_t own_ms(proc *p)
{
    return ddb_clock_mono_ns(p->clock) / 1000000;
}

static void settle(proc *p)
{
    if (ddb_fake_clock_settle(p->clock, SETTLE_MS) != 0) {
        fprintf(stderr, "sim: seed %" PRIu64 ": the clock of process %d did not settle\n",
                p->s->seed, p->id);
        exit(2);
    }
}

static void advance_to(proc *p, int64_t t_ms, bool wait);
static void catch_up(proc *p);

/* ------------------------------------------------------ faults per request */

static const char *const k_ops[] = {"GetItem", "UpdateItem", "TransactWriteItems", "PutItem", NULL};

static bool is_op(const char *name)
{
    for (int i = 0; k_ops[i]; i++)
        if (strcmp(name, k_ops[i]) == 0)
            return true;
    return false;
}

/* A request of a process starts: the schedule decides what happens to it. */
static void on_span_start(void *arg, uint64_t id, uint64_t parent, const char *name,
                          const uint64_t *links, size_t n_links)
{
    (void)parent;
    (void)links;
    (void)n_links;
    proc *p = arg;
    sim *s = p->s;
    if (s->closing)
        return;
    if (strcmp(name, "Lock.Renew") == 0) {
        pthread_mutex_lock(&s->mu);
        for (int i = 0; i < 4; i++) {
            if (p->renewing[i].span == 0) {
                p->renewing[i].span = id;
                p->renewing[i].sent_ms = own_ms(p);
                break;
            }
        }
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (!is_op(name))
        return;
    int roll = (int)(rng_next(&s->r) % 1000);
    /* Progress is promised when DynamoDB answers: a fault restarts its clock. */
    if (roll < 170 && s->freed_at_ms >= 0)
        s->freed_at_ms = s->now_ms;
    if (roll < 40) {
        fakedb_fault_add(s->db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_RESPONSE,
                                                .operation = name, .count = 1});
        ev(s, "p%d.%d %s: answer lost", p->id, p->gen, name);
    } else if (roll < 80 && !s->in_delay) {
        /* The request is on its way for `late` ms: true time runs for everyone (the others
         * move and settle first, in the schedule's order); this process's clock moves
         * too, and its work follows when the request returns. */
        int64_t late = rng_range(&s->r, 1, LEASE_MS + LEASE_MS / 3);
        ev(s, "p%d.%d %s: on its way for %" PRId64 " ms", p->id, p->gen, name, late);
        s->in_delay = true;
        s->delays++;
        s->now_ms += late;
        for (int i = 0; i < s->np; i++) {
            proc *q = s->p[i];
            if (q == p || q->crashed)
                continue;
            if (q->pause_left > 0)
                q->synced_ms = s->now_ms; /* frozen */
            else
                advance_to(q, s->now_ms, true);
        }
        /* Its own clock moves too. On its scheduler's thread (a renewal), its tasks run
         * after this one, in order. On the simulator's thread (a blocking call), its
         * scheduler does what fell due while the request was on its way before the
         * request goes on, so that nothing runs beside the call. */
        advance_to(p, s->now_ms, false);
        if (pthread_equal(pthread_self(), s->main_thread) &&
            ddb__fake_clock_settle_schedulers(p->clock, SETTLE_MS) != 0) {
            fprintf(stderr, "sim: seed %" PRIu64 ": the scheduler of process %d did not settle\n",
                    s->seed, p->id);
            exit(2);
        }
        s->in_delay = false;    } else if (roll < 110) {
        fakedb_fault_add(s->db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR, .operation = name,
                                                .count = 1});
        ev(s, "p%d.%d %s: throttled", p->id, p->gen, name);
    } else if (roll < 140) {
        fakedb_fault_add(s->db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR, .operation = name,
                                                .error_type = "InternalServerError",
                                                .count = 1});
        ev(s, "p%d.%d %s: 500", p->id, p->gen, name);
    } else if (roll < 170) {
        fakedb_fault_add(s->db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_REQUEST,
                                                .operation = name, .count = 1});
        ev(s, "p%d.%d %s: request lost", p->id, p->gen, name);
    }
}

/* A renewal ends: a success answered before the deadline moves the checker's deadline. */
static void on_span_end(void *arg, uint64_t id, const char *error_type)
{
    proc *p = arg;
    if (p->s->closing)
        return;
    pthread_mutex_lock(&p->s->mu);
    for (int i = 0; i < 4; i++) {
        if (p->renewing[i].span != id)
            continue;
        p->renewing[i].span = 0;
        int64_t now = own_ms(p), sent = p->renewing[i].sent_ms;
        if (p->lease && !error_type && now < p->deadline_ms && sent + LEASE_MS > p->deadline_ms) {
            p->deadline_ms = sent + LEASE_MS;
            p->paused_since_send = false; /* a renewal that succeeded: the lease is sound again */
            if (p->s->trace)
                ev(p->s, "p%d.%d renewed, deadline %" PRId64 " (sent %" PRId64 ", answered %" PRId64
                   " on its clock)", p->id, p->gen, p->deadline_ms, sent, now);
        }
        break;
    }
    pthread_mutex_unlock(&p->s->mu);
}

/* ---------------------------------------------------------------- processes */

static void proc_start(sim *s, proc *p)
{
    p->clock = ddb_fake_clock_new(1767225600000LL + s->now_ms);
    /* Its clock starts where true time is (monotonic 0 is its boot). */
    ddb_telemetry tel = {.arg = p, .span_start = on_span_start, .span_end = on_span_end};
    ddb_error err;
    p->client = ddb_client_new(&(ddb_client_options){.endpoint = fakedb_endpoint(s->db),
                                                     .region = "us-east-1",
                                                     .access_key_id = "AKIDSIM",
                                                     .secret_access_key = "sim",
                                                     .clock = p->clock,
                                                     .imds_disabled = true,
                                                     .log_level = DDB_LOG_OFF,
                                                     .telemetry = &tel,
                                                     /* One attempt: a blocking call of the
                                                      * simulator must not wait on its own
                                                      * clock, which only it moves. */
                                                     .retry = {.max_attempts = DDB_NO_RETRIES}},
                               &err);
    if (!p->client) {
        fprintf(stderr, "sim: client: %s\n", err.message);
        exit(2);
    }
    p->table = ddb_table_open(p->client, "Sim", "pk", "sk", &err);
    char label[32];
    snprintf(label, sizeof label, "p%d.%d", p->id, p->gen);
    p->locks = ddb_lock_table_new(p->table, &(ddb_lock_table_options){.holder_label = label}, &err);
    p->rate_ppm = rng_range(&s->r, -DRIFT_PPM, DRIFT_PPM);
}

static void proc_free(proc *p)
{
    if (p->lease)
        ddb_lease_release(p->lease);
    ddb_lock_table_free(p->locks);
    ddb_table_close(p->table);
    ddb_client_free(p->client);
    ddb_clock_unref(p->clock);
    free(p);
}

static proc *proc_new(sim *s, int id, int gen)
{
    proc *p = calloc(1, sizeof *p);
    p->s = s;
    p->id = id;
    p->gen = gen;
    p->synced_ms = s->now_ms;
    proc_start(s, p);
    return p;
}

/* ------------------------------------------------------------------ checks */

static bool believes(proc *p)
{
    return p->lease && !ddb_cancel_is_set(ddb_lease_ended(p->lease));
}

static void check(sim *s)
{
    proc *holders[MAX_PROCS * 8];
    int nh = 0;
    for (int i = 0; i < s->np; i++) {
        proc *p = s->p[i];
        if (p->crashed || !believes(p))
            continue;
        holders[nh++] = p;
        /* A lease ends at its deadline on its holder's clock. */
        if (p->pause_left == 0 && own_ms(p) >= p->deadline_ms)
            violate(s, "deadline",
                    "p%d.%d believes it holds token %" PRId64 " at %" PRId64
                    " ms on its clock, past its deadline %" PRId64,
                    p->id, p->gen, p->token, own_ms(p), p->deadline_ms);
    }
    /* At most one believes it holds, unless the older one's lease ran out on its own
     * clock (allowing the drift bound) or it was paused, which only fencing covers. */
    for (int i = 0; i < nh; i++) {
        for (int j = 0; j < nh; j++) {
            proc *a = holders[i], *b = holders[j];
            if (a == b || a->token >= b->token)
                continue;
            int64_t slack = LEASE_MS * 2 * DRIFT_PPM / 1000000 + 1;
            if (!a->paused_since_send && own_ms(a) < a->deadline_ms - slack) {
                pthread_mutex_lock(&a->lease->mu);
                int64_t expiry = a->lease->expiry_ns / 1000000;
                pthread_mutex_unlock(&a->lease->mu);
                violate(s, "exclusion",
                        "p%d.%d (token %" PRId64 ", %" PRId64 " ms left on its clock at %" PRId64
                        ", its lease's own deadline %" PRId64 ") and p%d.%d (token %" PRId64
                        ") both hold the lock",
                        a->id, a->gen, a->token, a->deadline_ms - own_ms(a), own_ms(a), expiry,
                        b->id, b->gen, b->token);
            }
        }
    }
    /* A lock whose holders all stopped is acquired again in bounded time. */
    bool someone = false;
    for (int i = 0; i < s->np; i++)
        someone |= !s->p[i]->crashed && believes(s->p[i]);
    bool contender = false;
    for (int i = 0; i < s->np; i++)
        contender |= !s->p[i]->crashed && s->p[i]->pause_left == 0;
    if (someone || !contender) {
        s->freed_at_ms = -1;
    } else if (s->freed_at_ms < 0) {
        s->freed_at_ms = s->now_ms;
    } else if (s->now_ms - s->freed_at_ms > 3 * LEASE_MS + 4 * s->max_dt) {
        violate(s, "progress", "nobody holds the lock for %" PRId64 " ms with live contenders",
                s->now_ms - s->freed_at_ms);
    }
}

/* A lease was acquired: its token is new, and belongs to this owner alone. */
static void acquired(sim *s, proc *p, ddb_lease *lease)
{
    p->lease = lease;
    p->owner = owner_seq(s, ddb_lease_owner(lease));
    p->token = ddb_lease_fencing_token(lease);
    pthread_mutex_lock(&lease->mu);
    p->deadline_ms = lease->last_sent_ns / 1000000 + LEASE_MS;
    pthread_mutex_unlock(&lease->mu);
    p->paused_since_send = false;
    ev(s, "p%d.%d acquired token %" PRId64 " as owner %d%s, deadline %" PRId64 " at %" PRId64
       " on its clock", p->id, p->gen, p->token, p->owner,
       ddb_lease_takeover(lease) ? " (takeover)" : "", p->deadline_ms, own_ms(p));
    /* The item names the lease with its token: the token is the item's fence. */
    ddb_item *key = dl_lock_key_table(s->otable, LOCK, NULL);
    ddb_result res = {0};
    if (ddb_table_get_item(s->otable, key, &(ddb_get_options){.consistent_read = true}, &res, NULL, NULL) == 0 &&
        res.item) {
        const char *owner = ddb_item_get_s(res.item, DDB__LOCK_ATTR_OWNER);
        int64_t fence = 0;
        ddb_item_get_i64(res.item, DDB__LOCK_ATTR_FENCE, &fence);
        if (owner && strcmp(owner, ddb_lease_owner(lease)) == 0 && fence != p->token)
            violate(s, "token", "p%d.%d acquired token %" PRId64 ", but the item it holds has "
                    "fencing token %" PRId64, p->id, p->gen, p->token, fence);
        if ((!owner || strcmp(owner, ddb_lease_owner(lease)) != 0) &&
            !ddb_cancel_is_set(ddb_lease_ended(lease)))
            violate(s, "truth", "p%d.%d acquired token %" PRId64 ", but the item does not name "
                    "its lease", p->id, p->gen, p->token);
    }
    ddb_result_cleanup(&res);
    ddb_item_free(key);
    if (p->token > 0 && p->token < 4096) {
        if (s->token_owner[p->token] && s->token_owner[p->token] != p->owner)
            violate(s, "token", "token %" PRId64 " handed to owners %" PRId64 " and %d", p->token,
                    s->token_owner[p->token], p->owner);
        s->token_owner[p->token] = p->owner;
    }
}

/* The lease ended: the reason must be the reference's. */
static void ended(sim *s, proc *p)
{
    ddb_loss_reason r = ddb_lease_loss_reason(p->lease);
    ev(s, "p%d.%d lost token %" PRId64 ": %s", p->id, p->gen, p->token, ddb_loss_reason_name(r));
    if (r == DDB_LOSS_EXPIRED && own_ms(p) < p->deadline_ms && !p->paused_since_send)
        violate(s, "reason", "p%d.%d lost token %" PRId64 " as expired %" PRId64
                " ms before its deadline", p->id, p->gen, p->token, p->deadline_ms - own_ms(p));
    if (r == DDB_LOSS_TAKEN_OVER) {
        /* Taken over: the item names another owner now. */
        ddb_item *key = dl_lock_key_table(s->otable, LOCK, NULL);
        ddb_result res = {0};
        ddb_table_get_item(s->otable, key, &(ddb_get_options){.consistent_read = true}, &res, NULL, NULL);
        const char *owner = res.item ? ddb_item_get_s(res.item, DDB__LOCK_ATTR_OWNER) : NULL;
        if (owner && strcmp(owner, ddb_lease_owner(p->lease)) == 0)
            violate(s, "reason", "p%d.%d lost token %" PRId64 " as taken over, but the item "
                    "still names it", p->id, p->gen, p->token);
        ddb_result_cleanup(&res);
        ddb_item_free(key);
    }
    if (r == DDB_LOSS_NONE || r == DDB_LOSS_DELETED || r == DDB_LOSS_TABLE_NOT_FOUND)
        violate(s, "reason", "p%d.%d lost token %" PRId64 " with reason %s, which nothing in "
                "this run causes", p->id, p->gen, p->token, ddb_loss_reason_name(r));
    ddb_lease_release(p->lease);
    p->lease = NULL;
}

/* A fenced write to the resource: committed only while the lease holds the lock, and
 * only with a token no lower than the resource's highest. */
static void fenced_write(sim *s, proc *p)
{
    ddb_tx *tx = ddb_tx_new(p->client);
    ddb_tx_marker held;
    ddb_tx_check_lease(tx, p->lease, &held, NULL);
    ddb_item *res = ddb_item_new();
    ddb_item_set_s(res, "pk", "RESOURCE");
    ddb_item_set_s(res, "sk", "R");
    ddb_item_set_i64(res, "token", p->token);
    int64_t write_id = ++s->writes;
    ddb_item_set_i64(res, "w", write_id);
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":t", p->token);
    ddb_tx_put(tx, p->table, res,
               &(ddb_tx_options){.condition = "attribute_not_exists(#t) OR #t <= :t",
                                 .names = (const char *[]){"#t", "token", NULL},
                                 .values = vals},
               NULL, NULL);
    ddb_error err;
    int rc = ddb_tx_send(tx, NULL, &err);
    catch_up(p);
    /* The truth: the resource names the write it holds. */
    ddb_item *now = read_item(s, "RESOURCE", "R");
    int64_t w = 0;
    if (now)
        ddb_item_get_i64(now, "w", &w);
    ddb_item_free(now);
    if (rc == 0 && w != write_id)
        violate(s, "truth", "p%d.%d's write %" PRId64 " reported applied, but the resource "
                "holds write %" PRId64, p->id, p->gen, write_id, w);
    else if (rc != 0 && rc != DDB_EINDOUBT && rc != DDB_ECANCELED && w == write_id)
        violate(s, "truth", "p%d.%d's write %" PRId64 " reported %s, but the resource holds it",
                p->id, p->gen, write_id, ddb_error_name(rc));
    if (rc == DDB_EINDOUBT && w == write_id) {
        ev(s, "p%d.%d write with token %" PRId64 " in doubt: it was applied", p->id, p->gen,
           p->token);
        if (p->token < s->last_accepted)
            violate(s, "fencing", "a write with token %" PRId64 " was accepted after one with "
                    "token %" PRId64, p->token, s->last_accepted);
        s->last_accepted = p->token;
    }
    if (rc == 0) {
        ev(s, "p%d.%d wrote with token %" PRId64, p->id, p->gen, p->token);
        if (p->token < s->last_accepted)
            violate(s, "fencing", "a write with token %" PRId64 " was accepted after one with "
                    "token %" PRId64, p->token, s->last_accepted);
        s->last_accepted = p->token;
    } else {
        ev(s, "p%d.%d write with token %" PRId64 " refused: %s", p->id, p->gen, p->token,
           rc == DDB_ETXCANCELED ? (ddb_tx_reason_for(tx, held) == DDB_TXFAIL_CONDITIONAL_CHECK_FAILED
                                        ? "lease no longer holds"
                                        : "resource has a higher token")
                                 : ddb_error_name(rc));
    }
    ddb_item_free(vals);
    ddb_item_free(res);
    ddb_tx_free(tx);
}

/* ------------------------------------------------------- outcomes told truly */

/* An acquire that took no lease. Unless it said its outcome is unknown, it applied
 * nothing: the item names no owner that no lease was handed (an orphan a lost answer
 * left). In doubt, an owner it may have left is noted, as a lease's would be. */
static void truth_not_acquired(sim *s, proc *p, int rc)
{
    ddb_item *it = read_lock(s);
    const char *owner = it ? ddb_item_get_s(it, DDB__LOCK_ATTR_OWNER) : NULL;
    if (owner && !owner_known(s, owner)) {
        if (rc == DDB_EINDOUBT || rc == DDB_ECANCELED) {
            ev(s, "p%d.%d acquire in doubt left owner %d in the item", p->id, p->gen,
               owner_seq(s, owner));
        } else {
            violate(s, "truth", "p%d.%d's acquire reported %s, but the item names owner %d, "
                    "which no lease was handed", p->id, p->gen,
                    rc ? ddb_error_name(rc) : "held by another", owner_seq(s, owner));
        }
    }
    ddb_item_free(it);
}

/* An operator's hand-back (ddb_lock_release_if) of the holder the item shows: released
 * means the item is free with that token, not released means it was not this call's
 * write that freed it. */
static void release_if(sim *s, proc *p)
{
    ddb_item *before = read_lock(s);
    int64_t token = 0;
    bool was_held = before && ddb_item_get(before, DDB__LOCK_ATTR_OWNER);
    if (before)
        ddb_item_get_i64(before, DDB__LOCK_ATTR_FENCE, &token);
    ddb_item_free(before);
    if (!was_held || token < 1)
        return;
    /* An operator hands back a stuck holder's lock: one whose process crashed or no longer
     * believes it holds (forcing a live holder out is the override exclusion forbids). */
    for (int i = 0; i < s->np; i++)
        if (!s->p[i]->crashed && believes(s->p[i]) && s->p[i]->token == token)
            return;
    bool released = false;
    ddb_error err;
    long delays = s->delays;
    int rc = ddb_lock_release_if(p->locks, LOCK, NULL, token, &released, NULL, &err);
    catch_up(p);
    ev(s, "p%d.%d releases token %" PRId64 " as an operator: %s", p->id, p->gen, token,
       rc ? ddb_error_name(rc) : released ? "released" : "not released");
    ddb_item *after = read_lock(s);
    int64_t fence = 0;
    bool held = after && ddb_item_get(after, DDB__LOCK_ATTR_OWNER);
    if (after)
        ddb_item_get_i64(after, DDB__LOCK_ATTR_FENCE, &fence);
    ddb_item_free(after);
    bool freed_with_token = after && !held && fence == token;
    if (rc == 0 && released && !freed_with_token)
        violate(s, "truth", "p%d.%d's release of token %" PRId64 " reported released, but the "
                "item is %s with token %" PRId64, p->id, p->gen, token, held ? "held" : "free",
                fence);
    /* Unless a request was on its way long enough for the others to act (a delay), nobody
     * else wrote the item during the call: free with the token is this call's write. */
    if (rc == 0 && !released && freed_with_token && s->delays == delays)
        violate(s, "truth", "p%d.%d's release of token %" PRId64 " reported not released, "
                "but the item is free with that token", p->id, p->gen, token);
}

/* ---------------------------------------------------------------- one step */

/* Moves a process's clock to true time T: by (T - where it was) * (1 + rate), the
 * fraction of a ms carried to the next move; with `wait`, waits for the work it
 * released. */
static void advance_to(proc *p, int64_t t_ms, bool wait)
{
    int64_t dt_ms = t_ms - p->synced_ms;
    p->synced_ms = t_ms;
    if (dt_ms > 0) {
        int64_t us = dt_ms * 1000 + dt_ms * p->rate_ppm / 1000 + p->owed_us;
        int64_t ms = us / 1000;
        p->owed_us = us - ms * 1000;
        if (ms > 0)
            ddb_fake_clock_advance(p->clock, ms);
    }
    if (wait)
        settle(p);
}

/* After a blocking call: the process's clock catches up with the time its requests were
 * on their way, and the work that released is done. */
static void catch_up(proc *p)
{
    advance_to(p, p->s->now_ms, true);
}

static void act(sim *s, proc *p)
{
    if (p->lease && ddb_cancel_is_set(ddb_lease_ended(p->lease)))
        ended(s, p);
    if (!p->lease) {
        if (rng_chance(&s->r, 700)) {
            ddb_lease *lease = NULL;
            ddb_error err;
            int rc = ddb_lock_try_acquire(p->locks, LOCK, LEASE_MS, &lease, NULL, &err);
            catch_up(p);
            if (rc == 0 && lease)
                acquired(s, p, lease);
            else if (rc != 0)
                ev(s, "p%d.%d acquire failed: %s", p->id, p->gen, ddb_error_name(rc));
            if (!lease)
                truth_not_acquired(s, p, rc);
        } else if (rng_chance(&s->r, 60)) {
            release_if(s, p);
        }
        return;
    }
    int roll = (int)rng_range(&s->r, 0, 999);
    if (roll < 450) {
        fenced_write(s, p);
    } else if (roll < 500) {
        ev(s, "p%d.%d releases token %" PRId64, p->id, p->gen, p->token);
        ddb_lease_release(p->lease);
        catch_up(p);
        p->lease = NULL;
    } else if (roll < 560) {
        bool held = false;
        ddb_error err;
        long delays = s->delays;
        int rc = ddb_lease_renew(p->lease, &held, NULL, &err);
        /* Before the clock catches up (its heartbeat could renew again), and unless the
         * others acted while a request was on its way. */
        if (rc == 0 && held && s->delays == delays &&
            !ddb_cancel_is_set(ddb_lease_ended(p->lease))) {
            /* Renewed: the item still names the lease (its condition held). */
            ddb_item *it = read_lock(s);
            const char *got = it ? ddb_item_get_s(it, DDB__LOCK_ATTR_OWNER) : NULL;
            if (!got || strcmp(got, ddb_lease_owner(p->lease)) != 0)
                violate(s, "truth", "p%d.%d's renewal of token %" PRId64 " reported applied, but "
                        "the item does not name its lease", p->id, p->gen, p->token);
            ddb_item_free(it);
        }
        catch_up(p);
        ev(s, "p%d.%d renews token %" PRId64 ": %s", p->id, p->gen, p->token,
           rc ? ddb_error_name(rc) : held ? "held" : "ended");
    }
    if (p->lease && ddb_cancel_is_set(ddb_lease_ended(p->lease)))
        ended(s, p);
}

static void step(sim *s)
{
    int64_t dt = rng_range(&s->r, 200, s->max_dt);
    s->now_ms += dt;
    /* The processes move in a seeded order, one at a time. */
    int order[MAX_PROCS * 8];
    int n = 0;
    for (int i = 0; i < s->np; i++)
        order[n++] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_range(&s->r, 0, i);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    /* First every clock that runs catches up with true time, so that whoever acts next
     * acts at the same instant for all. */
    for (int k = 0; k < n; k++) {
        proc *p = s->p[order[k]];
        if (p->crashed)
            continue;
        if (p->pause_left > 0) {
            p->synced_ms = s->now_ms; /* frozen: its clock does not run */
            if (--p->pause_left == 0)
                ev(s, "p%d.%d resumes", p->id, p->gen);
            continue;
        }
        advance_to(p, s->now_ms, true);
        if (s->trace)
            ev(s, "p%d.%d at %" PRId64 " on its clock", p->id, p->gen, own_ms(p));
    }
    check(s);
    for (int k = 0; k < n && !s->violation; k++) {
        proc *p = s->p[order[k]];
        if (p->crashed || p->pause_left > 0)
            continue;
        int roll = (int)rng_range(&s->r, 0, 999);
        if (roll < 8) {
            p->crashed = true;
            ev(s, "p%d.%d crashes%s", p->id, p->gen, p->lease ? " holding the lock" : "");
            if (s->np < MAX_PROCS * 8) {
                s->p[s->np] = proc_new(s, p->id, p->gen + 1);
                ev(s, "p%d.%d starts", p->id, p->gen + 1);
                s->np++;
            }
            continue;
        } else if (roll < 20) {
            p->pause_left = (int)rng_range(&s->r, 1, 40);
            if (p->lease)
                p->paused_since_send = true;
            ev(s, "p%d.%d pauses for %d steps", p->id, p->gen, p->pause_left);
            continue;
        } else if (roll < 30) {
            int64_t jump = rng_range(&s->r, -2 * 3600000, 2 * 3600000);
            ddb__fake_clock_jump_wall(p->clock, jump);
            ev(s, "p%d.%d wall clock jumps %+" PRId64 " ms", p->id, p->gen, jump);
        }
        act(s, p);
        check(s);
    }
}

/* ------------------------------------------------------------------- a run */

typedef struct run_result {
    const char *violation;
    char why[512];
    char trace[8192];         /* the events of the processes the violation names */
    char who[2][16];          /* the processes a violation names, for its trace */
    uint64_t log_hash;
    int64_t sim_ms;
    char *log;                /* when kept */
    size_t log_len;
} run_result;

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The last events that name the violation's first process, or another process it names,
 * or are the violation itself: what a reader needs, without the rest of the run. */
static void focused_trace(sim *s, char *out, size_t cap)
{
    const char *lines[64];
    size_t lens[64];
    int n = 0;
    for (const char *p = s->log, *end = s->log + s->log_len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        bool keep = memmem(p, len, "VIOLATION", 9) || memmem(p, len, s->who[0], strlen(s->who[0]));
        /* Any other process the violation's text names. */
        for (const char *w = strstr(s->why, " p"); !keep && w; w = strstr(w + 1, " p")) {
            char tag[16];
            int id, gen;
            if (sscanf(w, " p%d.%d", &id, &gen) == 2) {
                snprintf(tag, sizeof tag, "p%d.%d ", id, gen);
                keep = memmem(p, len, tag, strlen(tag)) != NULL;
            }
        }
        if (keep) {
            if (n == 64) {
                memmove(lines, lines + 1, sizeof lines[0] * 63);
                memmove(lens, lens + 1, sizeof lens[0] * 63);
                n = 63;
            }
            lines[n] = p;
            lens[n++] = len;
        }
        p += len + 1;
    }
    size_t used = 0;
    out[0] = '\0';
    for (int i = n > 30 ? n - 30 : 0; i < n && used + lens[i] + 4 < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "    %.*s\n", (int)lens[i], lines[i]);
}

static run_result run_seed(fakedb *db, uint64_t seed, int procs, int steps, bool trace,
                           bool keep_log)
{
    sim *s = calloc(1, sizeof *s);
    s->seed = seed;
    s->r.s = seed * 0x2545f4914f6cdd1dULL + 1;
    s->db = db;
    s->log = malloc(LOG_MAX);
    s->trace = trace;
    s->freed_at_ms = -1;
    s->max_dt = 4000;
    s->main_thread = pthread_self();
    pthread_mutex_init(&s->mu, NULL);
    fakedb_reset(db);
    fakedb_error ferr;
    fakedb_create_table(db, "Sim", "pk", "sk", &ferr);
    ddb_error err;
    s->observer = ddb_client_new(&(ddb_client_options){.endpoint = fakedb_endpoint(db),
                                                       .region = "us-east-1",
                                                       .access_key_id = "AKIDSIM",
                                                       .secret_access_key = "sim",
                                                       .imds_disabled = true,
                                                       .log_level = DDB_LOG_OFF},
                                 &err);
    s->otable = ddb_table_open(s->observer, "Sim", "pk", "sk", &err);
    s->n = procs;
    for (int i = 0; i < procs; i++)
        s->p[s->np++] = proc_new(s, i, 0);
    for (int i = 0; i < steps && !s->violation; i++)
        step(s);
    run_result r = {.violation = s->violation, .sim_ms = s->now_ms};
    snprintf(r.why, sizeof r.why, "%s", s->why);
    if (s->violation)
        focused_trace(s, r.trace, sizeof r.trace);
    r.log_hash = fnv1a(s->log, s->log_len);
    s->closing = true;
    fakedb_fault_clear(db);
    for (int i = 0; i < s->np; i++)
        proc_free(s->p[i]);
    ddb_table_close(s->otable);
    ddb_client_free(s->observer);
    pthread_mutex_destroy(&s->mu);
    if (keep_log) {
        r.log = s->log;
        r.log_len = s->log_len;
    } else {
        free(s->log);
    }
    free(s);
    return r;
}

int main(int argc, char **argv)
{
    long seeds = 100, steps = 120, procs = 3, replay = 0;
    uint64_t first = 1;
    bool quiet = false, trace = false, stop = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seeds") && v) {
            seeds = atol(v);
            i++;
        } else if (!strcmp(a, "--first") && v) {
            first = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--steps") && v) {
            steps = atol(v);
            i++;
        } else if (!strcmp(a, "--procs") && v) {
            procs = atol(v);
            i++;
        } else if (!strcmp(a, "--replay-check") && v) {
            replay = atol(v);
            i++;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--trace")) {
            trace = true;
        } else if (!strcmp(a, "--stop-on-failure")) {
            stop = true;
        } else {
            fprintf(stderr, "usage: sim [--seeds N] [--first S] [--steps K] [--procs P] "
                            "[--replay-check M] [--quiet] [--trace] [--stop-on-failure]\n");
            return 64;
        }
    }
    if (procs < 2 || procs > MAX_PROCS || seeds < 1 || steps < 1) {
        fprintf(stderr, "sim: --procs is 2..%d; --seeds and --steps at least 1\n", MAX_PROCS);
        return 64;
    }
    fakedb_error ferr;
    fakedb *db = fakedb_start(&(fakedb_options){0}, &ferr);
    if (!db) {
        fprintf(stderr, "sim: fakedb: %s\n", ferr.message);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long failed = 0;
    int64_t sim_ms = 0;
    for (long i = 0; i < seeds; i++) {
        uint64_t seed = first + (uint64_t)i;
        bool again = i < replay;
        run_result r = run_seed(db, seed, (int)procs, (int)steps, trace, again);
        sim_ms += r.sim_ms;
        if (again) {
            run_result r2 = run_seed(db, seed, (int)procs, (int)steps, false, true);
            if (r.log_len != r2.log_len || memcmp(r.log, r2.log, r.log_len) != 0) {
                fprintf(stderr, "sim: seed %" PRIu64 " did not replay: the event logs differ\n",
                        seed);
                failed++;
            }
            free(r2.log);
            free(r.log);
        }
        if (r.violation) {
            failed++;
            printf("FAIL seed %" PRIu64 ": %s: %s\n%s  replay: sim --first %" PRIu64
                   " --seeds 1 --steps %ld --procs %ld --trace\n",
                   seed, r.violation, r.why, r.trace, seed, steps, procs);
            if (stop) {
                seeds = i + 1;
                break;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!quiet || failed)
        printf("%ld seeds (%ld replayed twice), %.1f simulated hours, %.1f s: %.1f seeds/s\n",
               seeds, replay, (double)sim_ms / 3600000.0, secs, (double)seeds / secs);
    printf("%ld passed, %ld failed\n", seeds - failed, failed);
    fakedb_stop(db);
    return failed ? 1 : 0;
}
