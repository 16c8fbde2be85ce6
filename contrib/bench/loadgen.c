/* One load generator for appd and Redis, so that every row of contrib/bench/report measures
   both servers with the same client in the same run.

   Protocols: varlink (JSON frames ending in NUL) and redis (inline commands; a reply ends
   with "\n"). Modes:
     threads  one OS thread per connection, each sending a call and blocking on its reply
              (how scripts, workers and plugins use a daemon);
     loop     one thread, epoll, every connection with one call in flight (how appctl bench
              and redis-benchmark drive a server).
   Workloads:
     call     REQUEST again and again (after SETUP, once per connection, e.g. Authenticate);
     fanout   SUBSCRIBE on every connection, then one more connection sends PUBLISH (waiting for
              each reply) and the subscribers count what they receive (threads: a reading
              thread per subscriber; loop: one epoll thread reads them all).

   Prints one JSON line: {"calls": N, "seconds": S, "perSecond": R, "p50us": …, "p99us": …}
   (fanout: "deliveries" and "perSecond" in deliveries per second).

   Usage: loadgen --proto varlink|redis --socket PATH --mode threads|loop --connections N
                  --requests N --request TEXT [--setup TEXT]
          loadgen --proto … --socket PATH --fanout --mode threads|loop --connections N --requests N
                  --subscribe TEXT --publish TEXT
   TEXT is sent as is; for varlink a NUL is appended, for redis "\r\n". A "%N" in the
   request is replaced by the call's number (0, 1, …), unique in the run: an idempotency key
   per call, say. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *proto = "varlink", *path, *mode = "threads", *request, *setup, *subscribe_text, *publish_text;
static int connections = 1, fanout;
static long requests = 1000;
static atomic_long issued, done, delivered;
static long *latencies; /* microseconds, one per call */
static atomic_long latency_slot;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static int dial(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
    return fd;
}

static char terminator(void) { return strcmp(proto, "redis") == 0 ? '\n' : '\0'; }

/* The frame for TEXT: a NUL after varlink JSON, CRLF after a Redis inline command. */
static size_t frame(const char *text, char *out, size_t cap) {
    size_t n = strlen(text);
    if (n + 3 > cap) { fprintf(stderr, "request too long\n"); exit(2); }
    memcpy(out, text, n);
    if (terminator() == '\n') { out[n++] = '\r'; out[n++] = '\n'; }
    else out[n++] = 0;
    return n;
}

/* The request frame of call number K ("%N" in the request replaced by K), or the fixed frame. */
static size_t request_frame(long k, const char *fixed, size_t fixed_n, char *out, size_t cap) {
    const char *mark = strstr(request, "%N");
    if (!mark) {
        memcpy(out, fixed, fixed_n);
        return fixed_n;
    }
    char text[4096];
    int n = snprintf(text, sizeof text, "%.*s%ld%s", (int)(mark - request), request, k, mark + 2);
    if (n < 0 || (size_t)n >= sizeof text) { fprintf(stderr, "request too long\n"); exit(2); }
    return frame(text, out, cap);
}

static void send_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write");
        buf += w;
        n -= (size_t)w;
    }
}

/* Reads until one reply has ended; a varlink error reply or Redis "-ERR" stops the run. */
static void read_reply(int fd, char *buf, size_t cap) {
    char end = terminator();
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, cap - have - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("read");
        have += (size_t)r;
        if (buf[have - 1] == end) break;
        if (have >= cap - 1) { fprintf(stderr, "reply too long\n"); exit(2); }
    }
    buf[have] = 0;
    if ((end == 0 && strstr(buf, "\"error\"")) || (end == '\n' && buf[0] == '-')) {
        fprintf(stderr, "error reply: %.300s\n", buf);
        exit(3);
    }
}

static void record(double started) {
    long slot = atomic_fetch_add(&latency_slot, 1);
    if (slot < requests) latencies[slot] = (long)((now() - started) * 1e6);
}

