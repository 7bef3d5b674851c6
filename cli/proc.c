/* proc.c: the child that `run` and `leader` start. CMD runs in a process group of its
 * own, so that a signal reaches everything it started; the wait loop polls the signals'
 * self-pipe (signals.c), the lease's "ended" descriptor and a SIGTERM-to-SIGKILL
 * deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Descriptors open when dynalock started pass on to CMD (as `3>file` does through
 * flock); those the libraries opened since (connections, event descriptors) do not. */
#define FD_SCAN_MAX 1024
static bool inherited[FD_SCAN_MAX];
static unsigned fd_limit = FD_SCAN_MAX;

void cli_fds_init(void)
{
    for (int fd = 3; fd < FD_SCAN_MAX; fd++)
        inherited[fd] = fcntl(fd, F_GETFD) != -1;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fd_limit = rl.rlim_cur > 65536 ? 65536 : (unsigned)rl.rlim_cur;
    else
        fd_limit = 65536;
}

/* In the child: closes [lo, hi]. Async-signal-safe. */
static void close_span(unsigned lo, unsigned hi)
{
    if (lo > hi)
        return;
    if (close_range(lo, hi, 0) == 0)
        return;
    for (unsigned fd = lo; fd <= hi && fd < fd_limit; fd++)
        close((int)fd);
}

/* In the child: closes every descriptor above 2 that dynalock did not inherit, except
 * `keep`. */
static void close_own_fds(int keep)
{
    unsigned lo = 3;
    for (unsigned fd = 3; fd < FD_SCAN_MAX; fd++) {
        if (inherited[fd] || (int)fd == keep) {
            if (fd > lo)
                close_span(lo, fd - 1);
            lo = fd + 1;
        }
    }
    if (keep >= FD_SCAN_MAX) {
        close_span(lo, (unsigned)keep - 1);
        lo = (unsigned)keep + 1;
    }
    close_span(lo, ~0U);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_child_spawn(cli_child *ch, char **argv, char **envp)
{
    memset(ch, 0, sizeof *ch);
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        cli_error("cannot start '%s': %s", argv[0], strerror(errno));
        return CLI_EXIT_OSERR;
    }
    cli_signals_drain(0);
    cli_guard_child(true);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        cli_guard_child(false);
        close(err_pipe[0]);
        close(err_pipe[1]);
        cli_error("cannot start '%s': %s", argv[0], strerror(e));
        return CLI_EXIT_OSERR;
    }
    if (pid == 0) {
        /* The child: only async-signal-safe calls until exec. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(CLI_EXIT_LOST);
        cli_signals_default();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        close_own_fds(err_pipe[1]);
        execvpe(argv[0], argv, envp);
        int e = errno;
        ssize_t w = write(err_pipe[1], &e, sizeof e);
        (void)w;
        _exit(e == ENOENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_CANNOT_EXEC);
    }
    setpgid(pid, pid); /* also here, so that no signal can miss the group */
    close(err_pipe[1]);
    int child_errno = 0;
    ssize_t got;
    do {
        got = read(err_pipe[0], &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    close(err_pipe[0]);
    ch->pid = pid;
    if (got == (ssize_t)sizeof child_errno) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        ch->exited = true;
        ch->status = status;
        cli_guard_child(false);
        cli_error("cannot run '%s': %s", argv[0], strerror(child_errno));
        return child_errno == ENOENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_CANNOT_EXEC;
    }
    /* A stop that arrived before the group existed reaches CMD now. */
    int sig = cli_stop_signal();
    if (ddb_cancel_is_set(cli_stop()) && sig)
        kill(-pid, sig);
    return 0;
}

int cli_child_wait(cli_child *ch, ddb_lease *lease, int64_t kill_after_ms)
{
    int rc = 0;
    int ended_fd = lease ? ddb_cancel_fd(ddb_lease_ended(lease)) : -1;
    bool watching = ended_fd >= 0;
    int64_t kill_at = -1;
    while (!ch->exited) {
        /* The lease first: the moment it ends, CMD's group gets SIGTERM. Nothing here
         * waits for DynamoDB or writes a log line before the signal is sent; the lease
         * is only ever released after CMD exits, so its end is always a loss. */
        if (watching && ddb_cancel_is_set(ddb_lease_ended(lease))) {
            watching = false;
            ch->lost = true;
            kill(-ch->pid, SIGTERM);
            kill_at = now_ms() + kill_after_ms;
        }
        int status;
        pid_t r = waitpid(ch->pid, &status, WNOHANG);
        if (r == ch->pid) {
            ch->exited = true;
            ch->status = status;
            break;
        }
        if (r < 0 && errno != EINTR) {
            cli_error("cannot wait for CMD: %s", strerror(errno));
            rc = CLI_EXIT_OSERR;
            break;
        }
        int64_t now = now_ms();
        if (kill_at >= 0 && now >= kill_at) {
            kill(-ch->pid, SIGKILL);
            ch->killed = true;
            kill_at = -1;
        }
        struct pollfd fds[2] = {{.fd = cli_signals_fd(), .events = POLLIN},
                                {.fd = ended_fd, .events = POLLIN}};
        int timeout = -1;
        if (kill_at >= 0)
            timeout = kill_at - now > 60000 ? 60000 : (int)(kill_at - now);
        int n = poll(fds, watching ? 2 : 1, timeout);
        if (n < 0 && errno != EINTR) {
            cli_error("cannot wait for CMD: %s", strerror(errno));
            rc = CLI_EXIT_OSERR;
            break;
        }
        if (n > 0 && fds[0].revents)
            cli_signals_drain(ch->pid);
    }
    cli_guard_child(false);
    return rc;
}

int cli_child_status(const cli_child *ch)
{
    if (WIFEXITED(ch->status))
        return WEXITSTATUS(ch->status);
    if (WIFSIGNALED(ch->status))
        return 128 + WTERMSIG(ch->status);
    return CLI_EXIT_SOFTWARE;
}

void cli_child_describe(const cli_child *ch, char *buf, size_t size)
{
    if (WIFEXITED(ch->status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(ch->status));
    else if (WIFSIGNALED(ch->status))
    {
        const char *name = sigabbrev_np(WTERMSIG(ch->status));
        if (name)
            snprintf(buf, size, "was killed by SIG%s", name);
        else
            snprintf(buf, size, "was killed by signal %d", WTERMSIG(ch->status));
    }
    else
        snprintf(buf, size, "ended");
}
