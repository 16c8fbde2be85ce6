// _GNU_SOURCE lives here, not in the header: in a header it changes glibc's struct
// definitions for every Swift module that imports it (see PLATFORM.md).
#define _GNU_SOURCE
#include "CSystem.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <malloc.h>
#include <sys/time.h>
#include <time.h>

int appd_peer_credentials(int fd, uint32_t *uid, uint32_t *gid, int32_t *pid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *uid = cred.uid;
    *gid = cred.gid;
    *pid = cred.pid;
    return 0;
}

static int fill_address(struct sockaddr_un *addr, const char *path) {
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(addr->sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(addr->sun_path, path);
    return 0;
}

int appd_unix_listen(const char *path, int backlog) {
    struct sockaddr_un addr;
    if (fill_address(&addr, path) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    /* Linux creates the socket file with the unbound socket's mode (less the umask): owner
       only from the first instant, without touching the process-wide umask (which would race
       with every other thread creating a file). Callers widen it with chmod. */
    if (fchmod(fd, 0600) != 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int appd_unix_connect(const char *path) {
    struct sockaddr_un addr;
    if (fill_address(&addr, path) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int appd_accept(int listen_fd) {
    return accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int appd_pid_in_group(int32_t pid, uint32_t gid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *file = fopen(path, "re");
    if (!file) return 0;
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof(line), file)) {
        if (strncmp(line, "Groups:", 7) != 0) continue;
        char *cursor = line + 7;
        while (*cursor) {
            char *end;
            unsigned long value = strtoul(cursor, &end, 10);
            if (end == cursor) break;
            if (value == gid) { found = 1; break; }
            cursor = end;
        }
        break;
    }
    fclose(file);
    return found;
}

int appd_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int appd_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &event);
}

int appd_epoll_wait(int epfd, int *fds, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event list[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, list, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        fds[i] = list[i].data.fd;
        events[i] = list[i].events;
    }
    return n;
}

int appd_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void appd_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t ignored = write(fd, &one, sizeof(one));
    (void)ignored;
}

void appd_eventfd_drain(int fd) {
    uint64_t value;
    while (read(fd, &value, sizeof(value)) > 0) {}
}

int appd_notify(const char *path, const char *message) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    size_t length = strlen(path);
    if (length == 0 || length >= sizeof(addr.sun_path)) {
        errno = EINVAL;
        return -1;
    }
    memcpy(addr.sun_path, path, length);
    if (path[0] == '@') addr.sun_path[0] = 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
    ssize_t sent = sendto(fd, message, strlen(message), MSG_NOSIGNAL, (struct sockaddr *)&addr, size);
    int saved = errno;
    close(fd);
    errno = saved;
    return sent < 0 ? -1 : 0;
}

int appd_tcp_listen(const char *host, uint16_t port, int backlog, int loopback_only) {
    struct sockaddr_storage storage;
    memset(&storage, 0, sizeof(storage));
    socklen_t length;
    int family;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        family = AF_INET;
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof(*v4);
        if (loopback_only && (ntohl(v4->sin_addr.s_addr) >> 24) != 127) { errno = EADDRNOTAVAIL; return -2; }
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        family = AF_INET6;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof(*v6);
        if (loopback_only && !IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) { errno = EADDRNOTAVAIL; return -2; }
    } else {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&storage, length) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int appd_tcp_peer(int fd, char *buffer, int size) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof(storage);
    if (getpeername(fd, (struct sockaddr *)&storage, &length) != 0) return -1;
    if (storage.ss_family == AF_INET) {
        return inet_ntop(AF_INET, &((struct sockaddr_in *)&storage)->sin_addr, buffer, size) ? 0 : -1;
    }
    if (storage.ss_family == AF_INET6) {
        struct in6_addr *address = &((struct sockaddr_in6 *)&storage)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(address)) return inet_ntop(AF_INET, &address->s6_addr[12], buffer, size) ? 0 : -1;
        return inet_ntop(AF_INET6, address, buffer, size) ? 0 : -1;
    }
    return -1;
}

void appd_http_date(char *buffer, int size) {
    time_t now = time(NULL);
    struct tm parts;
    gmtime_r(&now, &parts);
    strftime(buffer, size, "%a, %d %b %Y %H:%M:%S GMT", &parts);
}

int appd_tcp_port(int fd) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof(storage);
    if (getsockname(fd, (struct sockaddr *)&storage, &length) != 0) return -1;
    if (storage.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&storage)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&storage)->sin6_port);
}

int appd_wait_readable(int fd, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, timeout_ms);
}

int appd_accept_blocking(int listen_fd) {
    return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Formats "LISTEN_PID=<pid>" into buf without malloc or stdio (async-signal-safe). */
static void format_listen_pid(char *buf, size_t len, pid_t pid) {
    const char *prefix = "LISTEN_PID=";
    size_t i = 0;
    while (prefix[i] && i < len - 1) { buf[i] = prefix[i]; i++; }
    char digits[16];
    int n = 0;
    unsigned long v = (unsigned long)pid;
    do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v && n < 15);
    while (n > 0 && i < len - 1) buf[i++] = digits[--n];
    buf[i] = 0;
}

