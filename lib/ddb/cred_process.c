/* cred_process.c: credentials from an external command (the profile's credential_process:
 * aws-vault, granted, Okta tools). The command runs with sh -c; its stdout must be the
 * version 1 JSON document; it is killed after a timeout; its stderr goes in the error. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_STDOUT (64 * 1024)
#define MAX_STDERR 400

/* How long a credential_process may run before it is killed. */
#define PROCESS_TIMEOUT_MS 60000
/* A read of the process's output at once. */
#define READ_CHUNK 4096
/* Without pidfds, how often the command's exit is looked for. */
#define PROCESS_POLL_MS 50

static int64_t g_timeout_ms = PROCESS_TIMEOUT_MS;

void ddb__cred_set_process_timeout_ms(int64_t ms)
{
    g_timeout_ms = ms > 0 ? ms : PROCESS_TIMEOUT_MS;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The printable first part of stderr, one line, for an error message. */
static void tidy(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
        else if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == ' ')
        s[--n] = '\0';
}

int ddb__cred_process_parse(const ddb__cred_ctx *ctx, const char *what, const char *text,
                            ddb__credentials *out)
{
    json_tokener *tk = json_tokener_new();
    if (!tk)
        return ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    json_object *o = json_tokener_parse_ex(tk, text, (int)strlen(text));
    bool complete = json_tokener_get_error(tk) == json_tokener_success;
    json_tokener_free(tk);
    if (!o || !complete || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command's output is not a JSON "
                                                     "object", what);
    }
    json_object *v = NULL, *a = NULL, *s = NULL, *t = NULL, *e = NULL;
    json_object_object_get_ex(o, "Version", &v);
    json_object_object_get_ex(o, "AccessKeyId", &a);
    json_object_object_get_ex(o, "SecretAccessKey", &s);
    json_object_object_get_ex(o, "SessionToken", &t);
    json_object_object_get_ex(o, "Expiration", &e);
    int rc = 0;
    if (!v || !json_object_is_type(v, json_type_int) || json_object_get_int(v) != 1) {
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command's output has no \"Version\": "
                                                   "1 (the only version known)", what);
    } else if (!ddb__json_text(a) || !ddb__json_text(s) || !*ddb__json_text(a) ||
               !*ddb__json_text(s) || (t && !ddb__json_text(t))) {
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command's output lacks AccessKeyId or "
                                                   "SecretAccessKey, or one of the keys holds a "
                                                   "NUL", what);
    } else {
        int64_t exp = 0;
        if (e) {
            exp = json_object_is_type(e, json_type_string)
                      ? ddb__parse_iso8601_ms(json_object_get_string(e)) : 0;
            if (exp == 0)
                rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command's Expiration is not "
                                                           "an ISO 8601 time", what);
        }
        if (rc == 0 && !ddb__creds_set(out, ddb__json_text(a), ddb__json_text(s),
                                       ddb__json_text(t), exp))
            rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    }
    json_object_put(o);
    return rc;
}

/* Reads what is waiting on fd without blocking (the command has exited): appended to
 * buf up to max (past it, the rest is dropped and *too_big set when given). Returns true when fd reached its end, false when a
 * process left behind still holds its other end. */
static bool drain(int fd, char *buf, size_t *len, size_t max, bool *too_big)
{
    if (fd < 0)
        return true;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        char chunk[READ_CHUNK];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno != EAGAIN && errno != EWOULDBLOCK;
        if (n == 0)
            return true;
        size_t k = (size_t)n <= max - *len ? (size_t)n : max - *len;
        if (k < (size_t)n && too_big)
            *too_big = true;
        memcpy(buf + *len, chunk, k);
        *len += k;
    }
}

