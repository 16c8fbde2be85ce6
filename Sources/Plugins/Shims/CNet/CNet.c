#define _GNU_SOURCE
#include "CNet.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct appd_conn {
    int fd;
    int wake;          /* eventfd: signalled by appd_net_abort */
    atomic_int aborted;
    SSL_CTX *ctx;
    SSL *ssl;
};

static void set_error(char *error, size_t len, const char *what, const char *detail) {
    if (error && len) snprintf(error, len, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on the socket or an abort. 1 ready, 0 timeout, -1 error, -3 aborted. */
static int wait_for(appd_conn *c, short events, int timeout_ms) {
    struct pollfd p[2] = { { .fd = c->fd, .events = events }, { .fd = c->wake, .events = POLLIN } };
    for (;;) {
        if (atomic_load(&c->aborted)) return -3;
        int n = poll(p, 2, timeout_ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (atomic_load(&c->aborted) || (p[1].revents & POLLIN)) return -3;
        if (n == 0) return 0;
        return 1;
    }
}

static appd_conn *fail(appd_conn *c, char *error, size_t error_len, const char *what, const char *detail) {
    set_error(error, error_len, what, detail);
    appd_net_close(c);
    return NULL;
}

appd_conn *appd_net_connect(const char *host, uint16_t port, int tls, const char *ca_file, int timeout_ms, char *error, size_t error_len) {
    long long deadline = now_ms() + timeout_ms;
    char service[8];
    snprintf(service, sizeof(service), "%u", port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *list = NULL;
    int rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0) { set_error(error, error_len, "cannot resolve host", gai_strerror(rc)); return NULL; }

    appd_conn *c = calloc(1, sizeof(*c));
    c->fd = -1;
    c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    char last[160] = "no address";
    for (struct addrinfo *a = list; a; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) continue;
        c->fd = fd;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        if (errno == EINPROGRESS) {
            int left = (int)(deadline - now_ms());
            int w = left > 0 ? wait_for(c, POLLOUT, left) : 0;
            if (w == 1) {
                int so = 0; socklen_t sl = sizeof(so);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
                if (so == 0) break;
                snprintf(last, sizeof(last), "%s", strerror(so));
            } else {
                snprintf(last, sizeof(last), "%s", w == 0 ? "connect timed out" : "aborted");
            }
        } else {
            snprintf(last, sizeof(last), "%s", strerror(errno));
        }
        close(fd);
        c->fd = -1;
        if (now_ms() >= deadline) break;
    }
    freeaddrinfo(list);
    if (c->fd < 0) return fail(c, error, error_len, "cannot connect", last);
    if (!tls) return c;

    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx) return fail(c, error, error_len, "TLS setup failed", NULL);
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (ca_file ? SSL_CTX_load_verify_locations(c->ctx, ca_file, NULL) != 1 : SSL_CTX_set_default_verify_paths(c->ctx) != 1)
        return fail(c, error, error_len, "cannot load trusted certificates", ca_file);
    c->ssl = SSL_new(c->ctx);
    SSL_set_fd(c->ssl, c->fd);
    SSL_set_tlsext_host_name(c->ssl, host);
    SSL_set1_host(c->ssl, host);
    for (;;) {
        int r = SSL_connect(c->ssl);
        if (r == 1) break;
        int e = SSL_get_error(c->ssl, r);
        int left = (int)(deadline - now_ms());
        if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && left > 0) {
            int w = wait_for(c, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, left);
            if (w == 1) continue;
            return fail(c, error, error_len, "TLS handshake", w == 0 ? "timed out" : "aborted");
        }
        long verify = SSL_get_verify_result(c->ssl);
        char reason[200];
        if (verify != X509_V_OK) snprintf(reason, sizeof(reason), "certificate: %s", X509_verify_cert_error_string(verify));
        else {
            const char *why = ERR_reason_error_string(ERR_get_error());
            snprintf(reason, sizeof(reason), "%s", left <= 0 ? "timed out" : why ? why : "failed");
        }
        return fail(c, error, error_len, "TLS handshake failed", reason);
    }
    return c;
}

int appd_net_write(appd_conn *c, const uint8_t *data, size_t len, int timeout_ms, char *error, size_t error_len) {
    long long deadline = now_ms() + timeout_ms;
    size_t done = 0;
    while (done < len) {
        ssize_t n;
        short want = POLLOUT;
        if (c->ssl) {
            int r = SSL_write(c->ssl, data + done, (int)(len - done));
            if (r > 0) { done += (size_t)r; continue; }
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ) want = POLLIN;
            else if (e != SSL_ERROR_WANT_WRITE) { set_error(error, error_len, "TLS write failed", NULL); return -1; }
        } else {
            n = send(c->fd, data + done, len - done, MSG_NOSIGNAL);
            if (n > 0) { done += (size_t)n; continue; }
            if (n < 0 && errno != EAGAIN && errno != EINTR) { set_error(error, error_len, "write failed", strerror(errno)); return -1; }
        }
        int left = (int)(deadline - now_ms());
        int w = left > 0 ? wait_for(c, want, left) : 0;
        if (w != 1) { set_error(error, error_len, "write", w == 0 ? "timed out" : w == -3 ? "aborted" : "failed"); return -1; }
    }
    return 0;
}

ssize_t appd_net_read(appd_conn *c, uint8_t *buffer, size_t len, int timeout_ms, char *error, size_t error_len) {
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        if (atomic_load(&c->aborted)) return -3;
        short want = POLLIN;
        if (c->ssl) {
            int r = SSL_read(c->ssl, buffer, (int)len);
            if (r > 0) return r;
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_ZERO_RETURN) return 0;
            if (e == SSL_ERROR_WANT_WRITE) want = POLLOUT;
            else if (e != SSL_ERROR_WANT_READ) {
                /* A peer (or anyone on the path) that closes the TCP connection without
                   close_notify may have cut the stream short: that is a failure, never a
                   normal end (a reply would be stored truncated as complete). */
                int truncated = e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0;
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
                /* OpenSSL 3 reports the same as an SSL error with this reason. */
                truncated = truncated || (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
#endif
                if (truncated) {
                    ERR_clear_error();
                    set_error(error, error_len, "the TLS stream ended without close_notify (truncated)", NULL);
                    return -1;
                }
                set_error(error, error_len, "TLS read failed", NULL);
                return -1;
            }
        } else {
            ssize_t n = recv(c->fd, buffer, len, 0);
            if (n >= 0) return n;
            if (errno != EAGAIN && errno != EINTR) { set_error(error, error_len, "read failed", strerror(errno)); return -1; }
        }
        int left = (int)(deadline - now_ms());
        int w = left > 0 ? wait_for(c, want, left) : 0;
        if (w == 0) return -2;
        if (w == -3) return -3;
        if (w < 0) { set_error(error, error_len, "read failed", strerror(errno)); return -1; }
    }
}

void appd_net_abort(appd_conn *c) {
    atomic_store(&c->aborted, 1);
    uint64_t one = 1;
    ssize_t ignored = write(c->wake, &one, sizeof(one));
    (void)ignored;
    shutdown(c->fd, SHUT_RDWR);
}

void appd_net_close(appd_conn *c) {
    if (!c) return;
    if (c->ssl) SSL_free(c->ssl);
    if (c->ctx) SSL_CTX_free(c->ctx);
    if (c->fd >= 0) close(c->fd);
    if (c->wake >= 0) close(c->wake);
    free(c);
}