pid_t appd_spawn_plugin(const char *path, char *const argv[], char *const envp[], int listen_pid_slot, int listen_fd, int out_fd, int err_fd, const char *directory,
                        const int *keep_fds, int keep_count, const int *limit_kinds, const unsigned long long *limit_values, int limit_count, long uid, long gid) {
    /* Prepared before fork: the child only formats digits into it. */
    static __thread char pid_entry[32];
    char **env = (char **)envp;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid; /* parent (or -1) */

    /* Child: signals back to defaults and unblocked, fds in place, then exec. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    setsid();
    /* The descriptors to keep are moved out of the way first (F_DUPFD never replaces one). */
    int moved[32];
    if (keep_count > 32) _exit(124);
    for (int i = 0; i < keep_count; i++) {
        moved[i] = fcntl(keep_fds[i], F_DUPFD, 64);
        if (moved[i] < 0) _exit(124);
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 0);
    if (out_fd >= 0) dup2(out_fd, 1);
    if (err_fd >= 0) dup2(err_fd, 2);
    if (listen_fd >= 0) {
        if (listen_fd == 3) {
            fcntl(3, F_SETFD, 0);
        } else {
            dup2(listen_fd, 3);
        }
        int flags = fcntl(3, F_GETFL);
        if (flags >= 0) fcntl(3, F_SETFL, flags & ~O_NONBLOCK);
    }
    int first = listen_fd >= 0 ? 4 : 3;
    for (int i = 0; i < keep_count; i++) {
        if (dup2(moved[i], first + i) < 0) _exit(124);
    }
    first += keep_count;
    /* Nothing else crosses into the plugin: not appd's own descriptors, nor any that appd
       inherited without close-on-exec (a supervisor's, say). */
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) != 0) {
        for (int fd = first; fd < 65536; fd++) close(fd);
    }
    for (int i = 0; i < limit_count; i++) {
        struct rlimit limit = { .rlim_cur = (rlim_t)limit_values[i], .rlim_max = (rlim_t)limit_values[i] };
        if (setrlimit(limit_kinds[i], &limit) != 0) _exit(123);
    }
    /* Its own unprivileged identity (appd running as root): no supplementary groups, then
       the group, then the user, which cannot be undone. */
    if (gid >= 0 || uid >= 0) {
        if (setgroups(0, NULL) != 0) _exit(122);
        if (gid >= 0 && setgid((gid_t)gid) != 0) _exit(122);
        if (uid >= 0 && setuid((uid_t)uid) != 0) _exit(122);
    }
    /* Dies with appd (an orphaned plugin would keep running beside the next appd's), and
       cannot gain privileges through setuid binaries. Set after the identity change, which
       clears the parent-death signal. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(125); /* appd died before the line above */
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (listen_pid_slot >= 0) {
        format_listen_pid(pid_entry, sizeof(pid_entry), getpid());
        env[listen_pid_slot] = pid_entry;
    }
    if (directory && chdir(directory) != 0) _exit(126);
    execve(path, argv, env);
    _exit(127);
}

int appd_open_path(const char *path) {
    return open(path, O_PATH | O_CLOEXEC);
}

int appd_rlimit_nproc(void) { return RLIMIT_NPROC; }

int appd_wait_exit(pid_t pid, int *status) {
    for (;;) {
        pid_t r = waitpid(pid, status, 0);
        if (r >= 0) return 0;
        if (errno != EINTR) return -1;
    }
}

int appd_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int appd_try_wait(pid_t pid, int *status) {
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return 1;
        if (r == 0) return 0;
        if (errno != EINTR) return -1;
    }
}

int appd_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int appd_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}


void appd_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

static int appd_signal_fds[65] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

static void appd_signal_handler(int number) {
    int saved = errno;
    int fd = (number > 0 && number <= 64) ? __atomic_load_n(&appd_signal_fds[number], __ATOMIC_SEQ_CST) : -1;
    if (fd >= 0) {
        uint64_t one = 1;
        ssize_t written = write(fd, &one, sizeof one);
        (void)written;
    }
    errno = saved;
}

int appd_signal_catch(int number) {
    if (number <= 0 || number > 64) { errno = EINVAL; return -1; }
    int fd = __atomic_load_n(&appd_signal_fds[number], __ATOMIC_SEQ_CST);
    if (fd < 0) {
        int created = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (created < 0) return -1;
        int expected = -1;
        if (__atomic_compare_exchange_n(&appd_signal_fds[number], &expected, created, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            fd = created;
        } else {
            close(created);
            fd = expected;
        }
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = appd_signal_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(number, &action, NULL) != 0) return -1;
    return fd;
}

unsigned long appd_signal_drain(int fd) {
    uint64_t value = 0;
    unsigned long total = 0;
    while (read(fd, &value, sizeof value) > 0) total += (unsigned long)value;
    return total;
}

int appd_malloc_keep(size_t mmap_threshold, size_t trim_threshold) {
    int ok = mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
    ok &= mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
    return ok ? 0 : -1;
}

size_t appd_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
