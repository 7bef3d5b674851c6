/* main.c: the `fakedb` program, a fake DynamoDB server for tests and CI in any language.
 * It runs libfakedb until SIGTERM or SIGINT, then finishes in-flight requests and exits
 * 0. Bad arguments exit 64 (EX_USAGE) with a usage line. */
#include <dynalock/version.h>
#include <fakedb/fakedb.h>

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FAKEDB_DOCDIR
#define FAKEDB_DOCDIR "/usr/local/share/doc/fakedb"
#endif

static const char k_usage[] =
    "usage: fakedb [--host ADDR] [--port N] [--port-file PATH] [--db PATH]\n"
    "              [--clock system|fake[:EPOCH_MS]] [--credentials KEY:SECRET]\n"
    "              [--threads N] [--idle-timeout MS] [--max-connections N] [--log]\n"
    "              [--cors ORIGINS|none] [--account-id ID] [--delay-transient-statuses[=MS]]\n"
    "              [--separate-databases] [--help] [--version]\n";

static const char k_help[] =
    "A fake DynamoDB server: DynamoDB's JSON protocol over HTTP, stored in sqlite.\n"
    "\n"
    "  --host ADDR             address to listen on (default 127.0.0.1)\n"
    "  --port N                port (default 8000, DynamoDB Local's; 0 picks a free one)\n"
    "  --port-file PATH        write the chosen port to PATH (atomically)\n"
    "  --db PATH               keep data in a sqlite file (default: in memory)\n"
    "  --clock system|fake[:EPOCH_MS]\n"
    "                          the server's clock; a fake one moves only through\n"
    "                          POST /fake/clock/advance and /fake/clock/set\n"
    "  --credentials KEY:SECRET  verify SigV4 signatures with this key; /fake/ (but\n"
    "                          /fake/health) then needs them too\n"
    "  --cors ORIGINS|none     origins allowed by CORS, comma-separated, * for any\n"
    "                          (default *); none: no CORS\n"
    "  --threads N             HTTP event loops (default 1)\n"
    "  --idle-timeout MS       close a connection idle (or a request stalled) this long\n"
    "                          (default 60000)\n"
    "  --max-connections N     open connections at most (default: from the descriptor\n"
    "                          limit, at most 16384); the longest idle make room\n"
    "  --log                   one line per request on stderr\n"
    "  --account-id ID         the account in ARNs (12 digits; default 000000000000)\n"
    "  --delay-transient-statuses[=MS]\n"
    "                          new tables stay CREATING, updated ones UPDATING and\n"
    "                          deleted ones DELETING for MS (default 5000) ms of the\n"
    "                          server's clock\n"
    "  --separate-databases    a database per access key and region of the requests'\n"
    "                          signatures, as DynamoDB Local without -sharedDb (default:\n"
    "                          one database shared by all); with --db PATH, each is\n"
    "                          the file PATH.KEY_REGION.sqlite\n"
    "  --help, --version\n"
    "\n"
    "It prints \"fakedb listening on http://HOST:PORT\" once it serves. SIGTERM or SIGINT\n"
    "stops it after in-flight requests. http://HOST:PORT/fake/console shows its tables,\n"
    "locks, clock, faults and requests in a browser.\n"
    "\n"
    "More: man fakedb, and the guide " FAKEDB_DOCDIR "/fakedb.md.\n";

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "fakedb: %s: %s\n%s", what, arg, k_usage);
    return 64;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Writes the port through a temporary file in the target's folder, then a rename: a
 * reader never sees half a number. The temporary file is made by mkstemp (O_EXCL, a
 * random name), so a symbolic link planted at a guessable name never receives it. */
static int write_port_file(const char *path, int port)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return -1;
    snprintf(tmp, n, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    int rc = -1;
    if (fd >= 0) {
        char text[16];
        int len = snprintf(text, sizeof text, "%d\n", port);
        bool ok = write(fd, text, (size_t)len) == len;
        ok = fchmod(fd, 0644) == 0 && ok;
        ok = close(fd) == 0 && ok;
        if (ok && rename(tmp, path) == 0)
            rc = 0;
        else
            unlink(tmp);
    }
    free(tmp);
    return rc;
}

