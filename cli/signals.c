/* signals.c: the signals the command stops on and forwards, at the bottom of the
 * command's files (it calls none of them). The handlers only write to a self-pipe and set
 * the stop token, which every request and wait of the command is linked to. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Signals that stop dynalock (and are forwarded), and those that are only forwarded. */
static const int STOP_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP};
static const int FORWARD_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int sig_pipe[2] = {-1, -1};
static ddb_cancel *stop_token;
/* Lock-free, so safe in a handler; read by the main thread and the watchdog. */
static atomic_int stop_signal;
/* The signals whose disposition dynalock changed, to be reset in CMD; 0 = none. */
static int installed[N_OF(FORWARD_SIGNALS) + 2];

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(sig_pipe[1], &b, 1); /* a full pipe already wakes the loop */
    (void)w;
    for (size_t i = 0; i < N_OF(STOP_SIGNALS); i++) {
        if (sig == STOP_SIGNALS[i]) {
            atomic_store_explicit(&stop_signal, sig, memory_order_relaxed);
            ddb_cancel_set_from_signal(stop_token);
        }
    }
    errno = saved;
}

/* Installs on_signal for sig, unless sig was ignored when dynalock started (as nohup
 * does for SIGHUP, and a shell for SIGINT in a background job): then it stays ignored,
 * for dynalock and for CMD. */
static int install(int sig, size_t slot)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0)
        return -1;
    if (old.sa_handler == SIG_IGN && sig != SIGCHLD)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sig == SIGPIPE ? SIG_IGN : on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, NULL) != 0)
        return -1;
    installed[slot] = sig;
    return 0;
}

int cli_signals_init(void)
{
    stop_token = ddb_cancel_new();
    if (!stop_token)
        return -1;
    if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    size_t slot = 0;
    for (size_t i = 0; i < N_OF(FORWARD_SIGNALS); i++)
        if (install(FORWARD_SIGNALS[i], slot++) != 0)
            return -1;
    if (install(SIGCHLD, slot++) != 0 || install(SIGPIPE, slot++) != 0)
        return -1;
    return 0;
}

ddb_cancel *cli_stop(void)
{
    return stop_token;
}

int cli_stop_signal(void)
{
    return atomic_load_explicit(&stop_signal, memory_order_relaxed);
}

int cli_signals_fd(void)
{
    return sig_pipe[0];
}

void cli_signals_default(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_OF(installed); i++)
        if (installed[i])
            sigaction(installed[i], &sa, NULL);
}

/* Reads every byte the handlers wrote; forwards the signals to pgid when it is > 0. */
void cli_signals_drain(pid_t pgid)
{
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(sig_pipe[0], buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            for (size_t k = 0; k < N_OF(FORWARD_SIGNALS); k++)
                if (buf[i] == FORWARD_SIGNALS[k] && pgid > 0)
                    kill(-pgid, buf[i]);
        }
    }
}

ddb_cancel *cli_deadline(int64_t ms)
{
    ddb_cancel *t = ddb_cancel_new_linked(cli_stop());
    if (t && ms >= 0 && ddb_cancel_after(t, ddb_clock_system(), ms) != 0) {
        ddb_cancel_unref(t);
        return NULL;
    }
    return t;
}
