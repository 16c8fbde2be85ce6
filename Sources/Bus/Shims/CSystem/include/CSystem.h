#ifndef APPD_CSYSTEM_H
#define APPD_CSYSTEM_H

#include <stdint.h>
#include <sys/types.h>

/// Reads SO_PEERCRED of a connected Unix socket. Returns 0, or -1 with errno set.
int appd_peer_credentials(int fd, uint32_t *uid, uint32_t *gid, int32_t *pid);

/// Creates a non-blocking, close-on-exec Unix stream socket bound to `path` and listening.
/// The socket file is created owner-only (0600, less the umask) without changing the umask;
/// returns the fd, or -1 with errno set. The caller handles stale sockets and widens the mode.
int appd_unix_listen(const char *path, int backlog);

/// Connects a blocking, close-on-exec Unix stream socket to `path`. Returns the fd or -1.
int appd_unix_connect(const char *path);

/// Accepts one connection as non-blocking and close-on-exec. Returns the fd or -1.
int appd_accept(int listen_fd);

/// Whether `pid` is in supplementary group `gid` (reads /proc/PID/status). 1 yes, 0 no.
int appd_pid_in_group(int32_t pid, uint32_t gid);

/// epoll without the packed `struct epoll_event` crossing into Swift.
enum {
    APPD_EPOLL_IN = 0x001,
    APPD_EPOLL_OUT = 0x004,
    APPD_EPOLL_ERR = 0x008,
    APPD_EPOLL_HUP = 0x010,
    APPD_EPOLL_RDHUP = 0x2000,
};
enum { APPD_EPOLL_ADD = 1, APPD_EPOLL_DEL = 2, APPD_EPOLL_MOD = 3 };

int appd_epoll_create(void);
int appd_epoll_ctl(int epfd, int op, int fd, uint32_t events);
/// Waits for events; fills fds[i] and events[i]; returns the count, 0 on timeout, -1 on error.
int appd_epoll_wait(int epfd, int *fds, uint32_t *events, int max, int timeout_ms);

/// An eventfd to wake the epoll loop from other threads.
int appd_eventfd(void);
void appd_eventfd_signal(int fd);
void appd_eventfd_drain(int fd);

/// Sends one datagram to a $NOTIFY_SOCKET-style `path` ('@' starts an abstract name).
/// Returns 0, or -1 with errno set.
int appd_notify(const char *path, const char *message);

/// Accepts one connection as blocking and close-on-exec. Returns the fd or -1.
int appd_accept_blocking(int listen_fd);

/// A blocking, close-on-exec TCP socket bound to `host` (an IPv4 or IPv6 literal) and `port`
/// (0 picks one), listening. Returns the fd; -1 with errno set; -2 when `loopback_only` and
/// the address is not a loopback address.
int appd_tcp_listen(const char *host, uint16_t port, int backlog, int loopback_only);

/// The local port a TCP socket is bound to, or -1.
int appd_tcp_port(int fd);

/// The peer's address of a TCP socket as text (`127.0.0.1`, `::1`) into `buffer`; 0, or -1.
int appd_tcp_peer(int fd, char *buffer, int size);

/// The current time as an HTTP date (`Tue, 01 Dec 2026 08:00:00 GMT`) into `buffer`.
void appd_http_date(char *buffer, int size);

/// poll() for readability: 1 readable, 0 timed out, -1 error.
int appd_wait_readable(int fd, int timeout_ms);

/// Starts an external plugin: fork, then in the child: default signal handlers, empty mask, a
/// new session, /dev/null on stdin, `out_fd`/`err_fd` on stdout/stderr, `listen_fd` on fd 3
/// (blocking, inherited), `keep_fds` on 4, 5, … in order (at most 32), nothing else; the
/// resource limits (`setrlimit` kinds and values, soft = hard); when `uid`/`gid` are not -1,
/// no supplementary groups and that group and user; then `envp[listen_pid_slot]` set to
/// LISTEN_PID=<child pid> (unless -1), chdir to `directory` (unless NULL), execve. Returns the
/// child's pid, or -1 (errno set). Exit 127 when exec fails, 122–126 when a step before it did.
/* The child gets SIGKILL when the forking thread's process dies (PR_SET_PDEATHSIG, which
   follows the forking *thread*: call it from a thread that lives as long as the process), and
   no new privileges (PR_SET_NO_NEW_PRIVS). */
pid_t appd_spawn_plugin(const char *path, char *const argv[], char *const envp[], int listen_pid_slot, int listen_fd, int out_fd, int err_fd, const char *directory,
                        const int *keep_fds, int keep_count, const int *limit_kinds, const unsigned long long *limit_values, int limit_count, long uid, long gid);

/// open(path, O_PATH | O_CLOEXEC): a descriptor that names the file without opening it for
/// reading or writing (to mount it into a plugin's sandbox). -1 with errno set.
int appd_open_path(const char *path);

/// RLIMIT_NPROC (a macro Swift does not import).
int appd_rlimit_nproc(void);

/// waitpid(pid) until it returns (retrying EINTR). 0, or -1 with errno set.
int appd_wait_exit(pid_t pid, int *status);

/// Names the calling thread (at most 15 bytes show), for top -H, ps -L and profiles.
void appd_set_thread_name(const char *name);

/// pipe2 with O_CLOEXEC.
int appd_pipe(int fds[2]);

/// A descriptor that becomes readable when `pid` exits (Linux 5.3+), or -1.
int appd_pidfd_open(pid_t pid);

/// Reaps `pid` if it has exited: 1 (status set), 0 still running, -1 error.
int appd_try_wait(pid_t pid, int *status);

/// O_NONBLOCK on `fd`; 0 or -1.
int appd_set_nonblocking(int fd);

/// Catches a signal with a handler installed at once (sigaction): each arrival makes the
/// signal's own eventfd readable, so none is lost between installing the handler and watching
/// for it. Returns that eventfd (the same one on every call for the signal), or -1.
int appd_signal_catch(int signal);

/// Empties a signal's eventfd; returns how many arrivals it counted.
unsigned long appd_signal_drain(int fd);

/// Keeps freed memory in the heap instead of handing it back to the kernel after each large
/// free: glibc's default trims an arena whenever 128 KiB are free at its top, and every trim is a
/// madvise whose TLB shootdown interrupts each CPU the process runs on (on a 2-core VM that was
/// 40 % of the database writer's time under load). Allocations above `mmap_threshold` still
/// get their own mapping. 0, or -1 when glibc refused a setting.
int appd_malloc_keep(size_t mmap_threshold, size_t trim_threshold);

/// Bytes the process's malloc heap holds for live allocations (mallinfo2: in-use chunks plus
/// mmapped blocks): what appd uses, unlike its RSS, which keeps memory freed since (see
/// appd_malloc_keep). Walks every arena: for a scrape, not a hot path.
size_t appd_heap_in_use(void);

#endif
