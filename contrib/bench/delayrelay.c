// SPDX-License-Identifier: Apache-2.0
// A TCP relay that holds every chunk it forwards for a fixed delay, each way: network latency
// for a benchmark on a kernel without netem (see contrib/bench/pg-scale).
//
//   delayrelay LISTEN_ADDR LISTEN_PORT UPSTREAM_UNIX_SOCKET DELAY_US
//
// One thread, epoll; a chunk read at t is written at t + DELAY_US (a timerfd with nanosecond
// resolution wakes the loop at the earliest due chunk). Order is kept per direction.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct Chunk { struct Chunk *next; uint64_t due; size_t len; char data[]; } Chunk;
typedef struct Pipe { int from, to; Chunk *head, *tail; struct Pipe *peer; int closed; } Pipe;

static uint64_t delay_ns;
static int ep, timer;
static Pipe **pipes; static size_t npipes, cap;

static uint64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec; }

static void arm(void) {
    uint64_t earliest = 0;
    for (size_t i = 0; i < npipes; i++) if (pipes[i] && pipes[i]->head && (!earliest || pipes[i]->head->due < earliest)) earliest = pipes[i]->head->due;
    struct itimerspec its = {0};
    if (earliest) { its.it_value.tv_sec = earliest / 1000000000ull; its.it_value.tv_nsec = earliest % 1000000000ull; }
    timerfd_settime(timer, TFD_TIMER_ABSTIME, &its, NULL);
}

static void drop(Pipe *p) {
    // Both directions of the connection go together.
    Pipe *q = p->peer;
    for (size_t i = 0; i < npipes; i++) if (pipes[i] == p || pipes[i] == q) pipes[i] = NULL;
    close(p->from); close(q->from);
    for (Chunk *c = p->head, *n; c; c = n) { n = c->next; free(c); }
    for (Chunk *c = q->head, *n; c; c = n) { n = c->next; free(c); }
    free(p); free(q);
}

static int write_all(int fd, const char *b, size_t n) {
    while (n) { ssize_t w = write(fd, b, n); if (w < 0) { if (errno == EINTR) continue; return -1; } b += w; n -= (size_t)w; }
    return 0;
}

static void flush_due(void) {
    uint64_t t = now_ns();
    for (size_t i = 0; i < npipes; i++) {
        Pipe *p = pipes[i];
        while (p && p->head && p->head->due <= t) {
            Chunk *c = p->head;
            if (write_all(p->to, c->data, c->len) < 0) { drop(p); p = NULL; break; }
            p->head = c->next; if (!p->head) p->tail = NULL;
            free(c);
        }
        if (p && !p->head && p->closed) { shutdown(p->to, SHUT_WR); }
    }
}

static void add_pipe(Pipe *p) {
    if (npipes == cap) { cap = cap ? cap * 2 : 64; pipes = realloc(pipes, cap * sizeof *pipes); }
    pipes[npipes++] = p;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };
    epoll_ctl(ep, EPOLL_CTL_ADD, p->from, &ev);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: delayrelay LISTEN_ADDR LISTEN_PORT UPSTREAM_UNIX_SOCKET DELAY_US\n"); return 64; }
    signal(SIGPIPE, SIG_IGN);
    delay_ns = (uint64_t)atoll(argv[4]) * 1000ull;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 512) < 0) { perror("listen"); return 1; }
    ep = epoll_create1(0);
    timer = timerfd_create(CLOCK_MONOTONIC, 0);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &ls };
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    ev.data.ptr = &timer;
    epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev);
    printf("ready\n"); fflush(stdout);
    static char buf[65536];
    for (;;) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &ls) {
                int c = accept(ls, NULL, NULL);
                if (c < 0) continue;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                int u = socket(AF_UNIX, SOCK_STREAM, 0);
                struct sockaddr_un ua = { .sun_family = AF_UNIX };
                strncpy(ua.sun_path, argv[3], sizeof ua.sun_path - 1);
                if (connect(u, (struct sockaddr *)&ua, sizeof ua) < 0) { close(c); close(u); continue; }
                Pipe *down = calloc(1, sizeof *down), *up = calloc(1, sizeof *up);
                *down = (Pipe){ .from = c, .to = u, .peer = up };
                *up = (Pipe){ .from = u, .to = c, .peer = down };
                add_pipe(down); add_pipe(up);
            } else if (tag == &timer) {
                uint64_t x; (void)!read(timer, &x, sizeof x);
            } else {
                Pipe *p = tag;
                ssize_t r = read(p->from, buf, sizeof buf);
                if (r <= 0) { epoll_ctl(ep, EPOLL_CTL_DEL, p->from, NULL); p->closed = 1; if (!p->head) { Pipe *q = p->peer; if (q->closed) drop(p); else shutdown(p->to, SHUT_WR); } continue; }
                Chunk *c = malloc(sizeof *c + (size_t)r);
                c->next = NULL; c->due = now_ns() + delay_ns; c->len = (size_t)r; memcpy(c->data, buf, (size_t)r);
                if (p->tail) p->tail->next = c; else p->head = c;
                p->tail = c;
            }
        }
        flush_due();
        arm();
    }
}
