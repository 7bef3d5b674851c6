/* tablestate.c: what the lock table's layers share, below them all: lock ids, the checks
 * of names, values and durations, the key of a lock, the holders the table has seen
 * (which a takeover depends on), the list of the leases it holds, and the refusal hooks
 * that tests watch. It calls no other file of lib/coord. */
#include "coord_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ddb_private.h"
#include "utf8.h"

/* ------------------------------------------------------------------- ids */

void ddb__lock_new_id(char out[DDB__LOCK_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char bytes[DDB__LOCK_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* No entropy source: fall back to a weaker mix that is still unique enough
             * to tell one acquire from another in this process. */
            static _Atomic uint64_t counter;
            uint64_t x = (uint64_t)(uintptr_t)out ^ ((uint64_t)getpid() << 32) ^
                         atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ULL;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            x ^= (uint64_t)ts.tv_nsec * 0xbf58476d1ce4e5b9ULL + (uint64_t)ts.tv_sec;
            for (size_t i = got; i < sizeof bytes; i++) {
                x ^= x >> 31;
                x *= 0x94d049bb133111ebULL;
                bytes[i] = (unsigned char)(x >> 56);
            }
            break;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof bytes; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[DDB__LOCK_ID_LEN] = '\0';
}

/* ------------------------------------------------------------ validation */

int ddb_lock_name_check(const char *name, ddb_error *err)
{
    if (!name)
        return ddb__fail(err, DDB_EINVAL, "The lock name is NULL.");
    size_t len = strlen(name);
    if (len == 0)
        return ddb__fail(err, DDB_EINVAL, "The lock name is empty.");
    if (len > DDB__LOCK_NAME_MAX)
        return ddb__fail(err, DDB_EINVAL,
                         "The lock name is %zu bytes long; a lock name has at most %d bytes.",
                         len, DDB__LOCK_NAME_MAX);
    const unsigned char *s = (const unsigned char *)name;
    for (size_t i = 0; i < len;) {
        if (s[i] <= 0x20 || s[i] == 0x7F)
            return ddb__fail(err, DDB_EINVAL,
                             "The lock name has a space or control character at byte %zu; "
                             "a lock name is printable text without spaces.",
                             i);
        size_t n = dl__utf8_seq(s + i, len - i);
        if (n == 0)
            return ddb__fail(err, DDB_EINVAL,
                             "The lock name is not valid UTF-8 at byte %zu.", i);
        i += n;
    }
    return 0;
}

/* A holder label: 1..256 characters (code points) of printable text. */
int dl_label_check(const char *label, ddb_error *err)
{
    const unsigned char *s = (const unsigned char *)label;
    size_t chars = 0, len = strlen(label);
    for (size_t i = 0; i < len;) {
        if (s[i] < 0x20 || s[i] == 0x7F)
            return ddb__fail(err, DDB_EINVAL,
                             "The holder label has a control character at byte %zu; it is "
                             "the name of the process, in printable text.",
                             i);
        size_t n = dl__utf8_seq(s + i, len - i);
        if (n == 0)
            return ddb__fail(err, DDB_EINVAL,
                             "The holder label is not valid UTF-8 at byte %zu.", i);
        i += n;
        chars++;
    }
    if (chars < 1 || chars > DDB_HOLDER_LABEL_MAX)
        return ddb__fail(err, DDB_EINVAL,
                         "The holder label has %zu characters; it must have from 1 to %d.",
                         chars, DDB_HOLDER_LABEL_MAX);
    return 0;
}

int dl_value_check(const char *value, ddb_error *err)
{
    size_t len = strlen(value);
    if (len < 1 || len > DDB_LEASE_VALUE_MAX_BYTES)
        return ddb__fail(err, DDB_EINVAL,
                         "The lease value has %zu bytes; it must have from 1 to %d.", len,
                         DDB_LEASE_VALUE_MAX_BYTES);
    if (!dl__utf8_valid(value, len))
        return ddb__fail(err, DDB_EINVAL, "The lease value is not valid UTF-8.");
    return 0;
}

int dl_lease_ms_check(int64_t lease_ms, ddb_error *err)
{
    if (lease_ms < DDB_LEASE_MIN_MS || lease_ms > DDB_LEASE_MAX_MS)
        return ddb__fail(err, DDB_EINVAL,
                         "The lease duration is %" PRId64 " ms; it must be from %lld ms "
                         "(1 second) to %lld ms (1 day).",
                         lease_ms, DDB_LEASE_MIN_MS, DDB_LEASE_MAX_MS);
    return 0;
}

ddb_table *ddb_lock_table_table(const ddb_lock_table *l)
{
    return l ? l->table : NULL;
}

const char *ddb__lock_table_ttl_attribute(const ddb_lock_table *l)
{
    return l->ttl_attribute;
}

int64_t ddb__lock_table_ttl_epoch_s(const ddb_lock_table *l)
{
    return (ddb_clock_wall_ms(l->clock) + l->ttl_retention_ms) / 1000;
}

const char *ddb__lock_table_holder_label(const ddb_lock_table *l)
{
    return l->holder_label;
}

ddb_item *dl_lock_key_table(ddb_table *table, const char *name, ddb_error *err)
{
    if (ddb_lock_name_check(name, err) != 0)
        return NULL;
    size_t n = strlen(DDB__LOCK_PK_PREFIX) + strlen(name) + 1;
    char *pk = malloc(n);
    ddb_item *key = ddb_item_new();
    if (!pk || !key) {
        free(pk);
        ddb_item_free(key);
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        return NULL;
    }
    snprintf(pk, n, "%s%s", DDB__LOCK_PK_PREFIX, name);
    const char *sk = ddb_table_sk(table);
    int rc = ddb_item_set_s(key, ddb_table_pk(table), pk);
    if (rc == 0 && sk)
        rc = ddb_item_set_s(key, sk, DDB__LOCK_SK_VALUE);
    free(pk);
    if (rc != 0) {
        ddb_item_free(key);
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        return NULL;
    }
    return key;
}

ddb_item *ddb__lock_key(const ddb_lock_table *l, const char *name, ddb_error *err)
{
    if (!l) {
        ddb__fail(err, DDB_EINVAL, "The lock table is NULL.");
        return NULL;
    }
    return dl_lock_key_table(l->table, name, err);
}

/* ----------------------------------------------------------------- leases */

void dl_table_add_lease(ddb_lock_table *l, ddb_lease *lease)
{
    pthread_mutex_lock(&l->mu);
    lease->prev = NULL;
    lease->next = l->leases;
    if (l->leases)
        l->leases->prev = lease;
    l->leases = lease;
    pthread_mutex_unlock(&l->mu);
}

void dl_table_remove_lease(ddb_lock_table *l, ddb_lease *lease)
{
    pthread_mutex_lock(&l->mu);
    if (lease->prev)
        lease->prev->next = lease->next;
    else if (l->leases == lease)
        l->leases = lease->next;
    if (lease->next)
        lease->next->prev = lease->prev;
    lease->prev = lease->next = NULL;
    pthread_mutex_unlock(&l->mu);
}

/* ------------------------------------------------------------ seen holders */

/* A small chained hash map from lock name to the holder last seen. Entries go when the
 * lock table acquires the lock or reads it free, so it holds only locks seen held. */
typedef struct seen_node {
    char *name;
    dl_seen_entry e;
    struct seen_node *next;
} seen_node;

struct dl_seen {
    seen_node **buckets;
    size_t n_buckets;
    size_t count;
};

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void dl_seen_entry_cleanup(dl_seen_entry *e)
{
    if (!e)
        return;
    free(e->owner);
    free(e->rvn);
    free(e->holder);
    memset(e, 0, sizeof *e);
}

static int entry_copy(dl_seen_entry *dst, const dl_seen_entry *src)
{
    memset(dst, 0, sizeof *dst);
    dst->lease_ms = src->lease_ms;
    dst->first_seen_ns = src->first_seen_ns;
    dst->owner = src->owner ? strdup(src->owner) : NULL;
    dst->rvn = src->rvn ? strdup(src->rvn) : NULL;
    dst->holder = src->holder ? strdup(src->holder) : NULL;
    if ((src->owner && !dst->owner) || (src->rvn && !dst->rvn) ||
        (src->holder && !dst->holder)) {
        dl_seen_entry_cleanup(dst);
        return DDB_ENOMEM;
    }
    return 0;
}

void dl_seen_free(dl_seen *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_buckets; i++) {
        for (seen_node *n = s->buckets[i], *next; n; n = next) {
            next = n->next;
            dl_seen_entry_cleanup(&n->e);
            free(n->name);
            free(n);
        }
    }
    free(s->buckets);
    free(s);
}

static seen_node **seen_slot(dl_seen *s, const char *name)
{
    seen_node **p = &s->buckets[name_hash(name) & (s->n_buckets - 1)];
    while (*p && strcmp((*p)->name, name) != 0)
        p = &(*p)->next;
    return p;
}

static int seen_grow(dl_seen *s)
{
    size_t n = s->n_buckets ? s->n_buckets * 2 : 16;
    seen_node **b = calloc(n, sizeof *b);
    if (!b)
        return DDB_ENOMEM;
    for (size_t i = 0; i < s->n_buckets; i++) {
        for (seen_node *node = s->buckets[i], *next; node; node = next) {
            next = node->next;
            size_t j = name_hash(node->name) & (n - 1);
            node->next = b[j];
            b[j] = node;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->n_buckets = n;
    return 0;
}

bool dl_seen_get(ddb_lock_table *l, const char *name, dl_seen_entry *out)
{
    bool found = false;
    pthread_mutex_lock(&l->mu);
    if (l->seen && l->seen->n_buckets) {
        seen_node *n = *seen_slot(l->seen, name);
        if (n && entry_copy(out, &n->e) == 0)
            found = true;
    }
    pthread_mutex_unlock(&l->mu);
    return found;
}

/* Records (owner, rvn) of li for `name` in *sp (made when NULL): keeps the first-seen
 * time of the same record version, else starts it at now_ns. The node, or NULL when out
 * of memory. Under the lock table's mutex. */
static seen_node *seen_put_locked(dl_seen **sp, const char *name, const ddb__lock_item *li,
                                  int64_t now_ns)
{
    if (!*sp && !(*sp = calloc(1, sizeof **sp)))
        return NULL;
    dl_seen *s = *sp;
    if (s->count + 1 > s->n_buckets && seen_grow(s) != 0)
        return NULL;
    seen_node **slot = seen_slot(s, name);
    seen_node *n = *slot;
    if (n && n->e.owner && n->e.rvn && strcmp(n->e.owner, li->owner) == 0 &&
        strcmp(n->e.rvn, li->rvn) == 0) {
        /* The same record version: the wait that a takeover needs goes on. */
        n->e.lease_ms = li->lease_ms;
        return n;
    }
    dl_seen_entry e = {.lease_ms = li->lease_ms, .first_seen_ns = now_ns};
    e.owner = strdup(li->owner);
    e.rvn = strdup(li->rvn);
    e.holder = li->holder ? strdup(li->holder) : NULL;
    if (!e.owner || !e.rvn || (li->holder && !e.holder)) {
        dl_seen_entry_cleanup(&e);
        return NULL;
    }
    if (!n) {
        n = calloc(1, sizeof *n);
        if (!n || !(n->name = strdup(name))) {
            free(n);
            dl_seen_entry_cleanup(&e);
            return NULL;
        }
        *slot = n;
        s->count++;
    }
    dl_seen_entry_cleanup(&n->e);
    n->e = e;
    return n;
}

int dl_seen_put(ddb_lock_table *l, const char *name, const ddb__lock_item *li, int64_t now_ns,
                dl_seen_entry *out)
{
    pthread_mutex_lock(&l->mu);
    seen_node *n = seen_put_locked(&l->seen, name, li, now_ns);
    int rc = n ? 0 : DDB_ENOMEM;
    if (n && out)
        rc = entry_copy(out, &n->e);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* The node of `name` in s when it holds li's record version, else NULL. */
static seen_node *seen_match(dl_seen *s, const char *name, const ddb__lock_item *li)
{
    if (!s || !s->n_buckets)
        return NULL;
    seen_node *n = *seen_slot(s, name);
    if (n && n->e.owner && n->e.rvn && strcmp(n->e.owner, li->owner) == 0 &&
        strcmp(n->e.rvn, li->rvn) == 0)
        return n;
    return NULL;
}

static void seen_remove(dl_seen *s, const char *name)
{
    if (!s || !s->n_buckets)
        return;
    seen_node **slot = seen_slot(s, name);
    seen_node *n = *slot;
    if (n) {
        *slot = n->next;
        dl_seen_entry_cleanup(&n->e);
        free(n->name);
        free(n);
        s->count--;
    }
}

int64_t dl_seen_unchanged_ms(ddb_lock_table *l, const char *name, const ddb__lock_item *li,
                             int64_t now_ns, bool record)
{
    pthread_mutex_lock(&l->mu);
    int64_t first = now_ns;
    if (!li->held) {
        if (record)
            seen_remove(l->read_seen, name);
    } else {
        /* Out of memory only loses the memory of reads: the answer is then "first seen". */
        seen_node *r = record ? seen_put_locked(&l->read_seen, name, li, now_ns)
                              : seen_match(l->read_seen, name, li);
        seen_node *a = seen_match(l->seen, name, li);
        if (r && r->e.first_seen_ns < first)
            first = r->e.first_seen_ns;
        if (a && a->e.first_seen_ns < first)
            first = a->e.first_seen_ns;
    }
    pthread_mutex_unlock(&l->mu);
    return (now_ns - first) / DL_NS_PER_MS;
}

void dl_seen_forget(ddb_lock_table *l, const char *name)
{
    pthread_mutex_lock(&l->mu);
    seen_remove(l->seen, name);
    pthread_mutex_unlock(&l->mu);
}

/* --------------------------------------------------------------- refusals */

long ddb_lock_table_watch_refusals(ddb_lock_table *l, ddb_refusal_fn fn, void *arg,
                                   ddb_error *err)
{
    if (!l || !fn)
        return ddb__fail(err, DDB_EINVAL, "watching refusals needs a lock table and a function");
    dl_refusal_hook *h = calloc(1, sizeof *h);
    if (!h)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    h->fn = fn;
    h->arg = arg;
    pthread_mutex_lock(&l->mu);
    h->id = l->next_hook_id++;
    h->next = l->hooks;
    l->hooks = h;
    pthread_mutex_unlock(&l->mu);
    return h->id;
}

void ddb_lock_table_unwatch_refusals(ddb_lock_table *l, long id)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    /* Hooks run with the mutex released; wait until none runs, so the one removed is
     * not running when this returns. */
    while (l->hooks_running > 0)
        pthread_cond_wait(&l->hooks_idle, &l->mu);
    for (dl_refusal_hook **p = &l->hooks; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            dl_refusal_hook *h = *p;
            *p = h->next;
            free(h);
            break;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

void dl_refused(ddb_lock_table *l, const char *name)
{
    pthread_mutex_lock(&l->mu);
    if (!l->hooks) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    l->hooks_running++;
    /* The list is only changed when no hook runs, so it can be walked unlocked. */
    dl_refusal_hook *hooks = l->hooks;
    pthread_mutex_unlock(&l->mu);
    for (dl_refusal_hook *h = hooks; h; h = h->next)
        h->fn(h->arg, name);
    pthread_mutex_lock(&l->mu);
    if (--l->hooks_running == 0)
        pthread_cond_broadcast(&l->hooks_idle);
    pthread_mutex_unlock(&l->mu);
}
