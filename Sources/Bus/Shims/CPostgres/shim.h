#include <libpq-fe.h>
#include <poll.h>

/// SQLSTATE and the primary message of a failed result (PG_DIAG_* are macros over chars).
static inline const char *appd_pq_sqlstate(const PGresult *result) { return PQresultErrorField(result, PG_DIAG_SQLSTATE); }
static inline const char *appd_pq_message(const PGresult *result) { return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY); }

/// Waits until the connection's socket is readable or `timeout_ms` passes: 1 readable, 0 timed
/// out, -1 error.
static inline int appd_pq_wait_readable(PGconn *conn, int timeout_ms) {
    struct pollfd p = { .fd = PQsocket(conn), .events = POLLIN, .revents = 0 };
    if (p.fd < 0) return -1;
    int rc = poll(&p, 1, timeout_ms);
    if (rc < 0) return -1;
    return rc > 0 ? 1 : 0;
}

static inline void appd_pq_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }

/// libpq prints server notices (and a connection's asynchronous FATAL) to stderr by default;
/// appd reports what matters through its own errors and log instead.
static inline void appd_pq_quiet(PGconn *conn) { PQsetNoticeProcessor(conn, appd_pq_ignore_notice, NULL); }