static void *caller(void *unused) {
    (void)unused;
    char out[4096], in[65536];
    int fd = dial();
    if (setup) {
        size_t n = frame(setup, out, sizeof out);
        send_all(fd, out, n);
        read_reply(fd, in, sizeof in);
    }
    char fixed[4096];
    size_t fixed_n = frame(request, fixed, sizeof fixed);
    long k;
    while ((k = atomic_fetch_add(&issued, 1)) < requests) {
        size_t n = request_frame(k, fixed, fixed_n, out, sizeof out);
        double started = now();
        send_all(fd, out, n);
        read_reply(fd, in, sizeof in);
        record(started);
        atomic_fetch_add(&done, 1);
    }
    close(fd);
    return NULL;
}

/* The event-loop client: every connection has one call in flight. */
static void run_loop(void) {
    char out[4096], in[65536];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int *fds = calloc((size_t)connections, sizeof(int));
    double *sent = calloc((size_t)connections, sizeof(double));
    char end = terminator();
    for (int i = 0; i < connections; i++) {
        fds[i] = dial();
        if (setup) {
            size_t n = frame(setup, out, sizeof out);
            send_all(fds[i], out, n);
            read_reply(fds[i], in, sizeof in);
        }
    }
    char fixed[4096];
    size_t fixed_n = frame(request, fixed, sizeof fixed);
    long call;
    for (int i = 0; i < connections; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e);
        if ((call = atomic_fetch_add(&issued, 1)) < requests) {
            sent[i] = now();
            send_all(fds[i], out, request_frame(call, fixed, fixed_n, out, sizeof out));
        }
    }
    struct epoll_event events[256];
    while (atomic_load(&done) < requests) {
        int k = epoll_wait(ep, events, 256, 10000);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) die("epoll_wait");
        for (int j = 0; j < k; j++) {
            int i = (int)events[j].data.u32;
            ssize_t r = read(fds[i], in, sizeof in);
            if (r <= 0) die("read");
            /* One call in flight: the reply is complete when the buffer ends with the terminator
               (replies are small; a partial one is completed by the next read). */
            if (in[r - 1] != end) {
                read_reply(fds[i], in, sizeof in);
            }
            record(sent[i]);
            atomic_fetch_add(&done, 1);
            if ((call = atomic_fetch_add(&issued, 1)) < requests) {
                sent[i] = now();
                send_all(fds[i], out, request_frame(call, fixed, fixed_n, out, sizeof out));
            }
        }
    }
    for (int i = 0; i < connections; i++) close(fds[i]);
}

/* What one subscriber connection has received so far. */
struct feed {
    int fd;
    /* The last bytes of the previous read, so a marker split across reads is still found. */
    char carry[16];
};

/* Counts the deliveries in one read: varlink frames (NULs), or Redis "message" pushes.
   Returns -1 at the end of the stream. */
static long count_read(struct feed *f) {
    char in[65536];
    long seen = 0;
    ssize_t r = read(f->fd, in + 15, sizeof in - 16);
    if (r <= 0) return -1;
    memcpy(in, f->carry, 15);
    if (terminator() == 0) {
        for (ssize_t i = 15; i < r + 15; i++) seen += in[i] == 0;
    } else {
        const char *marker = "\r\nmessage\r\n";
        size_t m = strlen(marker);
        for (ssize_t i = 15 - (ssize_t)m + 1; i + (ssize_t)m <= r + 15; i++)
            if (i >= 0 && memcmp(in + i, marker, m) == 0) seen++;
    }
    memcpy(f->carry, in + r, 15);
    return seen;
}

/* threads mode: one thread per subscriber, blocking in read. */
static void *subscriber(void *arg) {
    struct feed *f = arg;
    long seen;
    while ((seen = count_read(f)) >= 0) atomic_fetch_add(&delivered, seen);
    return NULL;
}

/* loop mode: one thread reads every subscriber through epoll. */
static void *subscribers_loop(void *arg) {
    struct feed *feeds = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < connections; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, feeds[i].fd, &e);
    }
    int open_feeds = connections;
    struct epoll_event events[256];
    while (open_feeds > 0) {
        int k = epoll_wait(ep, events, 256, 1000);
        if (k < 0 && errno == EINTR) continue;
        for (int j = 0; j < k; j++) {
            struct feed *f = &feeds[events[j].data.u32];
            long seen = count_read(f);
            if (seen < 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, f->fd, NULL);
                open_feeds--;
                continue;
            }
            atomic_fetch_add(&delivered, seen);
        }
    }
    close(ep);
    return NULL;
}

