#define _GNU_SOURCE
#include "CNet.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct appd_conn {
    int fd;
    int connected;     /* non-blocking connect finished */
    SSL_CTX *ctx;
    SSL *ssl;
};

static void set_error(char *error, size_t len, const char *what, const char *detail) {
    if (error && len) snprintf(error, len, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

static appd_conn *fail(appd_conn *c, char *error, size_t error_len, const char *what, const char *detail) {
    set_error(error, error_len, what, detail);
    appd_net_close(c);
    return NULL;
}

void appd_net_close(appd_conn *c) {
    if (!c) return;
    if (c->ssl) SSL_free(c->ssl);
    if (c->ctx) SSL_CTX_free(c->ctx);
    if (c->fd >= 0) close(c->fd);
    free(c);
}

/* ---- Non-blocking steps ---- */

int appd_net_resolve(const char *host, uint16_t port, appd_net_address *out, int max, char *error, size_t error_len) {
    char service[8];
    snprintf(service, sizeof(service), "%u", port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *list = NULL;
    int rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0) { set_error(error, error_len, "cannot resolve host", gai_strerror(rc)); return -1; }
    int n = 0;
    for (struct addrinfo *a = list; a && n < max; a = a->ai_next) {
        if (a->ai_addrlen > sizeof(out[n].bytes)) continue;
        memcpy(out[n].bytes, a->ai_addr, a->ai_addrlen);
        out[n].length = (uint32_t)a->ai_addrlen;
        out[n].family = a->ai_family;
        n++;
    }
    freeaddrinfo(list);
    if (n == 0) { set_error(error, error_len, "cannot resolve host", "no address"); return -1; }
    return n;
}

appd_conn *appd_net_start(const appd_net_address *address, int tls, const char *host, const char *ca_file, char *error, size_t error_len) {
    appd_conn *c = calloc(1, sizeof(*c));
    c->fd = -1;
    int fd = socket(address->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail(c, error, error_len, "cannot connect", strerror(errno));
    c->fd = fd;
    if (connect(fd, (const struct sockaddr *)address->bytes, address->length) != 0 && errno != EINPROGRESS)
        return fail(c, error, error_len, "cannot connect", strerror(errno));
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
    return c;
}

int appd_net_fd(appd_conn *c) { return c->fd; }

int appd_net_connect_step(appd_conn *c, char *error, size_t error_len) {
    if (!c->connected) {
        struct pollfd p = { .fd = c->fd, .events = POLLOUT };
        if (poll(&p, 1, 0) == 0) return APPD_NET_WANT_WRITE;
        int so = 0; socklen_t sl = sizeof(so);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so, &sl);
        if (so == EINPROGRESS) return APPD_NET_WANT_WRITE;
        if (so != 0) { set_error(error, error_len, "cannot connect", strerror(so)); return -1; }
        c->connected = 1;
    }
    if (!c->ssl) return 1;
    int r = SSL_connect(c->ssl);
    if (r == 1) return 1;
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) return APPD_NET_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE) return APPD_NET_WANT_WRITE;
    long verify = SSL_get_verify_result(c->ssl);
    char reason[200];
    if (verify != X509_V_OK) snprintf(reason, sizeof(reason), "certificate: %s", X509_verify_cert_error_string(verify));
    else {
        const char *why = ERR_reason_error_string(ERR_get_error());
        snprintf(reason, sizeof(reason), "%s", why ? why : "failed");
    }
    ERR_clear_error();
    set_error(error, error_len, "TLS handshake failed", reason);
    return -1;
}

ssize_t appd_net_write_step(appd_conn *c, const uint8_t *data, size_t len, char *error, size_t error_len) {
    for (;;) {
        if (c->ssl) {
            int r = SSL_write(c->ssl, data, (int)len);
            if (r > 0) return r;
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ) return APPD_NET_WANT_READ;
            if (e == SSL_ERROR_WANT_WRITE) return APPD_NET_WANT_WRITE;
            ERR_clear_error();
            set_error(error, error_len, "TLS write failed", NULL);
            return -1;
        }
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
        if (n > 0) return n;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return APPD_NET_WANT_WRITE;
        set_error(error, error_len, "write failed", n < 0 ? strerror(errno) : "closed");
        return -1;
    }
}

ssize_t appd_net_read_step(appd_conn *c, uint8_t *buffer, size_t len, char *error, size_t error_len) {
    for (;;) {
        if (c->ssl) {
            int r = SSL_read(c->ssl, buffer, (int)len);
            if (r > 0) return r;
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_ZERO_RETURN) return 0;
            if (e == SSL_ERROR_WANT_READ) return APPD_NET_WANT_READ;
            if (e == SSL_ERROR_WANT_WRITE) return APPD_NET_WANT_WRITE;
            int truncated = e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0;
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
            truncated = truncated || (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
#endif
            ERR_clear_error();
            set_error(error, error_len, truncated ? "the TLS stream ended without close_notify (truncated)" : "TLS read failed", NULL);
            return -1;
        }
        ssize_t n = recv(c->fd, buffer, len, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return APPD_NET_WANT_READ;
        set_error(error, error_len, "read failed", strerror(errno));
        return -1;
    }
}
