/* floor.c: the HTTP floor of this machine: a bare libmicrohttpd server, configured as
 * fakedb's is, that answers every request with a constant DynamoDB-shaped body. Whatever
 * fakedb achieves is measured against it. Usage: bench_floor PORT [poll [THREADS]]: with
 * `poll`, libmicrohttpd's poll(2) loop as fakedb uses it (for its EOF detection), else
 * epoll; THREADS event loops (default 4, the floor of the earlier rounds; fakedb's
 * default is 1). */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char BODY[] = "{\"Item\":{\"pk\":{\"S\":\"item-1\"},\"v\":{\"S\":\"value\"}}}";

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_len, void **state)
{
    (void)cls; (void)url; (void)method; (void)version; (void)data;
    if (*state == NULL) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*data_len > 0) {
        *data_len = 0; /* drain the request body */
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof BODY - 1, BODY, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/x-amz-json-1.0");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4 || (argc >= 3 && strcmp(argv[2], "poll") != 0) ||
        (argc == 4 && (atoi(argv[3]) < 1 || atoi(argv[3]) > 64))) {
        fprintf(stderr, "usage: bench_floor PORT [poll [THREADS]]\n");
        return 64;
    }
    unsigned port = (unsigned)atoi(argv[1]);
    unsigned threads = argc == 4 ? (unsigned)atoi(argv[3]) : 4U;
    unsigned loop = argc >= 3 ? MHD_USE_POLL_INTERNAL_THREAD : MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    struct MHD_Daemon *d = MHD_start_daemon(
        loop, (uint16_t)port, NULL, NULL, answer,
        NULL, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT, 30U, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_floor: cannot listen on %u\n", port);
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("floor listening on http://127.0.0.1:%u\n", port);
    fflush(stdout);
    while (!stop)
        pause();
    MHD_stop_daemon(d);
    return 0;
}
