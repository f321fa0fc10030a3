/* Test-only fault injection for renames: makes chosen rename(2)-family calls fail, or kills
 * the process at one, to check what a failure or a kill -9 in the middle of an output set's
 * commit leaves behind.  Built as a library the bad-input matrix preloads into the tools
 * (LD_PRELOAD) and compiled into tk_test_output_set; no tool or library of the project links
 * it, and it does nothing unless its variables are set.
 *
 *   TK_FAULT_RENAME   a comma-separated list of rules, each NAME, NAME@N, NAME*, NAME! or NAME~:
 *                     the first rename, renameat or renameat2 call whose destination's last name
 *                     is NAME fails (NAME@N: the Nth such call; NAME*: every such call; NAME!: the
 *                     process is killed with SIGKILL at the first, before it happens; NAME~: the
 *                     first waits 300 ms, after a byte to TK_FAULT_STOP_FD, then goes ahead).  The
 *                     counts start afresh whenever the variable's value changes, and at
 *                     tk_fault_reset() (for a test that sets the same rules twice).
 *   TK_FAULT_ERRNO    the errno of a failure (a number; EIO when unset)
 *   TK_FAULT_NO_EXCHANGE  when 1, renameat2 with RENAME_EXCHANGE or RENAME_NOREPLACE fails
 *                     with EINVAL, as on a file system that has neither.
 *   TK_FAULT_MKDIR_STOP  NAME: a mkdir of a folder whose last name is NAME is made, then a byte
 *                     goes to TK_FAULT_STOP_FD and the thread stops there for good (a signal
 *                     arriving meanwhile is what a test looks at). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define MAX_RULES 16

static char spec_seen[1024];
static int seen[MAX_RULES]; /* calls each rule's NAME has had */

/* One byte to TK_FAULT_STOP_FD, where it is set: "the call is here". */
static void tell(void)
{
    const char *fd = getenv("TK_FAULT_STOP_FD");
    if (fd && write(atoi(fd), "s", 1) < 0) return;
}

void tk_fault_reset(void);
void tk_fault_reset(void)
{
    spec_seen[0] = '\0';
    memset(seen, 0, sizeof seen);
}

static const char *last_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* 0: go ahead; -1: fail with TK_FAULT_ERRNO (the process is killed here for a NAME! rule). */
static int fault(const char *to, unsigned flags)
{
    const char *no_exchange = getenv("TK_FAULT_NO_EXCHANGE");
    if (no_exchange && !strcmp(no_exchange, "1") && (flags & (RENAME_EXCHANGE | RENAME_NOREPLACE))) {
        errno = EINVAL;
        return -1;
    }
    const char *spec = getenv("TK_FAULT_RENAME");
    if (!spec) spec = "";
    if (strncmp(spec, spec_seen, sizeof spec_seen)) { /* a new set of rules */
        snprintf(spec_seen, sizeof spec_seen, "%s", spec);
        memset(seen, 0, sizeof seen);
    }
    const char *name = last_name(to);
    int rule = 0;
    for (const char *p = spec_seen; *p && rule < MAX_RULES; ++rule) {
        size_t n = strcspn(p, ",");
        const char *at = memchr(p, '@', n);
        char kind = n && (p[n - 1] == '*' || p[n - 1] == '!' || p[n - 1] == '~') ? p[n - 1] : 0;
        size_t len = at ? (size_t)(at - p) : kind ? n - 1 : n;
        int nth = at ? atoi(at + 1) : 1;
        if (len && strlen(name) == len && !strncmp(p, name, len)) {
            const int call = ++seen[rule];
            if (kind == '~' && call == 1) {
                tell();
                struct timespec wait = {0, 300000000};
                nanosleep(&wait, NULL);
            } else if (kind == '*' || call == nth) {
                if (kind == '!') kill(getpid(), SIGKILL);
                const char *e = getenv("TK_FAULT_ERRNO");
                errno = e && atoi(e) > 0 ? atoi(e) : EIO;
                return -1;
            }
        }
        p += n;
        if (*p == ',') ++p;
    }
    return 0;
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags)
{
    if (fault(newpath, flags)) return -1;
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    if (fault(newpath, 0)) return -1;
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 0);
}

int rename(const char *oldpath, const char *newpath)
{
    if (fault(newpath, 0)) return -1;
    return (int)syscall(SYS_renameat2, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

int mkdir(const char *path, mode_t mode)
{
    const int r = (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
    const char *stop = getenv("TK_FAULT_MKDIR_STOP");
    if (r == 0 && stop && !strcmp(last_name(path), stop)) {
        tell();
        for (;;) pause();
    }
    return r;
}