/* Whether the command's process (not reaped) has exited. */
static bool leader_exited(pid_t pid)
{
    siginfo_t si = { 0 };
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

int ddb__cred_process(const ddb__cred_ctx *ctx, const char *profile, const char *command,
                      ddb__credentials *out)
{
    char what[160];
    snprintf(what, sizeof what, "credential_process of profile '%.100s'", profile);
    int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (outp[i] >= 0)
                close(outp[i]);
            if (errp[i] >= 0)
                close(errp[i]);
        }
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: cannot make a pipe: %s", what,
                         strerror(e));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    /* A process group of its own: what the command starts can be killed with it. */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    char sh[] = "sh", dash_c[] = "-c";
    char *cmd = strdup(command);
    char *argv[] = { sh, dash_c, cmd, NULL };
    pid_t pid;
    int sr = cmd ? posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ) : ENOMEM;
    free(cmd);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(outp[1]);
    close(errp[1]);
    if (sr != 0) {
        close(outp[0]);
        close(errp[0]);
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: cannot start /bin/sh: %s", what,
                         strerror(sr));
    }
    /* The command's exit wakes the poll (a pidfd), so that a process it left behind
     * holding stdout does not keep the reading going; without pidfds, a short poll. */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    char *so = malloc(MAX_STDOUT + 1);
    char se[MAX_STDERR + 1];
    size_t so_n = 0, se_n = 0;
    bool too_big = false, timed_out = false, cancelled = false, exited = false;
    int64_t deadline = now_ms() + g_timeout_ms;
    /* stdout, stderr, the cancel token's eventfd (a cancel wakes the poll at once), and
     * the pidfd. */
    int cfd = ctx->cancel ? ddb_cancel_fd(ctx->cancel) : -1;
    struct pollfd pf[4] = { { .fd = outp[0], .events = POLLIN }, { .fd = errp[0], .events = POLLIN },
                            { .fd = cfd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
    int open_fds = 2;
    while (open_fds > 0 && so) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        if (ddb_cancel_is_set(ctx->cancel)) {
            cancelled = true;
            break;
        }
        if (pidfd < 0 && left > PROCESS_POLL_MS)
            left = PROCESS_POLL_MS;
        int pr = poll(pf, 4, (int)(left < INT_MAX ? left : INT_MAX));
        if (pr < 0 && errno != EINTR)
            break;
        if ((pidfd >= 0 && pr > 0 && (pf[3].revents & POLLIN)) ||
            (pidfd < 0 && leader_exited(pid))) {
            exited = true;
            break;
        }
        for (int i = 0; i < 2 && pr > 0; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[READ_CHUNK];
            ssize_t n = read(pf[i].fd, buf, sizeof buf);
            if (n <= 0) {
                if (n < 0 && errno == EINTR)
                    continue;
                pf[i].fd = -1;
                open_fds--;
                continue;
            }
            if (i == 0) {
                if (so_n + (size_t)n > MAX_STDOUT) {
                    too_big = true;
                    open_fds = 0;
                    break;
                }
                memcpy(so + so_n, buf, (size_t)n);
                so_n += (size_t)n;
            } else {
                size_t k = (size_t)n < MAX_STDERR - se_n ? (size_t)n : MAX_STDERR - se_n;
                memcpy(se + se_n, buf, k);
                se_n += k;
            }
        }
    }
    /* The command has exited: what it wrote is in the pipes. A pipe still open after
     * that is held by a process it left behind. */
    bool left_behind = false;
    if (exited && so) {
        left_behind = !drain(pf[0].fd, so, &so_n, MAX_STDOUT, &too_big);
        left_behind = !drain(pf[1].fd, se, &se_n, MAX_STDERR, NULL) || left_behind;
    }
    close(outp[0]);
    close(errp[0]);
    if (pidfd >= 0)
        close(pidfd);
    int status = 0;
    /* The group goes at the timeout, a cancel, too much output, or when something left
     * behind still holds the pipes; the command is not reaped before, so its process
     * group id cannot have been reused. */
    if (timed_out || too_big || cancelled || !so || left_behind)
        kill(-pid, SIGKILL);
    if (timed_out || too_big || cancelled || !so) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        status = -1;
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    se[se_n] = '\0';
    tidy(se);
    int rc;
    if (!so)
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    else if (cancelled)
        rc = ddb__fail(ctx->err, DDB_ECANCELED, "%s: cancelled while the command ran", what);
    else if (timed_out)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command did not finish within %lld ms "
                                                   "and was killed", what, (long long)g_timeout_ms);
    else if (too_big)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command wrote more than %d bytes",
                       what, MAX_STDOUT);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the command failed (%s %d)%s%.300s", what,
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                       se[0] ? ": " : "", se);
    else {
        so[so_n] = '\0';
        rc = ddb__cred_process_parse(ctx, what, so, out);
    }
    if (so) {
        memset(so, 0, so_n);
        free(so);
    }
    return rc;
}
