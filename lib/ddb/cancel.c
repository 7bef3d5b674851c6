/* cancel.c: ddb_cancel, the set-once cancel token every blocking call of the library
 * takes. An atomic flag plus an eventfd (made on first need) for poll loops; callbacks
 * run on the setting thread, or on a dispatcher thread when set from a signal handler. */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

typedef struct reg {
    struct reg *next;
    long id;
    void (*fn)(void *arg);
    void *arg;
} reg;

/* A link to a parent token (the registration that propagates a set to us). */
typedef struct parent_link {
    struct parent_link *next;
    ddb_cancel *parent; /* referenced */
    long reg_id;
} parent_link;

struct ddb_cancel {
    int refs;              /* __atomic */
    int set;               /* __atomic: 0 or 1, set once */
    int efd;               /* __atomic: -1 until made */
    pthread_mutex_t mu;
    pthread_cond_t cv;     /* a callback finished */
    reg *regs;             /* pending callbacks, in registration order */
    reg **regs_tail;
    long next_id;
    bool dispatching;      /* some thread runs the callbacks now */
    pthread_t dispatcher;  /* that thread */
    long running_id;       /* the callback running now, 0 when none */
    parent_link *parents;
    ddb__cancel_link *links; /* kept until set or freed (ddb_cancel_after's timers) */
    ddb_cancel *sig_next;  /* on the signal dispatcher's stack */
};

/* ---- the dispatcher for sets made in signal handlers */

static struct {
    pthread_once_t once;
    int started;           /* __atomic */
    int stop;              /* __atomic */
    int efd;
    pthread_t thread;
    ddb_cancel *stack;     /* __atomic: tokens set from signal handlers, pushed lock-free */
} g_disp = { .once = PTHREAD_ONCE_INIT, .efd = -1 };

static void run_callbacks(ddb_cancel *c);
static void drop_links(ddb_cancel *c);

static void *dispatcher_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p = { .fd = g_disp.efd, .events = POLLIN };
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            break;
        uint64_t v;
        ssize_t r = read(g_disp.efd, &v, sizeof v);
        (void)r;
        ddb_cancel *list = __atomic_exchange_n(&g_disp.stack, NULL, __ATOMIC_ACQ_REL);
        while (list) {
            ddb_cancel *c = list;
            list = c->sig_next;
            run_callbacks(c);
            drop_links(c);
            ddb_cancel_unref(c); /* the reference taken in the signal handler */
        }
        if (__atomic_load_n(&g_disp.stop, __ATOMIC_ACQUIRE))
            break;
    }
    return NULL;
}

static void dispatcher_start_once(void)
{
    g_disp.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g_disp.efd < 0)
        return;
    sigset_t all, old;
    sigfillset(&all);
    /* The dispatcher never takes signals, so a handler never runs on it. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&g_disp.thread, NULL, dispatcher_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(g_disp.efd);
        g_disp.efd = -1;
        return;
    }
    __atomic_store_n(&g_disp.started, 1, __ATOMIC_SEQ_CST);
}

static void dispatcher_ensure(void)
{
    pthread_once(&g_disp.once, dispatcher_start_once);
}

__attribute__((destructor)) static void dispatcher_shutdown(void)
{
    if (!__atomic_load_n(&g_disp.started, __ATOMIC_SEQ_CST))
        return;
    __atomic_store_n(&g_disp.stop, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    ssize_t r = write(g_disp.efd, &one, sizeof one);
    (void)r;
    pthread_join(g_disp.thread, NULL);
    close(g_disp.efd);
    __atomic_store_n(&g_disp.started, 0, __ATOMIC_SEQ_CST);
}

/* ---- tokens */

static void cancel_init(ddb_cancel *c)
{
    c->refs = 1;
    c->set = 0;
    c->efd = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->regs = NULL;
    c->regs_tail = &c->regs;
    c->next_id = 1;
}

ddb_cancel *ddb_cancel_new(void)
{
    ddb_cancel *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    cancel_init(c);
    return c;
}

static void propagate(void *arg)
{
    ddb_cancel *child = arg;
    /* The registration keeps child's memory alive while this runs (ddb_cancel_off waits
     * for it), but child may be in its final unref already: then nobody can see it. */
    if (!ddb__cancel_try_ref(child))
        return;
    ddb_cancel_set(child);
    ddb_cancel_unref(child);
}

