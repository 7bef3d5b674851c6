/* guard.c: the requests the command makes and the watchdog behind them. Every request
 * that takes a cancel token gets cli_stop() (or a token linked to it), so a signal cuts
 * it short at once; the watchdog covers the library calls that take none (a release, a
 * simulated write): once the command is stopping and no CMD runs, it has a short grace,
 * then the watchdog names the request DynamoDB did not answer and ends the process. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static pthread_mutex_t guard_mu = PTHREAD_MUTEX_INITIALIZER;
static const cli_req *guard_req;    /* the request in progress, or NULL */
static bool guard_child;            /* CMD runs */
static bool guard_done;             /* the command has finished: never interfere */
static int guard_wake[2] = {-1, -1};
static pthread_t guard_thread;
static bool guard_started;

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(void)
{
    if (guard_wake[1] >= 0) {
        ssize_t w = write(guard_wake[1], "", 1); /* a full pipe already wakes it */
        (void)w;
    }
}

static void signal_name(int sig, char *buf, size_t size)
{
    const char *name = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (name)
        snprintf(buf, size, "SIG%s", name);
    else
        snprintf(buf, size, "signal %d", sig);
}

void cli_req_describe(const cli_req *r, char *buf, size_t size)
{
    int64_t ms = cli_now_ms() - r->start_ms;
    if (ms < 0)
        ms = 0;
    if (ms < 1000)
        snprintf(buf, size, "did not answer %s (waited %lldms)", r->op, (long long)ms);
    else
        snprintf(buf, size, "did not answer %s (waited %lld.%llds)", r->op,
                 (long long)(ms / 1000), (long long)(ms % 1000 / 100));
}

/* Ends the process on behalf of a command that did not stop in time. Called with
 * guard_mu held, so the command cannot finish meanwhile. Only write(2) and _exit: the
 * main thread may hold stdio's locks. */
static void give_up(void)
{
    char sig[32], line[1024];
    int stop_sig = cli_stop_signal();
    signal_name(stop_sig, sig, sizeof sig);
    int status = 128 + stop_sig;
    const cli_req *r = guard_req;
    if (r) {
        char said[128];
        cli_req_describe(r, said, sizeof said);
        status = r->stop_status >= 0 ? r->stop_status
                 : r->writes          ? CLI_EXIT_UNKNOWN
                                      : 128 + stop_sig;
        snprintf(line, sizeof line, "%s: %s: interrupted by %s: DynamoDB %s%s%s%s\n",
                 cli_progname, r->what, sig, said,
                 r->writes ? "; the write may or may not have been applied" : "",
                 r->stop_note ? "; " : "", r->stop_note ? r->stop_note : "");
    } else {
        snprintf(line, sizeof line, "%s: interrupted by %s; stopped without waiting for "
                 "DynamoDB any longer\n", cli_progname, sig);
    }
    size_t len = strlen(line), off = 0;
    while (off < len) {
        ssize_t w = write(2, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    _exit(status);
}

static void *guard_main(void *arg)
{
    (void)arg;
    ddb_cancel *stop = cli_stop();
    int stop_fd = ddb_cancel_fd(stop);
    int64_t since = -1; /* since when the command is stopping with no CMD running */
    for (;;) {
        pthread_mutex_lock(&guard_mu);
        bool done = guard_done;
        bool stopping = ddb_cancel_is_set(stop);
        int64_t now = cli_now_ms();
        int64_t give_up_at = -1;
        if (!done && stopping) {
            if (guard_child) {
                since = -1; /* CMD has the signal; its exit starts the grace */
            } else {
                if (since < 0)
                    since = now;
                /* A request gets the grace from the later of the stop and its start;
                 * work that waits for no request (freeing the client) gets longer. */
                if (guard_req)
                    give_up_at = (guard_req->start_ms > since ? guard_req->start_ms : since) +
                                 CLI_STOP_GRACE_MS;
                else
                    give_up_at = since + CLI_STOP_SAFETY_MS;
                if (now >= give_up_at)
                    give_up(); /* does not return */
            }
        }
        pthread_mutex_unlock(&guard_mu);
        if (done)
            break;
        /* Once the stop is set its descriptor stays readable: then only the wake pipe. */
        struct pollfd fds[2] = {{.fd = guard_wake[0], .events = POLLIN},
                                {.fd = stop_fd, .events = POLLIN}};
        int nfds = stopping || stop_fd < 0 ? 1 : 2;
        int timeout = give_up_at >= 0 ? (int)(give_up_at - now) : -1;
        int n = poll(fds, (nfds_t)nfds, timeout);
        if (n > 0 && fds[0].revents) {
            char buf[64];
            while (read(guard_wake[0], buf, sizeof buf) > 0)
                ;
        }
    }
    return NULL;
}

int cli_guard_start(void)
{
    if (pipe2(guard_wake, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    /* The watchdog takes no signal: the handlers run on the command's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&guard_thread, NULL, guard_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    guard_started = true;
    return 0;
}

void cli_guard_finish(void)
{
    pthread_mutex_lock(&guard_mu);
    guard_done = true;
    pthread_mutex_unlock(&guard_mu);
    if (!guard_started)
        return;
    wake();
    pthread_join(guard_thread, NULL);
    guard_started = false;
    close(guard_wake[0]);
    close(guard_wake[1]);
    guard_wake[0] = guard_wake[1] = -1;
}

void cli_guard_child(bool running)
{
    pthread_mutex_lock(&guard_mu);
    guard_child = running;
    pthread_mutex_unlock(&guard_mu);
    wake();
}

void cli_req_begin(cli_req *r, const char *op, const char *what, bool writes)
{
    pthread_mutex_lock(&guard_mu);
    r->op = op;
    r->what = what;
    r->writes = writes;
    r->start_ms = cli_now_ms();
    r->stop_status = -1;
    r->stop_note = NULL;
    guard_req = r;
    pthread_mutex_unlock(&guard_mu);
    wake();
}

void cli_req_on_stop(cli_req *r, int status, const char *note)
{
    pthread_mutex_lock(&guard_mu);
    r->stop_status = status;
    r->stop_note = note;
    pthread_mutex_unlock(&guard_mu);
}

void cli_req_end(cli_req *r)
{
    pthread_mutex_lock(&guard_mu);
    if (guard_req == r)
        guard_req = NULL;
    pthread_mutex_unlock(&guard_mu);
    wake();
}

bool cli_req_unanswered(int rc)
{
    return rc == DDB_ECANCELED || rc == DDB_ETIMEDOUT;
}

int cli_req_fail(cli_req *r, int rc, const ddb_error *err)
{
    cli_req_end(r);
    if (!cli_req_unanswered(rc))
        return cli_fail(r->what, rc, err);
    char said[128];
    cli_req_describe(r, said, sizeof said);
    const char *unknown = r->writes ? "; the write may or may not have been applied" : "";
    int sig = cli_stop_signal();
    if (rc == DDB_ECANCELED && ddb_cancel_is_set(cli_stop()) && sig) {
        char name[32];
        signal_name(sig, name, sizeof name);
        cli_error("%s: interrupted by %s: DynamoDB %s%s", r->what, name, said, unknown);
        return r->writes ? CLI_EXIT_UNKNOWN : 128 + sig;
    }
    cli_error("%s: DynamoDB %s%s", r->what, said, unknown);
    return r->writes ? CLI_EXIT_UNKNOWN : CLI_EXIT_UNAVAILABLE;
}