int main(int argc, char **argv)
{
    /* A Query or Scan page allocates its megabyte several times over (the items' text,
     * the serializer's buffer, the answer). With glibc's defaults each such block is
     * mapped and unmapped again, or trimmed from the top of the worker's heap, after
     * every answer, and faulted in again by the next page, which made a page cost ten
     * times what it costs otherwise (bench/RESULTS.md). The server keeps what it freed
     * for the next request instead: blocks up to 4 MiB (a page's are 1.4 MB) come from
     * the heap, and a heap is trimmed only past 16 MiB free. */
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    fakedb_options o;
    memset(&o, 0, sizeof o);
    const char *port_file = NULL, *account_id = NULL;
    long transient_ms = 0;
    o.port = 8000; /* the program's default, DynamoDB Local's; the library's is 0 */
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        char *val = NULL;
        char name[64];
        if (strncmp(arg, "--", 2) != 0)
            return usage_error("unexpected argument", arg);
        char *eq = strchr(arg, '=');
        size_t nl = eq ? (size_t)(eq - arg) : strlen(arg);
        if (nl >= sizeof name)
            return usage_error("unknown option", arg);
        memcpy(name, arg, nl);
        name[nl] = 0;
        static const char *const known[] = { "--help", "--version", "--log", "--host", "--port",
                                             "--threads", "--port-file", "--db", "--credentials",
                                             "--clock", "--idle-timeout", "--max-connections", "--cors",
                                             "--account-id", "--delay-transient-statuses",
                                             "--separate-databases", NULL };
        bool is_known = false;
        for (size_t k = 0; known[k]; k++)
            is_known = is_known || !strcmp(name, known[k]);
        if (!is_known)
            return usage_error("unknown option", arg);
        bool flag = !strcmp(name, "--help") || !strcmp(name, "--version") || !strcmp(name, "--log") ||
                    !strcmp(name, "--separate-databases");
        bool value_optional = !strcmp(name, "--delay-transient-statuses");
        if (value_optional && eq) {
            val = eq + 1;
        } else if (flag || value_optional) {
            if (eq)
                return usage_error("option takes no value", arg);
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return usage_error("option needs a value", arg);
        }
        long v;
        if (!strcmp(name, "--help")) {
            fputs(k_usage, stdout);
            fputs(k_help, stdout);
            return 0;
        } else if (!strcmp(name, "--version")) {
            printf("fakedb %s\n", DDB_VERSION_STRING);
            return 0;
        } else if (!strcmp(name, "--log")) {
            o.log_requests = true;
        } else if (!strcmp(name, "--separate-databases")) {
            o.separate_databases = true;
        } else if (!strcmp(name, "--host")) {
            if (!*val)
                return usage_error("bad --host", val);
            o.host = val;
        } else if (!strcmp(name, "--port")) {
            if (parse_int(val, 0, 65535, &v))
                return usage_error("bad --port", val);
            o.port = (int)v;
        } else if (!strcmp(name, "--threads")) {
            if (parse_int(val, 1, 256, &v))
                return usage_error("bad --threads", val);
            o.threads = (int)v;
        } else if (!strcmp(name, "--idle-timeout")) {
            if (parse_int(val, 1, 86400000, &v))
                return usage_error("bad --idle-timeout", val);
            o.idle_timeout_ms = (int)v;
        } else if (!strcmp(name, "--max-connections")) {
            if (parse_int(val, 4, 1000000, &v))
                return usage_error("bad --max-connections", val);
            o.max_connections = (int)v;
        } else if (!strcmp(name, "--port-file")) {
            if (!*val)
                return usage_error("bad --port-file", val);
            port_file = val;
        } else if (!strcmp(name, "--db")) {
            if (!*val)
                return usage_error("bad --db", val);
            o.db_path = val;
        } else if (!strcmp(name, "--credentials")) {
            if (!strchr(val, ':') || val[0] == ':')
                return usage_error("bad --credentials (want KEY:SECRET)", val);
            o.credentials = val;
        } else if (!strcmp(name, "--cors")) {
            if (!*val)
                return usage_error("bad --cors (want ORIGINS, * or none)", val);
            o.cors = strcmp(val, "none") ? val : "";
        } else if (!strcmp(name, "--account-id")) {
            if (strlen(val) != 12 || strspn(val, "0123456789") != 12)
                return usage_error("bad --account-id (want 12 digits)", val);
            account_id = val;
        } else if (!strcmp(name, "--delay-transient-statuses")) {
            transient_ms = 5000;
            if (val && parse_int(val, 1, 86400000, &transient_ms))
                return usage_error("bad --delay-transient-statuses", val);
        } else if (!strcmp(name, "--clock")) {
            if (!strcmp(val, "system")) {
                o.fake_clock = false;
            } else if (!strcmp(val, "fake")) {
                o.fake_clock = true;
            } else if (!strncmp(val, "fake:", 5)) {
                char *end = NULL;
                errno = 0;
                long long ms = strtoll(val + 5, &end, 10);
                if (errno || !val[5] || *end || ms <= 0)
                    return usage_error("bad --clock", val);
                o.fake_clock = true;
                o.fake_clock_start_ms = ms;
            } else {
                return usage_error("bad --clock", val);
            }
        } else {
            return usage_error("unknown option", arg);
        }
    }

    /* Signals are taken synchronously by this thread; the server's threads inherit the
     * blocked mask and never see them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Every connection is a descriptor: take all the process may have (the library sizes
     * its connection limit from it). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    fakedb_error err;
    fakedb *db = fakedb_start(&o, &err);
    if (!db) {
        fprintf(stderr, "fakedb: %s\n", err.message);
        return 1;
    }
    if (account_id)
        fakedb_account_id_set(db, account_id);
    if (transient_ms)
        fakedb_transient_statuses_set(db, transient_ms);
    if (port_file && write_port_file(port_file, fakedb_port(db)) != 0) {
        fprintf(stderr, "fakedb: cannot write %s: %s\n", port_file, strerror(errno));
        fakedb_stop(db);
        return 1;
    }
    printf("fakedb listening on %s\n", fakedb_endpoint(db));
    fflush(stdout);
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    if (o.log_requests)
        fprintf(stderr, "fakedb: signal %d, stopping\n", sig);
    fakedb_stop(db);
    return 0;
}