static int link_parent(ddb_cancel *child, ddb_cancel *parent)
{
    parent_link *l = calloc(1, sizeof *l);
    if (!l)
        return DDB_ENOMEM;
    l->parent = ddb_cancel_ref(parent);
    pthread_mutex_lock(&child->mu);
    l->next = child->parents;
    child->parents = l;
    pthread_mutex_unlock(&child->mu);
    long id = ddb_cancel_on(parent, propagate, child);
    if (id < 0)
        return (int)id;
    /* The id is read by the child's free only, which cannot run before we return. */
    l->reg_id = id;
    return 0;
}

ddb_cancel *ddb_cancel_new_linked2(ddb_cancel *a, ddb_cancel *b)
{
    ddb_cancel *c = ddb_cancel_new();
    if (!c)
        return NULL;
    if ((a && link_parent(c, a) < 0) || (b && link_parent(c, b) < 0)) {
        ddb_cancel_unref(c);
        return NULL;
    }
    return c;
}

ddb_cancel *ddb_cancel_new_linked(ddb_cancel *parent)
{
    return ddb_cancel_new_linked2(parent, NULL);
}

ddb_cancel *ddb_cancel_ref(ddb_cancel *c)
{
    if (c)
        __atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

bool ddb__cancel_try_ref(ddb_cancel *c)
{
    int n = __atomic_load_n(&c->refs, __ATOMIC_RELAXED);
    while (n > 0) {
        if (__atomic_compare_exchange_n(&c->refs, &n, n + 1, true, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return true;
    }
    return false;
}

static void drop_links(ddb_cancel *c)
{
    pthread_mutex_lock(&c->mu);
    for (ddb__cancel_link *l = c->links; l; l = l->next)
        l->drop(l);
    pthread_mutex_unlock(&c->mu);
}

void ddb_cancel_unref(ddb_cancel *c)
{
    if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    /* Unlink from parents first: once each off returns, no propagation runs on us. */
    parent_link *l = c->parents;
    while (l) {
        parent_link *next = l->next;
        if (l->reg_id > 0)
            ddb_cancel_off(l->parent, l->reg_id);
        ddb_cancel_unref(l->parent);
        free(l);
        l = next;
    }
    ddb__cancel_link *k = c->links;
    while (k) {
        ddb__cancel_link *next = k->next;
        k->release(k);
        k = next;
    }
    reg *r = c->regs;
    while (r) {
        reg *next = r->next;
        free(r);
        r = next;
    }
    int fd = __atomic_load_n(&c->efd, __ATOMIC_ACQUIRE);
    if (fd >= 0)
        close(fd);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Async-signal-safe part of a set: the flag and the eventfd. true when this call set it. */
static bool mark_set(ddb_cancel *c)
{
    if (__atomic_exchange_n(&c->set, 1, __ATOMIC_SEQ_CST) != 0)
        return false;
    int fd = __atomic_load_n(&c->efd, __ATOMIC_SEQ_CST);
    if (fd >= 0) {
        uint64_t one = 1;
        ssize_t r = write(fd, &one, sizeof one);
        (void)r;
    }
    return true;
}

static void run_callbacks(ddb_cancel *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->dispatching) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->dispatching = true;
    c->dispatcher = pthread_self();
    reg *r;
    while ((r = c->regs) != NULL) {
        c->regs = r->next;
        if (!c->regs)
            c->regs_tail = &c->regs;
        c->running_id = r->id;
        pthread_mutex_unlock(&c->mu);
        r->fn(r->arg);
        pthread_mutex_lock(&c->mu);
        c->running_id = 0;
        pthread_cond_broadcast(&c->cv);
        free(r);
    }
    c->dispatching = false;
    pthread_mutex_unlock(&c->mu);
}

void ddb_cancel_set(ddb_cancel *c)
{
    if (!c)
        return;
    /* Held across the set: a callback may drop the caller's last reference. */
    ddb_cancel_ref(c);
    if (!mark_set(c)) {
        ddb_cancel_unref(c);
        return;
    }
    run_callbacks(c);
    drop_links(c);
    ddb_cancel_unref(c);
}

void ddb_cancel_set_from_signal(ddb_cancel *c)
{
    if (!c || !mark_set(c))
        return;
    /* No dispatcher means no callback was ever registered anywhere: nothing to run.
     * A registration racing with us sees the flag (set above, seq_cst) and runs at once. */
    if (!__atomic_load_n(&g_disp.started, __ATOMIC_SEQ_CST))
        return;
    __atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
    ddb_cancel *head = __atomic_load_n(&g_disp.stack, __ATOMIC_RELAXED);
    do {
        c->sig_next = head;
    } while (!__atomic_compare_exchange_n(&g_disp.stack, &head, c, true, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    uint64_t one = 1;
    ssize_t r = write(g_disp.efd, &one, sizeof one);
    (void)r;
}

bool ddb_cancel_is_set(const ddb_cancel *c)
{
    return c && __atomic_load_n(&c->set, __ATOMIC_ACQUIRE) != 0;
}

int ddb_cancel_fd(ddb_cancel *c)
{
    if (!c)
        return -1;
    int fd = __atomic_load_n(&c->efd, __ATOMIC_SEQ_CST);
    if (fd >= 0)
        return fd;
    int nfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (nfd < 0)
        return -1;
    int expected = -1;
    if (!__atomic_compare_exchange_n(&c->efd, &expected, nfd, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST)) {
        close(nfd);
        return expected;
    }
    /* A set that read efd == -1 before our store did not write: do it for it. */
    if (__atomic_load_n(&c->set, __ATOMIC_SEQ_CST)) {
        uint64_t one = 1;
        ssize_t r = write(nfd, &one, sizeof one);
        (void)r;
    }
    return nfd;
}

int ddb_cancel_wait(ddb_cancel *c, int64_t timeout_ms)
{
    if (!c)
        return DDB_EINVAL;
    if (ddb_cancel_is_set(c))
        return 0;
    int fd = ddb_cancel_fd(c);
    if (fd < 0)
        return DDB_EIO;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (ddb_cancel_is_set(c))
            return 0;
        struct timespec ts, *tp = NULL;
        if (timeout_ms >= 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            int64_t elapsed_ns = (int64_t)(now.tv_sec - start.tv_sec) * 1000000000 +
                                 (now.tv_nsec - start.tv_nsec);
            int64_t left_ns = timeout_ms * 1000000 - elapsed_ns;
            if (left_ns <= 0)
                return DDB_ETIMEDOUT;
            ts.tv_sec = left_ns / 1000000000;
            ts.tv_nsec = left_ns % 1000000000;
            tp = &ts;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = ppoll(&p, 1, tp, NULL);
        if (n < 0 && errno != EINTR)
            return DDB_EIO;
    }
}

long ddb_cancel_on(ddb_cancel *c, void (*fn)(void *arg), void *arg)
{
    if (!c || !fn)
        return DDB_EINVAL;
    /* Started before the flag is read, so that a set from a signal handler either sees
     * the dispatcher or is seen by us. */
    dispatcher_ensure();
    reg *r = calloc(1, sizeof *r);
    if (!r)
        return DDB_ENOMEM;
    r->fn = fn;
    r->arg = arg;
    pthread_mutex_lock(&c->mu);
    long id = c->next_id++;
    r->id = id;
    if (ddb_cancel_is_set(c)) {
        pthread_mutex_unlock(&c->mu);
        free(r);
        fn(arg);
        return id;
    }
    *c->regs_tail = r;
    c->regs_tail = &r->next;
    pthread_mutex_unlock(&c->mu);
    return id;
}

void ddb_cancel_off(ddb_cancel *c, long id)
{
    if (!c || id <= 0)
        return;
    pthread_mutex_lock(&c->mu);
    reg **pp = &c->regs;
    for (reg *r = c->regs; r; pp = &r->next, r = r->next) {
        if (r->id == id) {
            *pp = r->next;
            if (c->regs_tail == &r->next)
                c->regs_tail = pp;
            pthread_mutex_unlock(&c->mu);
            free(r);
            return;
        }
    }
    while (c->running_id == id && c->dispatching &&
           !pthread_equal(c->dispatcher, pthread_self()))
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void ddb__cancel_lock(ddb_cancel *c)
{
    pthread_mutex_lock(&c->mu);
}

void ddb__cancel_unlock(ddb_cancel *c)
{
    pthread_mutex_unlock(&c->mu);
}

void ddb__cancel_link_push_locked(ddb_cancel *c, ddb__cancel_link *l)
{
    l->next = c->links;
    c->links = l;
}

void ddb__cancel_link_pop_locked(ddb_cancel *c, ddb__cancel_link *l)
{
    if (c->links == l)
        c->links = l->next;
}