static void run_fanout(void) {
    char out[4096], in[65536];
    int loop = strcmp(mode, "loop") == 0;
    pthread_t *threads = calloc((size_t)connections, sizeof(pthread_t));
    struct feed *feeds = calloc((size_t)connections, sizeof(struct feed));
    for (int i = 0; i < connections; i++) {
        feeds[i].fd = dial();
        size_t n = frame(subscribe_text, out, sizeof out);
        send_all(feeds[i].fd, out, n);
    }
    /* Every subscription is in place before the first publish (Redis confirms each one;
       appd's live subscriptions start when the call is read, so give it a moment). */
    usleep(300 * 1000);
    if (loop) pthread_create(&threads[0], NULL, subscribers_loop, feeds);
    else
        for (int i = 0; i < connections; i++) pthread_create(&threads[i], NULL, subscriber, &feeds[i]);
    usleep(100 * 1000);
    long before = atomic_load(&delivered);
    int pub = dial();
    size_t n = frame(publish_text, out, sizeof out);
    double started = now();
    for (long i = 0; i < requests; i++) {
        send_all(pub, out, n);
        read_reply(pub, in, sizeof in);
    }
    long expected = before + requests * connections;
    /* Until every delivery arrived, or a second without progress. */
    long last = -1;
    double quiet = now();
    while (atomic_load(&delivered) < expected) {
        long d = atomic_load(&delivered);
        if (d != last) { last = d; quiet = now(); }
        if (now() - quiet > 1.0) break;
        usleep(1000);
    }
    double seconds = now() - started;
    long got = atomic_load(&delivered) - before;
    printf("{\"publishes\": %ld, \"subscribers\": %d, \"mode\": \"%s\", \"deliveries\": %ld, \"expected\": %ld, \"seconds\": %.3f, \"perSecond\": %.0f}\n",
           requests, connections, mode, got, requests * connections, seconds, got / seconds);
    for (int i = 0; i < connections; i++) shutdown(feeds[i].fd, SHUT_RDWR);
    for (int i = 0; i < (loop ? 1 : connections); i++) pthread_join(threads[i], NULL);
}

static int compare(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--fanout") == 0) { fanout = 1; continue; }
        if (!v) { fprintf(stderr, "%s needs a value\n", a); return 2; }
        if (strcmp(a, "--proto") == 0) proto = v;
        else if (strcmp(a, "--socket") == 0) path = v;
        else if (strcmp(a, "--mode") == 0) mode = v;
        else if (strcmp(a, "--connections") == 0) connections = atoi(v);
        else if (strcmp(a, "--requests") == 0) requests = atol(v);
        else if (strcmp(a, "--request") == 0) request = v;
        else if (strcmp(a, "--setup") == 0) setup = v;
        else if (strcmp(a, "--subscribe") == 0) subscribe_text = v;
        else if (strcmp(a, "--publish") == 0) publish_text = v;
        else { fprintf(stderr, "unknown option %s\n", a); return 2; }
        i++;
    }
    if (!path || connections < 1 || requests < 1 || (fanout ? !subscribe_text || !publish_text : !request)) {
        fprintf(stderr, "usage: see the top of loadgen.c\n");
        return 2;
    }
    if (fanout) {
        run_fanout();
        return 0;
    }
    latencies = calloc((size_t)requests, sizeof(long));
    double started = now();
    if (strcmp(mode, "loop") == 0) {
        run_loop();
    } else {
        pthread_t *threads = calloc((size_t)connections, sizeof(pthread_t));
        for (int i = 0; i < connections; i++) pthread_create(&threads[i], NULL, caller, NULL);
        for (int i = 0; i < connections; i++) pthread_join(threads[i], NULL);
    }
    double seconds = now() - started;
    long calls = atomic_load(&done);
    qsort(latencies, (size_t)calls, sizeof(long), compare);
    printf("{\"calls\": %ld, \"connections\": %d, \"mode\": \"%s\", \"seconds\": %.3f, \"perSecond\": %.0f, \"p50us\": %ld, \"p99us\": %ld}\n",
           calls, connections, mode, seconds, calls / seconds, latencies[calls / 2], latencies[calls * 99 / 100]);
    return 0;
}
