/* The outputs of one call: aliasing checks, temporaries, checked writes, one commit, and
 * cleanup on signals, on exit and after killed runs (tk_output_set.h says why each). */
#define _GNU_SOURCE
#include "tk_output_set.h"
#include "common/free_all.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tk_status.h"

#define TMP_PREFIX ".tk-tmp-"
#define TK_OUTSET_MAX_FILES 20
#define TK_OUTSET_MAX_ENTRIES 40 /* outputs of one call: tk-pltf's 12 factors and xhat.npy fit */

typedef struct {
    char *final;      /* the path as the user gave it (or folder/name) */
    char *resolved;   /* folder resolved by realpath, then the name: for comparisons */
    char *temp;       /* tmpdir/new/name; NULL for a removal */
    unsigned long long min_size;
    int have_stat; /* the final path exists now: its identity, for outputs that are one file */
    dev_t dev;
    ino_t ino;
} file_t;

typedef struct {
    char *flag;
    char *tmpdir;        /* NULL for a removal */
    char *newdir;        /* tmpdir/new: the new files (a folder output replaced whole: the new folder) */
    char *create_folder; /* a folder output that does not exist yet: made on commit */
    int removal;
    char *swap_folder;              /* a folder output replaced whole: its real path */
    char *shown_folder;             /* and as the user gave it, for messages */
    int (*ours)(const char *name);  /* names an old version of that folder may hold that are ours */
    int nfiles;
    file_t files[TK_OUTSET_MAX_FILES];
} entry_t;

typedef struct {
    char *flag, *path, *resolved;
    int is_dir, have_stat;
    dev_t dev;
    ino_t ino;
} input_t;

struct tk_outset {
    pid_t owner; /* a forked child's copy is not its to clean up */
    char *prog;
    /* A fixed array, so that a signal handler on another thread never reads one being moved
     * by realloc; nentries grows (atomically) once an entry is whole. */
    entry_t entries[TK_OUTSET_MAX_ENTRIES];
    int nentries;
    /* A temporary folder being made, named before it exists (for a handler on another thread:
     * see make_tmpdir); NULL once its entry is published. */
    char *pending_tmpdir, *pending_newdir;
    input_t *inputs;
    int ninputs, icap;
    int committed;
};

/* ---- the registry the signal handler and atexit read ---------------------------------- */

#define MAX_SETS 32
static tk_outset *volatile active[MAX_SETS];
/* A process-directed signal may run the handler on any thread that does not block it (a
 * BLAS or OpenMP thread), beside the thread making a set or committing one.  Three flags,
 * read and written with sequentially consistent atomics, keep them apart:
 *   handling    1 while a handler removes the temporaries and ends the process;
 *   committing  how many commits are between their first journal and their last rename or
 *               undo: a handler that finds one defers the signal (deferred_sig), and that
 *               commit raises it again when it is done or undone (its own thread blocks the
 *               signals meanwhile), so that no commit is cut in the middle by a clean-up;
 *   the set's pending_tmpdir / pending_newdir: a temporary folder named before it is made. */
static int handling, committing;
/* Threads between publishing a temporary folder's name (pending_*) and checking `handling`
 * after making it: a handler on another thread waits for them (bounded) before it removes
 * what it can see, or it could end the process between a maker's mkdir and its check, and
 * leave the folder behind (the bad-input matrix's SIGINT row caught that under ASan). */
static int making;
static volatile sig_atomic_t deferred_sig;
/* A probe file being made by tk_outset_probe, named before it exists (as pending_tmpdir is). */
static char *volatile pending_probe;
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER; /* sets made on several threads at once */
/* Those that end a program by default and come from outside (or, SIGPIPE and SIGXFSZ, from a
 * closed pipe or a file-size limit): each removes the temporaries first. */
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};

/* The handler only reads entries fully built (published by nentries), and only calls unlink,
 * rmdir, signal and raise, which are async-signal-safe.  The folder being made (pending_*) is
 * read before the entries: its maker publishes the entry before it clears the name, so a name
 * read as NULL here means that its entry, if any, is counted in nentries below.  Read the other
 * way round, a folder published between the two reads was missed (the bad-input matrix's SIGINT
 * row under ASan, with the handler on an OpenBLAS thread). */
static void remove_temporaries_unsafe(tk_outset *s)
{
    const char *pn = LOAD(s->pending_newdir), *pt = LOAD(s->pending_tmpdir);
    const int n = LOAD(s->nentries);
    for (int i = 0; i < n; ++i) {
        entry_t *e = &s->entries[i];
        if (!e->tmpdir) continue;
        for (int f = 0; f < e->nfiles; ++f)
            if (e->files[f].temp) unlink(e->files[f].temp);
        if (e->newdir) rmdir(e->newdir);
        rmdir(e->tmpdir);
    }
    if (pn) rmdir(pn);
    if (pt) rmdir(pt);
}

static void on_signal(int sig)
{
    if (LOAD(committing) == 0) {
        STORE(handling, 1);
        if (LOAD(committing) == 0) {
            /* at most about 2 s: a maker cannot be this thread (its signals are blocked then) */
            for (int w = 0; w < 2000 && LOAD(making) > 0; ++w) {
                struct timespec ms = {0, 1000000};
                nanosleep(&ms, NULL);
            }
            const pid_t me = getpid();
            for (int k = 0; k < MAX_SETS; ++k)
                if (active[k] && !active[k]->committed && active[k]->owner == me) remove_temporaries_unsafe(active[k]);
            const char *probe = LOAD(pending_probe);
            if (probe) unlink(probe);
            signal(sig, SIG_DFL);
            raise(sig); /* delivered when the handler returns: the process ends by the signal, as before */
            return;     /* handling stays 1: the process is ending */
        }
        STORE(handling, 0);
    }
    deferred_sig = sig; /* a commit runs on another thread: it raises sig again when it is done or undone */
}

/* Until a handler on another thread has ended the process (or, finding a commit, given up). */
static void wait_for_handler(void)
{
    while (LOAD(handling)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* The makers' side (a temporary folder, a temporary file, a probe): with this thread counted in
 * `making`, until no handler is ending the process, so that nothing is made once one has
 * begun.  A handler either saw the count and waits for the maker to finish (and then removes
 * what it made), or began first, and then the maker waits here, uncounted, for the process to
 * end (or for the handler to give up, finding a commit).  A check after the making alone is too
 * late: the handler may already have looked, and the process can end before the maker takes
 * back what it made (the bad-input matrix's SIGINT row under ASan, a handler on an OpenBLAS
 * thread while the main one made the next output's folder). */
static void hold_off_handlers(void)
{
    while (LOAD(handling)) {
        __atomic_sub_fetch(&making, 1, __ATOMIC_SEQ_CST);
        wait_for_handler();
        __atomic_add_fetch(&making, 1, __ATOMIC_SEQ_CST);
    }
}

static void begin_making(void)
{
    __atomic_add_fetch(&making, 1, __ATOMIC_SEQ_CST);
    hold_off_handlers();
}

static void end_making(void) { __atomic_sub_fetch(&making, 1, __ATOMIC_SEQ_CST); }

/* The commit's side of the flags above. */
static void begin_commit(void)
{
    for (;;) {
        __atomic_add_fetch(&committing, 1, __ATOMIC_SEQ_CST);
        if (!LOAD(handling)) return;
        __atomic_sub_fetch(&committing, 1, __ATOMIC_SEQ_CST);
        wait_for_handler();
    }
}

static void end_commit(void)
{
    __atomic_sub_fetch(&committing, 1, __ATOMIC_SEQ_CST);
    const int sig = deferred_sig;
    if (sig) {
        deferred_sig = 0;
        raise(sig); /* delivered when this thread unblocks the signals: the handler removes the rest */
    }
}

static void at_exit(void)
{
    const pid_t me = getpid();
    for (int k = 0; k < MAX_SETS; ++k)
        if (active[k] && active[k]->owner == me) tk_outset_abort(active[k]);
}

static void install(void)
{
    for (size_t k = 0; k < sizeof cleanup_signals / sizeof *cleanup_signals; ++k) {
        struct sigaction old, sa;
        if (sigaction(cleanup_signals[k], NULL, &old) != 0) continue;
        if (old.sa_handler != SIG_DFL) continue; /* ignored (nohup) or the program's own: left alone */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t j = 0; j < sizeof cleanup_signals / sizeof *cleanup_signals; ++j)
            sigaddset(&sa.sa_mask, cleanup_signals[j]);
        sigaction(cleanup_signals[k], &sa, NULL);
    }
    atexit(at_exit);
}

static void install_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}

/* Changes to a set happen with the cleanup signals blocked, so that the handler never sees
 * a half-grown array. */
static void block(sigset_t *old)
{
    sigset_t all;
    sigemptyset(&all);
    for (size_t k = 0; k < sizeof cleanup_signals / sizeof *cleanup_signals; ++k) sigaddset(&all, cleanup_signals[k]);
    sigprocmask(SIG_BLOCK, &all, old);
}

static void unblock(const sigset_t *old) { sigprocmask(SIG_SETMASK, old, NULL); }

/* ---- messages -------------------------------------------------------------------------- */

static int fail(const tk_outset *s, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(const tk_outset *s, int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tk_set_error(TK_ERR_IO, "%s", msg);
    if (s->prog) fprintf(stderr, "%s: error: %s\n", s->prog, msg);
    return code;
}

int tk_outset_fail(const tk_outset *s, int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail(s, code, "%s", msg);
}

/* "--out fit/a.npy" or "fit/a.npy" where no flag names it. */
static const char *label(const char *flag, const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s", flag ? flag : "", flag ? " " : "", path);
    return buf;
}

/* ---- paths ----------------------------------------------------------------------------- */

static char *cat3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%s", a, b, c);
    return p;
}

/* The folder of path ("." for a bare name) and its last component (trailing '/' ignored). */
static char *folder_of(const char *path, const char **base)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') --n;
    size_t slash = n;
    while (slash > 0 && path[slash - 1] != '/') --slash;
    if (base) *base = path + slash;
    if (slash == 0) return strdup(".");
    if (slash == 1) return strdup("/");
    return strndup(path, slash - 1);
}

static char *last_name(const char *path)
{
    const char *base;
    char *folder = folder_of(path, &base);
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') --n;
    char *out = strndup(base, n);
    free(folder);
    return out;
}

/* realpath of path's folder, then its name: "./x", "x" and "link-to-here/x" agree. */
static char *resolve(const char *path)
{
    const char *base;
    char *folder = folder_of(path, &base);
    char *name = last_name(path);
    char buf[PATH_MAX];
    char *out = NULL;
    if (folder && name) {
        if (realpath(folder, buf)) out = cat3(buf, strcmp(buf, "/") ? "/" : "", name);
        else out = cat3(folder, "/", name);
    }
    free(folder);
    free(name);
    return out;
}

static int starts_with_folder(const char *path, const char *folder)
{
    size_t n = strlen(folder);
    return !strncmp(path, folder, n) && (path[n] == '/' || (n == 1 && folder[0] == '/'));
}

/* ---- the set --------------------------------------------------------------------------- */

tk_outset *tk_outset_new(const char *prog)
{
    tk_outset *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (prog && !(s->prog = strdup(prog))) {
        free(s);
        return NULL;
    }
    s->owner = getpid();
    install_once();
    sigset_t old;
    block(&old);
    pthread_mutex_lock(&registry_lock);
    int slot = -1;
    for (int k = 0; k < MAX_SETS && slot < 0; ++k)
        if (!active[k]) slot = k;
    if (slot >= 0) active[slot] = s;
    pthread_mutex_unlock(&registry_lock);
    unblock(&old);
    return s; /* a 33rd set at once works, without signal cleanup */
}

static void forget(tk_outset *s)
{
    sigset_t old;
    block(&old);
    pthread_mutex_lock(&registry_lock);
    for (int k = 0; k < MAX_SETS; ++k)
        if (active[k] == s) active[k] = NULL;
    pthread_mutex_unlock(&registry_lock);
    unblock(&old);
}

static void drop_entry(entry_t *e)
{
    for (int f = 0; f < e->nfiles; ++f) TK_FREE_ALL(e->files[f].final, e->files[f].resolved, e->files[f].temp);
    TK_FREE_ALL(e->flag, e->tmpdir, e->newdir, e->create_folder, e->swap_folder, e->shown_folder);
    memset(e, 0, sizeof *e);
}

void tk_outset_free(tk_outset *s)
{
    if (!s) return;
    tk_outset_abort(s);
    forget(s);
    for (int i = 0; i < s->nentries; ++i) drop_entry(&s->entries[i]);
    for (int i = 0; i < s->ninputs; ++i) TK_FREE_ALL(s->inputs[i].flag, s->inputs[i].path, s->inputs[i].resolved);
    TK_FREE_ALL(s->inputs, s->prog, s);
}

static int add_input(tk_outset *s, const char *flag, const char *path, int is_dir)
{
    if (!path || !*path) return 0;
    if (s->ninputs == s->icap) {
        int cap = s->icap ? 2 * s->icap : 8;
        input_t *grown = realloc(s->inputs, (size_t)cap * sizeof *grown);
        if (!grown) return fail(s, 1, "out of memory; free memory and run again");
        s->inputs = grown;
        s->icap = cap;
    }
    input_t *in = &s->inputs[s->ninputs];
    memset(in, 0, sizeof *in);
    in->flag = flag ? strdup(flag) : NULL;
    in->path = strdup(path);
    in->resolved = resolve(path);
    if (!in->path || !in->resolved || (flag && !in->flag)) {
        free(in->flag), free(in->path), free(in->resolved);
        return fail(s, 1, "out of memory; free memory and run again");
    }
    in->is_dir = is_dir;
    struct stat st;
    if (stat(path, &st) == 0) {
        in->have_stat = 1;
        in->dev = st.st_dev;
        in->ino = st.st_ino;
    }
    if (is_dir) { /* the folder itself, resolved whole: "model/" and "model" agree */
        char buf[PATH_MAX];
        if (realpath(path, buf)) {
            free(in->resolved);
            in->resolved = strdup(buf);
            if (!in->resolved) return fail(s, 1, "out of memory; free memory and run again");
        }
    }
    ++s->ninputs;
    return 0;
}

int tk_outset_input(tk_outset *s, const char *flag, const char *path) { return add_input(s, flag, path, 0); }
int tk_outset_input_dir(tk_outset *s, const char *flag, const char *path) { return add_input(s, flag, path, 1); }

/* Is the file f (final path, resolved) an input, inside an input folder, or another
 * output's file?  0, or 2 after the message. */
static int check_alias(const tk_outset *s, const char *flag, const file_t *f)
{
    char a[1024], b[1024];
    struct stat st;
    const int exists = stat(f->final, &st) == 0;
    for (int i = 0; i < s->ninputs; ++i) {
        const input_t *in = &s->inputs[i];
        if (in->is_dir) {
            struct stat fst;
            char *folder = folder_of(f->final, NULL);
            const int same_folder = folder && stat(folder, &fst) == 0 && in->have_stat && fst.st_dev == in->dev &&
                                    fst.st_ino == in->ino;
            free(folder);
            if (same_folder || starts_with_folder(f->resolved, in->resolved) || !strcmp(f->resolved, in->resolved))
                return fail(s, 2, "%s: is inside the input folder %s: refusing to write into an input; "
                                  "choose another output path", label(flag, f->final, a, sizeof a),
                            label(in->flag, in->path, b, sizeof b));
            continue;
        }
        if (!strcmp(f->resolved, in->resolved) ||
            (exists && in->have_stat && st.st_dev == in->dev && st.st_ino == in->ino))
            return fail(s, 2, "%s: is the input %s (the same file): refusing to overwrite an input; "
                              "choose another output path", label(flag, f->final, a, sizeof a),
                        label(in->flag, in->path, b, sizeof b));
    }
    for (int i = 0; i < s->nentries; ++i) {
        const entry_t *e = &s->entries[i];
        for (int k = 0; k < e->nfiles; ++k)
            if (!strcmp(e->files[k].resolved, f->resolved) ||
                (exists && e->files[k].have_stat && e->files[k].dev == st.st_dev && e->files[k].ino == st.st_ino))
                return fail(s, 2, "%s and %s are the same file: this call would write it twice; "
                                  "give each output its own path", label(e->flag, e->files[k].final, a, sizeof a),
                            label(flag, f->final, b, sizeof b));
    }
    return 0;
}

static entry_t *new_entry(tk_outset *s)
{
    if (s->nentries == TK_OUTSET_MAX_ENTRIES) return NULL;
    entry_t *e = &s->entries[s->nentries];
    memset(e, 0, sizeof *e);
    return e;
}


static int remove_stale(const tk_outset *s, const char *folder);

/* The folder a file goes to must exist (or, for a new folder output, its parent) and take
 * a new folder now: the temporary folder is made there at once (so /proc, a read-only
 * mount or a full inode table is reported before any work). */
static int make_tmpdir(tk_outset *s, const char *flag, const char *path, const char *where, char **tmpdir,
                       char **newdir)
{
    char a[1024];
    struct stat st;
    if (stat(where, &st) != 0) {
        const int err = errno;
        return fail(s, 1, "%s: cannot write: the folder %s %s; %s", label(flag, path, a, sizeof a), where,
                    err == ENOENT ? "does not exist" : strerror(err),
                    err == ENOENT ? "create it first, or choose another folder" : "choose another folder");
    }
    if (!S_ISDIR(st.st_mode))
        return fail(s, 1, "%s: cannot write: %s is not a folder; choose an output inside a folder",
                    label(flag, path, a, sizeof a), where);
    remove_stale(s, where);
    char pid[32];
    snprintf(pid, sizeof pid, "%s%ld-XXXXXX", TMP_PREFIX, (long)getpid());
    char *t = cat3(where, strcmp(where, "/") ? "/" : "", pid);
    char *n = t ? cat3(t, "/", "new") : NULL;
    if (!n) {
        free(t);
        return fail(s, 1, "out of memory; free memory and run again");
    }
    /* mkdtemp's job, with the name published first (pending_*): a handler on another thread
     * then removes the folder even when it comes before the entry does; and one that began
     * too early to see the name is seen here (handling), so the folder is taken back. */
    static unsigned counter;
    const size_t x = strlen(t) - 6;
    int err = 0;
    begin_making();
    for (int tries = 0;; ++tries) {
        hold_off_handlers(); /* (again at each try: after a handler gave up, or a name taken) */
        err = 0;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        unsigned long long r = (unsigned long long)now.tv_nsec * 6364136223846793005ull ^
                               ((unsigned long long)getpid() << 32) ^ __atomic_add_fetch(&counter, 7919, __ATOMIC_RELAXED);
        static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        for (int k = 0; k < 6; ++k, r /= 62) t[x + k] = n[x + k] = letters[r % 62];
        STORE(s->pending_newdir, n);
        STORE(s->pending_tmpdir, t);
        if (mkdir(t, 0700) != 0) {
            err = errno;
            if (err == EEXIST && tries < 100) continue;
            break;
        }
        if (mkdir(n, 0700) != 0) {
            err = errno;
            rmdir(t);
            break;
        }
        if (!LOAD(handling)) break;
        rmdir(n); /* a handler began meanwhile, and may have looked before the name was there: */
        rmdir(t); /* the next try waits for it to end the process, or to give up */
    }
    /* past the check: the names stay in pending_* until the entry is published, where a
     * handler that starts from now on finds them; on failure they are cleared first, so that
     * a handler (it reads them only once `making` is 0) never reads a name being freed */
    if (err) {
        STORE(s->pending_tmpdir, NULL);
        STORE(s->pending_newdir, NULL);
    }
    end_making();
    if (err) {
        free(t);
        free(n);
        return fail(s, 1, "%s: cannot create a file in the folder %s: %s; %s", label(flag, path, a, sizeof a), where,
                    strerror(err), err == EACCES || err == EROFS || err == EPERM || err == ENOENT
                                       ? "choose a folder you can write to"
                                       : err == ENOSPC || err == EDQUOT ? "free disk space, or write elsewhere"
                                                                        : "check the folder, or write elsewhere");
    }
    *tmpdir = t;
    *newdir = n;
    return 0;
}

static int set_file(tk_outset *s, entry_t *e, const char *final, const char *tmpdir)
{
    file_t *f = &e->files[e->nfiles];
    memset(f, 0, sizeof *f);
    f->final = strdup(final);
    f->resolved = resolve(final);
    struct stat st;
    if (stat(final, &st) == 0) {
        f->have_stat = 1;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
    }
    char *name = last_name(final);
    f->temp = tmpdir && name ? cat3(tmpdir, "/", name) : NULL;
    free(name);
    if (!f->final || !f->resolved || (tmpdir && !f->temp)) {
        free(f->final), free(f->resolved), free(f->temp);
        return fail(s, 1, "out of memory; free memory and run again");
    }
    ++e->nfiles;
    return 0;
}

/* Shared by the adds: the entry's checks, then its temporary folder. */
static int add_entry(tk_outset *s, const char *flag, const char *const *finals, int nfinals, const char *tmp_where,
                     const char *create_folder, int removal, const char *shown)
{
    char a[1024];
    for (int k = 0; k < nfinals; ++k) {
        if (!finals[k] || !*finals[k]) return -fail(s, 2, "%s: an output path is empty; give a file name", flag ? flag : "output");
        struct stat st;
        if (stat(finals[k], &st) == 0 && S_ISDIR(st.st_mode))
            return -fail(s, 1, "%s: cannot write: it is a directory; give a file name",
                         label(flag, finals[k], a, sizeof a));
    }
    entry_t *e = new_entry(s);
    if (!e) return -fail(s, 1, "more than %d outputs in one call; report this as a bug", TK_OUTSET_MAX_ENTRIES);
    e->removal = removal;
    e->flag = flag ? strdup(flag) : NULL;
    if (flag && !e->flag) return -fail(s, 1, "out of memory; free memory and run again");
    int code = 0;
    for (int k = 0; k < nfinals && !code; ++k) code = set_file(s, e, finals[k], NULL);
    for (int k = 0; k < e->nfiles && !code; ++k) code = check_alias(s, flag, &e->files[k]);
    for (int k = 1; k < e->nfiles && !code; ++k) { /* a companion is beside its output: one temporary, one journal */
        const char *r0 = strrchr(e->files[0].resolved, '/'), *rk = strrchr(e->files[k].resolved, '/');
        if (r0 - e->files[0].resolved != rk - e->files[k].resolved ||
            strncmp(e->files[0].resolved, e->files[k].resolved, (size_t)(r0 - e->files[0].resolved)))
            code = fail(s, 1, "%s: the companion file %s is not in the same folder; write both into one folder",
                        label(flag, e->files[0].final, a, sizeof a), e->files[k].final);
    }
    char *tmpdir = NULL, *newdir = NULL;
    /* From the folder's making to the entry's publishing the cleanup signals wait: one that
     * came between would end the process with a folder the handler cannot see yet (the
     * matrix's SIGTERM row caught it, sent the moment the folder appeared). */
    sigset_t old;
    block(&old);
    if (!code && !removal) code = make_tmpdir(s, flag, shown ? shown : finals[0], tmp_where, &tmpdir, &newdir);
    if (!code && tmpdir)
        for (int k = 0; k < e->nfiles && !code; ++k) {
            char *name = last_name(e->files[k].final);
            e->files[k].temp = name ? cat3(newdir, "/", name) : NULL;
            free(name);
            if (!e->files[k].temp) code = fail(s, 1, "out of memory; free memory and run again");
        }
    if (!code && create_folder && !(e->create_folder = strdup(create_folder))) code = fail(s, 1, "out of memory; free memory and run again");
    if (code) {
        if (newdir) rmdir(newdir);
        if (tmpdir) rmdir(tmpdir);
        STORE(s->pending_tmpdir, NULL);
        STORE(s->pending_newdir, NULL);
        unblock(&old);
        free(tmpdir);
        free(newdir);
        drop_entry(e);
        return -code;
    }
    e->tmpdir = tmpdir;
    e->newdir = newdir;
    __atomic_store_n(&s->nentries, s->nentries + 1, __ATOMIC_RELEASE); /* now the handler sees it, whole */
    STORE(s->pending_tmpdir, NULL);
    STORE(s->pending_newdir, NULL);
    unblock(&old);
    return s->nentries - 1;
}

int tk_outset_add(tk_outset *s, const char *flag, const char *path, const char *const *companions)
{
    const char *finals[TK_OUTSET_MAX_FILES] = {path};
    int n = 1;
    for (const char *const *c = companions; c && *c; ++c) {
        if (n == TK_OUTSET_MAX_FILES) return -fail(s, 1, "%s: too many companion files; report this as a bug", path);
        finals[n++] = *c;
    }
    if (!path || !*path) return -fail(s, 2, "%s: an output path is empty; give a file name", flag ? flag : "output");
    char *folder = folder_of(path, NULL);
    if (!folder) return -fail(s, 1, "out of memory; free memory and run again");
    int r = add_entry(s, flag, finals, n, folder, NULL, 0, NULL);
    free(folder);
    return r;
}

int tk_outset_add_in_folder(tk_outset *s, const char *flag, const char *folder, const char *name)
{
    char a[1024];
    if (!folder || !*folder) return -fail(s, 2, "%s: an output folder is empty; give a folder name", flag ? flag : "output");
    struct stat st;
    char *final = cat3(folder, "/", name);
    if (!final) return -fail(s, 1, "out of memory; free memory and run again");
    int r;
    if (stat(folder, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            r = -fail(s, 1, "%s: exists and is not a directory; give a directory name", label(flag, folder, a, sizeof a));
        else /* an existing folder (a link to one included: the files go to the folder it names) */
            r = add_entry(s, flag, (const char *const *)&final, 1, folder, NULL, 0, folder);
    } else if (errno == ENOENT) {
        char *parent = folder_of(folder, NULL);
        r = parent ? add_entry(s, flag, (const char *const *)&final, 1, parent, folder, 0, folder)
                   : -fail(s, 1, "out of memory; free memory and run again");
        free(parent);
    } else {
        r = -fail(s, 1, "%s: cannot write: %s; check the path", label(flag, folder, a, sizeof a), strerror(errno));
    }
    free(final);
    return r;
}

int tk_outset_add_folder(tk_outset *s, const char *flag, const char *folder, const char *const *names,
                         int (*ours)(const char *name))
{
    char a[1024];
    if (!folder || !*folder) return -fail(s, 2, "%s: an output folder is empty; give a folder name", flag ? flag : "output");
    char *finals[TK_OUTSET_MAX_FILES];
    int n = 0, r;
    for (const char *const *c = names; c && *c; ++c) {
        if (n == TK_OUTSET_MAX_FILES) {
            for (int k = 0; k < n; ++k) free(finals[k]);
            return -fail(s, 1, "%s: too many files; report this as a bug", folder);
        }
        if (!(finals[n++] = cat3(folder, "/", *c))) {
            for (int k = 0; k < n - 1; ++k) free(finals[k]);
            return -fail(s, 1, "out of memory; free memory and run again");
        }
    }
    /* A link to a folder: the folder it names is replaced, and the link kept. */
    char real[PATH_MAX];
    struct stat st;
    char *parent = NULL;
    if (stat(folder, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || !realpath(folder, real))
            r = -fail(s, 1, "%s: exists and is not a directory; give a directory name", label(flag, folder, a, sizeof a));
        else if (!(parent = folder_of(real, NULL)))
            r = -fail(s, 1, "out of memory; free memory and run again");
        else
            r = add_entry(s, flag, (const char *const *)finals, n, parent, NULL, 0, folder);
    } else if (errno == ENOENT) {
        snprintf(real, sizeof real, "%s", folder);
        parent = folder_of(folder, NULL);
        r = parent ? add_entry(s, flag, (const char *const *)finals, n, parent, NULL, 0, folder)
                   : -fail(s, 1, "out of memory; free memory and run again");
    } else {
        r = -fail(s, 1, "%s: cannot write: %s; check the path", label(flag, folder, a, sizeof a), strerror(errno));
    }
    free(parent);
    for (int k = 0; k < n; ++k) free(finals[k]);
    if (r >= 0) {
        entry_t *e = &s->entries[r];
        e->ours = ours;
        if (!(e->swap_folder = strdup(real)) || !(e->shown_folder = strdup(folder)))
            return -fail(s, 1, "out of memory; free memory and run again");
    }
    return r;
}

int tk_outset_remove_on_commit(tk_outset *s, const char *path)
{
    return add_entry(s, NULL, &path, 1, NULL, NULL, 1, NULL);
}

const char *tk_outset_temp(const tk_outset *s, int idx, int companion)
{
    if (idx < 0 || idx >= s->nentries || companion < 0 || companion >= s->entries[idx].nfiles) return NULL;
    return s->entries[idx].files[companion].temp;
}

const char *tk_outset_path(const tk_outset *s, int idx)
{
    return idx >= 0 && idx < s->nentries ? s->entries[idx].files[0].final : NULL;
}

void tk_outset_expect_size(tk_outset *s, int idx, int companion, unsigned long long bytes)
{
    if (idx >= 0 && idx < s->nentries && companion >= 0 && companion < s->entries[idx].nfiles)
        s->entries[idx].files[companion].min_size = bytes;
}

int tk_outset_open(tk_outset *s, int idx, int companion)
{
    const char *t = tk_outset_temp(s, idx, companion);
    char a[1024];
    if (!t) return fail(s, 1, "output %d: no such output; report this as a bug", idx), -1;
    /* The handshake of make_tmpdir and tk_outset_probe: a handler on another thread either
     * waits for this open (`making`) and then removes the file, or began first, and then no
     * file is made that the process could end with after the handler looked. */
    sigset_t old;
    block(&old);
    begin_making();
    int fd = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    const int err = errno;
    end_making();
    unblock(&old);
    errno = err;
    if (fd < 0)
        fail(s, 1, "%s: cannot create: %s; check the folder, or write elsewhere",
             label(s->entries[idx].flag, s->entries[idx].files[companion].final, a, sizeof a), strerror(errno));
    return fd;
}

/* ---- checked writes -------------------------------------------------------------------- */

int tk_write_all(int fd, const void *data, size_t bytes)
{
    const char *p = data;
    while (bytes) {
        size_t chunk = bytes > (1u << 30) ? (1u << 30) : bytes;
        ssize_t n = write(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno ? errno : EIO;
        }
        if (n == 0) return EIO;
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

const char *tk_write_advice(int err)
{
    return err == ENOSPC || err == EFBIG || err == EDQUOT ? "free disk space, or write elsewhere, and run again"
                                                          : "check the disk, or write elsewhere, and run again";
}

int tk_fsync_close(int fd)
{
    int err = 0;
    if (fsync(fd) != 0 && errno != EINVAL) err = errno ? errno : EIO; /* EINVAL: a pipe or special file */
    if (close(fd) != 0 && !err && errno != EINTR) err = errno ? errno : EIO;
    return err;
}

/* ---- temporary folders ----------------------------------------------------------------- */

/* The files in folder name (of parent_fd), not following links, and where depth > 0 those of
 * its subfolders the same way, depth - 1 deep; a subfolder is removed only where empty. */
static void empty_folder(int parent_fd, const char *name, int depth)
{
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode) && depth > 0) empty_folder(fd, de->d_name, depth - 1);
        unlinkat(fd, de->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    }
    closedir(d);
}

/* A temporary folder of ours: its files (a writer may add files we did not name), those of
 * its subfolders (new/, keep/: the new files, or the previous ones after a commit), then the
 * folders.  Nothing is followed through a link, and a folder that is not empty then (not ours
 * to empty) stays, and the temporary with it. */
static void remove_tmpdir(int parent_fd, const char *name)
{
    empty_folder(parent_fd, name, 1);
    unlinkat(parent_fd, name, AT_REMOVEDIR);
}

/* ---- the commit's journal -------------------------------------------------------------- */

/* Before its first rename, each temporary folder gets a journal: what its output is about to
 * put in place, by name relative to the folder the temporary is in, and by the identity
 * (device, inode) of each new file or folder.  From the journal and what the names hold now,
 * the step each output reached can be read back, so that a commit is undone the same way by
 * the process (a failure in the middle) and by the next run (a kill -9 in the middle, found by
 * tk_outset_remove_stale): a name holding the new file gets its previous file back (kept in
 * the temporary meanwhile: new/NAME after an exchange, keep/NAME where the file system has no
 * exchange), or is removed where it had none; a replaced folder is swapped back.  A name that
 * holds something the commit did not put there (changed since) is left alone, and so is the
 * temporary with the previous file.  Once every output of the call is in place the journals
 * are removed: the previous files are then garbage, as before. */

#define JOURNAL "journal"
#define JOURNAL_HEAD "tk-outset-journal 1\n"
#define JOURNAL_MAX (1u << 20)

typedef struct {
    char kind; /* 'f' a file put in place, 'd' a folder replaced whole, 'n' a name written into
                  that folder, 'm' a folder the commit makes */
    unsigned long long dev, ino;
    char *rel; /* relative to the temporary's folder; "sub/name" in a folder the commit makes */
} jitem;

typedef struct {
    jitem *items;
    int n, cap;
} journal_t;

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} text_t;

static void text_add(text_t *t, const char *data, size_t len)
{
    if (t->oom) return;
    if (t->n + len + 1 > t->cap) {
        size_t cap = (t->n + len + 1) * 2;
        char *grown = realloc(t->p, cap);
        if (!grown) {
            t->oom = 1;
            return;
        }
        t->p = grown;
        t->cap = cap;
    }
    memcpy(t->p + t->n, data, len);
    t->n += len;
    t->p[t->n] = '\0';
}

/* "KIND DEV INO LEN:REL\n": the length lets a name hold any byte, a newline included. */
static void journal_line(text_t *t, char kind, unsigned long long dev, unsigned long long ino, const char *rel)
{
    char head[96];
    int n = snprintf(head, sizeof head, "%c %llu %llu %zu:", kind, dev, ino, strlen(rel));
    text_add(t, head, (size_t)n);
    text_add(t, rel, strlen(rel));
    text_add(t, "\n", 1);
}

static void journal_free(journal_t *j)
{
    for (int i = 0; i < j->n; ++i) free(j->items[i].rel);
    free(j->items);
    memset(j, 0, sizeof *j);
}

/* 0 for a whole journal (its head, its lines, "end"), -1 otherwise. */
static int journal_parse(const char *p, size_t len, journal_t *j)
{
    memset(j, 0, sizeof *j);
    const char *end = p + len;
    const size_t hl = strlen(JOURNAL_HEAD);
    if (len < hl || memcmp(p, JOURNAL_HEAD, hl)) return -1;
    p += hl;
    while (p < end) {
        if (end - p == 4 && !memcmp(p, "end\n", 4)) return 0;
        jitem it;
        memset(&it, 0, sizeof it);
        char num[3][32];
        it.kind = *p++;
        if (!strchr("fdnm", it.kind) || it.kind == '\0') break;
        for (int f = 0; f < 3; ++f) { /* " DEV", " INO", " LEN:" */
            if (p >= end || *p++ != ' ') goto bad;
            size_t k = 0;
            while (p < end && *p >= '0' && *p <= '9' && k + 1 < sizeof num[f]) num[f][k++] = *p++;
            num[f][k] = '\0';
            if (!k) goto bad;
        }
        if (p >= end || *p++ != ':') goto bad;
        it.dev = strtoull(num[0], NULL, 10);
        it.ino = strtoull(num[1], NULL, 10);
        unsigned long long rl = strtoull(num[2], NULL, 10);
        if (rl == 0 || rl > PATH_MAX || (size_t)(end - p) < rl + 1 || p[rl] != '\n' || memchr(p, '\0', rl)) goto bad;
        if (!(it.rel = strndup(p, rl))) goto bad;
        p += rl + 1;
        /* a name relative to the temporary's folder: no "..", no absolute path, at most one folder */
        const char *slash = strchr(it.rel, '/');
        if (it.rel[0] == '/' || (slash && strchr(slash + 1, '/')) || !strcmp(it.rel, "..") || !strncmp(it.rel, "../", 3) ||
            (slash && (!strcmp(slash + 1, "..") || !strcmp(slash + 1, ".") || !slash[1])) || !strcmp(it.rel, ".")) {
            free(it.rel);
            goto bad;
        }
        if (j->n == j->cap) {
            int cap = j->cap ? 2 * j->cap : 16;
            jitem *grown = realloc(j->items, (size_t)cap * sizeof *grown);
            if (!grown) {
                free(it.rel);
                goto bad;
            }
            j->items = grown;
            j->cap = cap;
        }
        j->items[j->n++] = it;
    }
bad:
    journal_free(j);
    return -1;
}

/* The output's name relative to the temporary's folder. */
static char *rel_of(const entry_t *e, int k)
{
    if (e->swap_folder) return last_name(e->swap_folder);
    char *name = last_name(e->files[k].final);
    if (!name || !e->create_folder) return name;
    char *sub = last_name(e->create_folder);
    char *rel = sub ? cat3(sub, "/", name) : NULL;
    free(sub);
    free(name);
    return rel;
}

static const char *base_of(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    return slash ? slash + 1 : rel;
}

/* The journal of entry e, written whole (to journal.part, synced, renamed) into its temporary.
 * 0, or an errno. */
static int journal_write(const entry_t *e)
{
    text_t t = {0};
    text_add(&t, JOURNAL_HEAD, strlen(JOURNAL_HEAD));
    struct stat st;
    int err = 0;
    if (e->create_folder && lstat(e->create_folder, &st) != 0) {
        char *sub = last_name(e->create_folder);
        if (sub) journal_line(&t, 'm', 0, 0, sub);
        else t.oom = 1;
        free(sub);
    }
    if (e->swap_folder) {
        char *rel = rel_of(e, 0);
        if (!rel || lstat(e->newdir, &st) != 0) err = rel ? errno : ENOMEM;
        else journal_line(&t, 'd', (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, rel);
        free(rel);
        for (int k = 0; k < e->nfiles && !err; ++k) journal_line(&t, 'n', 0, 0, base_of(e->files[k].temp));
    } else {
        for (int j = 1; j <= e->nfiles && !err; ++j) { /* in the order of the renames */
            const int k = j % e->nfiles;
            char *rel = rel_of(e, k);
            if (!rel || lstat(e->files[k].temp, &st) != 0) err = rel ? errno : ENOMEM;
            else journal_line(&t, 'f', (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, rel);
            free(rel);
        }
    }
    text_add(&t, "end\n", 4);
    if (!err && t.oom) err = ENOMEM;
    char *part = cat3(e->tmpdir, "/", JOURNAL ".part"), *path = cat3(e->tmpdir, "/", JOURNAL);
    if (!err && (!part || !path)) err = ENOMEM;
    if (!err) {
        int fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) err = errno;
        else if ((err = tk_write_all(fd, t.p, t.n)) != 0) close(fd);
        else err = tk_fsync_close(fd);
        if (!err && rename(part, path) != 0) err = errno;
        if (err) unlink(part);
    }
    free(part);
    free(path);
    free(t.p);
    return err;
}

static int journal_read(int tmp_fd, journal_t *j)
{
    int fd = openat(tmp_fd, JOURNAL, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    char *buf = malloc(JOURNAL_MAX);
    size_t len = 0;
    ssize_t n = 0;
    while (buf && len < JOURNAL_MAX && (n = read(fd, buf + len, JOURNAL_MAX - len)) > 0) len += (size_t)n;
    close(fd);
    int r = buf && n >= 0 && len < JOURNAL_MAX ? journal_parse(buf, len, j) : -1;
    free(buf);
    return r;
}

static int same_node(const struct stat *st, const jitem *it)
{
    return (unsigned long long)st->st_dev == it->dev && (unsigned long long)st->st_ino == it->ino;
}

/* Where an undo cannot go on: its message, naming the output (folder/rel) and where its
 * previous version is kept. */
static int undo_failed(char *why, size_t size, const char *folder, const char *tmp, const jitem *it, const char *kept,
                       const char *what)
{
    if (why && size) {
        const char *f = strcmp(folder, ".") ? folder : "", *sep = *f ? "/" : "";
        if (kept)
            snprintf(why, size, "%s%s%s: %s; its previous version is kept as %s%s%s/%s%s%s: move it back by hand", f, sep,
                     it->rel, what, f, sep, tmp, kept, kept[strlen(kept) - 1] == '/' ? "" : "/",
                     it->kind == 'd' ? "" : base_of(it->rel));
        else
            snprintf(why, size, "%s%s%s: %s; remove it by hand if it is not yours", f, sep, it->rel, what);
    }
    return -1;
}

/* The folder a file item's name is in (opened, not following a link) and its last name. */
static int open_item_folder(int parent_fd, const char *rel, const char **name)
{
    const char *slash = strchr(rel, '/');
    *name = slash ? slash + 1 : rel;
    if (!slash) return fcntl(parent_fd, F_DUPFD_CLOEXEC, 0);
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%.*s", (int)(slash - rel), rel);
    return openat(parent_fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int undo_file(int parent_fd, int tmp_fd, const jitem *it, char *why, size_t size, const char *folder,
                     const char *tmp)
{
    const char *base = base_of(it->rel), *name = NULL;
    struct stat nst, kst, fst;
    int dir_fd = open_item_folder(parent_fd, it->rel, &name);
    const int in_place = dir_fd >= 0 && fstatat(dir_fd, name, &fst, AT_SYMLINK_NOFOLLOW) == 0;
    const int absent = !in_place && errno == ENOENT; /* the name, or the folder it would be in */
    int new_fd = openat(tmp_fd, "new", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int keep_fd = openat(tmp_fd, "keep", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int held_new = new_fd >= 0 && fstatat(new_fd, base, &nst, AT_SYMLINK_NOFOLLOW) == 0;
    const int held_keep = keep_fd >= 0 && fstatat(keep_fd, base, &kst, AT_SYMLINK_NOFOLLOW) == 0;
    const int changed = !absent && !(in_place && same_node(&fst, it)); /* the name holds what the commit did not put */
    int r = 0;
    if (held_new && same_node(&nst, it)) { /* never moved in; a previous file moved aside goes back */
        if (held_keep && (changed || dir_fd < 0))
            r = undo_failed(why, size, folder, tmp, it, "keep", "it changed since; the previous file was not put back");
        else if (held_keep && renameat(keep_fd, base, dir_fd, name) != 0)
            r = undo_failed(why, size, folder, tmp, it, "keep", strerror(errno));
    } else if (in_place && same_node(&fst, it)) { /* the new file in place: the previous one back, or none */
        const int from = held_new ? new_fd : held_keep ? keep_fd : -1;
        if (from >= 0 ? renameat(from, base, dir_fd, name) != 0 : unlinkat(dir_fd, name, 0) != 0)
            r = undo_failed(why, size, folder, tmp, it, from < 0 ? NULL : from == new_fd ? "new" : "keep",
                            from < 0 ? "cannot remove the new file" : "cannot put the previous file back");
    } else if (held_new || held_keep) { /* a previous file kept, and the new one not in place */
        const int from = held_keep ? keep_fd : new_fd;
        if (changed || dir_fd < 0)
            r = undo_failed(why, size, folder, tmp, it, from == new_fd ? "new" : "keep",
                            "it changed since the run that was replacing it stopped; the previous file was not put "
                            "back");
        else if (renameat(from, base, dir_fd, name) != 0)
            r = undo_failed(why, size, folder, tmp, it, from == new_fd ? "new" : "keep", strerror(errno));
    }
    if (new_fd >= 0) close(new_fd);
    if (keep_fd >= 0) close(keep_fd);
    if (dir_fd >= 0) close(dir_fd);
    return r;
}

static int journal_has_name(const journal_t *j, const char *name)
{
    for (int i = 0; i < j->n; ++i)
        if (j->items[i].kind == 'n' && !strcmp(j->items[i].rel, name)) return 1;
    return 0;
}

/* Entries of the folder src_fd that are not the commit's (j's names) and are missing from the
 * folder dst_fd go (back) there: a user's folders, and files that could not be hard-linked. */
static int give_back(int src_fd, int dst_fd, const journal_t *j, char *failed, size_t size)
{
    DIR *d = fdopendir(fcntl(src_fd, F_DUPFD_CLOEXEC, 0));
    if (!d) return -1;
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || journal_has_name(j, de->d_name)) continue;
        if (fstatat(dst_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) continue;
        if (renameat(src_fd, de->d_name, dst_fd, de->d_name) != 0) {
            snprintf(failed, size, "%s", de->d_name);
            r = -1;
        }
    }
    closedir(d);
    return r;
}

/* Only the commit's names in folder fd? */
static int holds_only_ours(int fd, const journal_t *j)
{
    DIR *d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!d) return 0;
    int only = 1;
    struct dirent *de;
    while (only && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && !journal_has_name(j, de->d_name)) only = 0;
    closedir(d);
    return only;
}

static int undo_folder(int parent_fd, int tmp_fd, const jitem *it, const journal_t *j, char *why, size_t size,
                       const char *folder, const char *tmp)
{
    struct stat nst, fst;
    const int has_new = fstatat(tmp_fd, "new", &nst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(nst.st_mode);
    const int in_place = fstatat(parent_fd, it->rel, &fst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(fst.st_mode);
    char failed[256] = "files", what[512];
    int r = 0;
    if (has_new && same_node(&nst, it)) { /* not swapped: what was moved into the new folder goes back */
        int src = openat(tmp_fd, "new", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int dst = in_place ? openat(parent_fd, it->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (src >= 0 && dst >= 0 && give_back(src, dst, j, failed, sizeof failed) != 0) {
            snprintf(what, sizeof what, "cannot move your %s back into it: %s", failed, strerror(errno));
            r = undo_failed(why, size, folder, tmp, it, "new/", what);
        }
        if (src >= 0) close(src);
        if (dst >= 0) close(dst);
    } else if (in_place && same_node(&fst, it)) {
        if (has_new) { /* the previous folder kept in the temporary: swapped back, and the user's entries with it */
            if (renameat2(parent_fd, it->rel, tmp_fd, "new", RENAME_EXCHANGE) != 0) {
                snprintf(what, sizeof what, "cannot swap the previous folder back: %s", strerror(errno));
                return undo_failed(why, size, folder, tmp, it, "new/", what);
            }
            int src = openat(tmp_fd, "new", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int dst = openat(parent_fd, it->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (src < 0 || dst < 0 || give_back(src, dst, j, failed, sizeof failed) != 0) {
                snprintf(what, sizeof what, "cannot move your %s back into it: %s", failed, strerror(errno));
                r = undo_failed(why, size, folder, tmp, it, "new/", what);
            }
            if (src >= 0) close(src);
            if (dst >= 0) close(dst);
        } else { /* there was none: the new folder goes, if it holds only what the commit wrote */
            int fd = openat(parent_fd, it->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            const int only = fd >= 0 && holds_only_ours(fd, j);
            if (fd >= 0) close(fd);
            if (!only)
                r = undo_failed(why, size, folder, tmp, it, NULL, "it holds files the run that made it did not write");
            else if (renameat(parent_fd, it->rel, tmp_fd, "new") != 0)
                r = undo_failed(why, size, folder, tmp, it, NULL, strerror(errno));
        }
    } else if (has_new) { /* a previous folder kept, and the new one not in place */
        r = undo_failed(why, size, folder, tmp, it, "new/",
                        "it changed since the run that was replacing it stopped; it was not put back");
    }
    return r;
}

/* Every step of journal j undone (see above), the last first.  0, or -1 with why[] set. */
static int journal_undo(int parent_fd, int tmp_fd, const journal_t *j, char *why, size_t size, const char *folder,
                        const char *tmp)
{
    int r = 0;
    for (int i = j->n - 1; i >= 0; --i) {
        const jitem *it = &j->items[i];
        int one = 0;
        if (it->kind == 'f') one = undo_file(parent_fd, tmp_fd, it, why, size, folder, tmp);
        else if (it->kind == 'd') one = undo_folder(parent_fd, tmp_fd, it, j, why, size, folder, tmp);
        else if (it->kind == 'm') unlinkat(parent_fd, it->rel, AT_REMOVEDIR); /* where empty */
        if (one) {
            r = -1;
            why = NULL; /* the first failure is the one reported */
        }
    }
    return r;
}

/* ---- commit and abort ------------------------------------------------------------------ */

static int check_file(tk_outset *s, const entry_t *e, const file_t *f)
{
    char a[1024];
    struct stat st;
    if (lstat(f->temp, &st) != 0 || !S_ISREG(st.st_mode))
        return fail(s, 1, "%s: cannot write: the writer made no such file%s; report this as a bug (nothing was "
                          "changed)", label(e->flag, f->final, a, sizeof a),
                    e->nfiles > 1 ? " (a data file of a two-file format)" : "");
    if ((unsigned long long)st.st_size < f->min_size)
        return fail(s, 1, "%s: cannot write: only %lld of %llu bytes were written (the disk may be full); free "
                          "disk space, or write elsewhere, and run again", label(e->flag, f->final, a, sizeof a),
                    (long long)st.st_size, f->min_size);
    int fd = open(f->temp, O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : tk_fsync_close(fd);
    if (err)
        return fail(s, 1, "%s: cannot write: %s; %s", label(e->flag, f->final, a, sizeof a), strerror(err),
                    tk_write_advice(err));
    return 0;
}

static void sync_folder(const char *path)
{
    char *folder = folder_of(path, NULL);
    if (!folder) return;
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd); /* best effort: the renames are done; some file systems refuse this */
        close(fd);
    }
    free(folder);
}

static int no_exchange(int err) { return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

/* One file of an output into place: exchanged with its previous file, which stays in the
 * temporary (new/NAME), or moved in where there was none.  A folder in the way is refused
 * (never swapped out), a link is replaced, not followed.  0, or -1 with errno. */
static int apply_file(const entry_t *e, const file_t *f)
{
    struct stat st;
    for (int tries = 0; tries < 2; ++tries) {
        if (lstat(f->final, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                errno = EISDIR;
                return -1;
            }
            if (renameat2(AT_FDCWD, f->temp, AT_FDCWD, f->final, RENAME_EXCHANGE) == 0) {
                if (lstat(f->temp, &st) == 0 && S_ISDIR(st.st_mode)) { /* a folder came in the way meanwhile */
                    renameat2(AT_FDCWD, f->temp, AT_FDCWD, f->final, RENAME_EXCHANGE);
                    errno = EISDIR;
                    return -1;
                }
                return 0;
            }
            if (!no_exchange(errno)) return -1;
            /* A file system without the exchange: the previous file is moved aside (keep/NAME)
             * first; for a moment the name holds nothing. */
            char *keepdir = cat3(e->tmpdir, "/", "keep");
            char *name = last_name(f->temp);
            char *keep = keepdir && name ? cat3(keepdir, "/", name) : NULL;
            int r = -1;
            if (!keep) errno = ENOMEM;
            else if ((mkdir(keepdir, 0700) == 0 || errno == EEXIST) && rename(f->final, keep) == 0)
                r = rename(f->temp, f->final);
            free(keepdir), free(name), free(keep);
            return r;
        }
        if (errno != ENOENT) return -1;
        if (renameat2(AT_FDCWD, f->temp, AT_FDCWD, f->final, RENAME_NOREPLACE) == 0) return 0;
        if (no_exchange(errno)) return rename(f->temp, f->final);
        if (errno != EEXIST) return -1;
        /* a file appeared meanwhile: it is kept like any previous file */
    }
    errno = EEXIST;
    return -1;
}

/* A folder output replaced whole, so that a reader (or a run killed now) sees the old folder
 * or the new one, never a mix: files in the folder that are not ours (a user's notes) are
 * hard-linked into the new folder first (folders of theirs, and files that cannot be linked,
 * moved), then one atomic exchange swaps the new folder in; the old one stays in the
 * temporary (new/) until the whole call is in place.  Nothing is followed through a link.
 * 0, or -1 with errno and what[] naming the step. */
static int apply_folder(const entry_t *e, char *what, size_t size)
{
    char a[1024];
    struct stat st;
    /* mkdir made the folder 0700: give it the old folder's mode, or the usual one */
    mode_t mask = umask(0);
    umask(mask);
    chmod(e->newdir, stat(e->swap_folder, &st) == 0 ? (st.st_mode & 07777) : (0777 & ~mask));
    if (lstat(e->swap_folder, &st) != 0) {
        int ok = errno == ENOENT && (renameat2(AT_FDCWD, e->newdir, AT_FDCWD, e->swap_folder, RENAME_NOREPLACE) == 0 ||
                                     (no_exchange(errno) && rename(e->newdir, e->swap_folder) == 0));
        if (!ok) snprintf(what, size, "%s: cannot move the new folder into place: %s", label(e->flag, e->shown_folder, a, sizeof a), strerror(errno));
        return ok ? 0 : -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(what, size, "%s: exists and is not a folder", label(e->flag, e->shown_folder, a, sizeof a));
        errno = ENOTDIR;
        return -1;
    }
    int old_fd = open(e->swap_folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int new_fd = open(e->newdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = old_fd >= 0 ? fdopendir(fcntl(old_fd, F_DUPFD_CLOEXEC, 0)) : NULL;
    int r = 0;
    if (!d || new_fd < 0) {
        snprintf(what, size, "%s: cannot open the folder: %s", label(e->flag, e->shown_folder, a, sizeof a), strerror(errno));
        r = -1;
    }
    struct dirent *de;
    while (!r && (de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || (e->ours && e->ours(n))) continue;
        int mine = 0;
        for (int k = 0; k < e->nfiles && !mine; ++k) mine = !strcmp(base_of(e->files[k].temp), n);
        if (mine) continue;
        struct stat fst;
        if (fstatat(old_fd, n, &fst, AT_SYMLINK_NOFOLLOW) != 0) continue;
        int ok = S_ISDIR(fst.st_mode) ? renameat(old_fd, n, new_fd, n) == 0 : linkat(old_fd, n, new_fd, n, 0) == 0;
        if (!ok && !S_ISDIR(fst.st_mode) && (errno == EPERM || errno == EXDEV || errno == EMLINK))
            ok = renameat(old_fd, n, new_fd, n) == 0; /* no hard links here: moved instead */
        if (!ok) {
            snprintf(what, size, "%s/%s: cannot keep this file of yours in the new folder: %s", e->shown_folder, n,
                     strerror(errno));
            r = -1;
        }
    }
    int err = errno;
    if (d) closedir(d);
    if (!r && renameat2(AT_FDCWD, e->newdir, AT_FDCWD, e->swap_folder, RENAME_EXCHANGE) != 0) {
        err = errno;
        snprintf(what, size, "%s: cannot swap in the new folder: %s", label(e->flag, e->shown_folder, a, sizeof a),
                 strerror(err));
        r = -1;
    }
    if (old_fd >= 0) close(old_fd);
    if (new_fd >= 0) close(new_fd);
    errno = err;
    return r;
}

/* What to do after a failed rename, by its errno. */
static const char *rename_advice(int err)
{
    switch (err) {
    case EISDIR:
    case ENOTDIR:
    case ENOTEMPTY:
    case EEXIST: return "remove what is in the way, or choose another output path, and run again";
    case EACCES:
    case EPERM:
    case EROFS: return "make the folder writable, or choose another output folder, and run again";
    case ENOSPC:
    case EDQUOT: return "free disk space, or write elsewhere, and run again";
    case EBUSY: return "close the program that uses it, and run again";
    default: return "check the folder and the disk, and run again";
    }
}

/* Entry e's commit undone from its journal; 0, or -1 with why[] (then its temporary, which
 * holds a previous file, is kept for the next run or the user). */
static int undo_entry(entry_t *e, char *why, size_t size)
{
    const char *tmp_base;
    char *folder = folder_of(e->tmpdir, &tmp_base);
    int parent_fd = folder ? open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int tmp_fd = parent_fd >= 0 ? openat(parent_fd, tmp_base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    journal_t j;
    int r = -1;
    if (tmp_fd < 0) snprintf(why, size, "%s: cannot open: %s", e->tmpdir, strerror(errno));
    else if (journal_read(tmp_fd, &j) != 0) r = 0; /* no journal: nothing of it was put in place */
    else {
        r = journal_undo(parent_fd, tmp_fd, &j, why, size, folder, tmp_base);
        journal_free(&j);
    }
    if (tmp_fd >= 0) close(tmp_fd);
    if (parent_fd >= 0) close(parent_fd);
    free(folder);
    return r;
}

int tk_outset_commit(tk_outset *s)
{
    if (s->committed) return 0;
    for (int i = 0; i < s->nentries; ++i)
        for (int k = 0; k < s->entries[i].nfiles; ++k)
            if (!s->entries[i].removal && check_file(s, &s->entries[i], &s->entries[i].files[k])) {
                tk_outset_abort(s);
                return 1;
            }
    /* From the journals to the last rename (or the last undo) the cleanup signals wait: a
     * SIGINT in the middle ends the process after the call is in place, or after it is undone. */
    sigset_t old;
    block(&old);
    begin_commit();
    char what[2048] = "", a[1024];
    int err = 0, failed = -1;
    for (int i = 0; i < s->nentries && failed < 0; ++i)
        if (!s->entries[i].removal && (err = journal_write(&s->entries[i])) != 0) {
            snprintf(what, sizeof what, "%s: cannot prepare the commit in %s: %s",
                     label(s->entries[i].flag, s->entries[i].files[0].final, a, sizeof a), s->entries[i].tmpdir,
                     strerror(err));
            failed = i;
        }
    for (int i = 0; i < s->nentries && failed < 0; ++i) {
        entry_t *e = &s->entries[i];
        struct stat st;
        if (e->removal) continue;
        if (e->create_folder && mkdir(e->create_folder, 0777) != 0 &&
            !(errno == EEXIST && lstat(e->create_folder, &st) == 0 && S_ISDIR(st.st_mode))) {
            err = errno == EEXIST ? ENOTDIR : errno;
            snprintf(what, sizeof what, "%s: cannot create the folder: %s", label(e->flag, e->create_folder, a, sizeof a),
                     strerror(err));
            failed = i;
            break;
        }
        if (e->swap_folder) {
            if (apply_folder(e, what, sizeof what) != 0) {
                err = errno;
                failed = i;
            }
        } else {
            for (int j = 1; j <= e->nfiles && failed < 0; ++j) {
                const int k = j % e->nfiles; /* companions (a header's data file) first, the output itself last */
                if (apply_file(e, &e->files[k]) != 0) {
                    err = errno;
                    snprintf(what, sizeof what, "%s: cannot move the new file into place: %s",
                             label(e->flag, e->files[k].final, a, sizeof a),
                             err == EISDIR ? "a folder of that name is in the way" : strerror(err));
                    failed = i;
                }
            }
        }
    }
    if (failed >= 0) { /* every output back as it was, the last first */
        char why[2048] = "";
        int lost = 0;
        for (int i = failed; i >= 0; --i) {
            entry_t *e = &s->entries[i];
            if (e->removal || !e->tmpdir) continue;
            char one[2048];
            if (undo_entry(e, one, sizeof one) != 0) {
                if (!lost) snprintf(why, sizeof why, "%s", one);
                lost = 1;
                free(e->tmpdir); /* kept, with its journal, for the next run or the user */
                e->tmpdir = NULL;
            }
        }
        if (lost)
            fail(s, 1, "%s; putting back the earlier outputs failed too: %s", what, why);
        else
            fail(s, 1, "%s; no output of this call was changed (the files already there are as they were); %s", what,
                 rename_advice(err));
        tk_outset_abort(s);
        end_commit();
        unblock(&old);
        return 1;
    }
    /* Every output in place: the call is committed, and the previous files are garbage. */
    for (int i = 0; i < s->nentries; ++i)
        if (s->entries[i].tmpdir) {
            char *j = cat3(s->entries[i].tmpdir, "/", JOURNAL);
            if (j) unlink(j);
            free(j);
        }
    for (int i = 0; i < s->nentries; ++i)
        if (s->entries[i].removal && unlink(s->entries[i].files[0].final) != 0 && errno != ENOENT && s->prog)
            fprintf(stderr, "%s: warning: %s: cannot remove the old file: %s; remove it by hand\n", s->prog,
                    s->entries[i].files[0].final, strerror(errno));
    for (int i = 0; i < s->nentries; ++i)
        for (int k = 0; k < s->entries[i].nfiles; ++k) sync_folder(s->entries[i].files[k].final);
    for (int i = 0; i < s->nentries; ++i)
        if (s->entries[i].tmpdir) remove_tmpdir(AT_FDCWD, s->entries[i].tmpdir);
    s->committed = 1;
    end_commit();
    unblock(&old);
    return 0;
}

void tk_outset_abort(tk_outset *s)
{
    if (!s || s->committed) return;
    sigset_t old;
    block(&old);
    for (int i = 0; i < s->nentries; ++i) {
        entry_t *e = &s->entries[i];
        if (!e->tmpdir) continue;
        remove_tmpdir(AT_FDCWD, e->tmpdir);
        free(e->tmpdir);
        e->tmpdir = NULL;
    }
    s->committed = 1; /* nothing left to remove or commit */
    unblock(&old);
}

/* The stale temporaries of folder: one with a journal was left in the middle of a commit (a
 * kill -9, a crash, power loss), whose outputs are first put back as they were (see the
 * journal above); one the undo cannot finish stays, with a warning where the set has a
 * program name.  Returns how many were removed. */
static int remove_stale(const tk_outset *s, const char *folder)
{
    int dfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return 0;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    int removed = 0;
    const size_t plen = strlen(TMP_PREFIX);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, TMP_PREFIX, plen)) continue;
        char *end = NULL;
        long pid = strtol(de->d_name + plen, &end, 10);
        if (end == de->d_name + plen || *end != '-' || strlen(end) != 7 || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* running (or another user's): not ours to judge */
        int tfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0) continue;
        int keep = 0;
        char why[2048] = "";
        struct stat jst;
        if (fstatat(tfd, JOURNAL, &jst, AT_SYMLINK_NOFOLLOW) == 0) {
            journal_t j;
            if (journal_read(tfd, &j) != 0) {
                snprintf(why, sizeof why, "%s/%s/%s: unreadable; the run that wrote it stopped while putting its "
                                          "outputs in place: look inside, then remove the folder by hand",
                         folder, de->d_name, JOURNAL);
                keep = 1;
            } else {
                keep = journal_undo(dfd, tfd, &j, why, sizeof why, folder, de->d_name) != 0;
                journal_free(&j);
            }
        }
        close(tfd);
        if (keep) {
            if (s && s->prog)
                fprintf(stderr, "%s: warning: a run killed while putting its outputs in place: %s\n", s->prog, why);
            continue;
        }
        remove_tmpdir(dfd, de->d_name);
        ++removed;
    }
    closedir(d);
    return removed;
}

int tk_outset_remove_stale(const char *folder) { return remove_stale(NULL, folder); }

int tk_outset_probe(const char *path)
{
    if (!path || !*path) return ENOENT;
    install_once(); /* a signal after the probe is made reaches on_signal, which removes it */
    const char *base;
    char *folder = folder_of(path, &base);
    char *name = last_name(path);
    char pid[48];
    snprintf(pid, sizeof pid, "%s%ld-probe-", TMP_PREFIX, (long)getpid());
    char *dir = folder ? cat3(folder, strcmp(folder, "/") ? "/" : "", pid) : NULL;
    char *probe = dir && name ? cat3(dir, "", name) : NULL;
    free(folder);
    free(name);
    free(dir);
    if (!probe) return ENOMEM;
    /* This thread holds the cleanup signals until the probe is gone; a handler on another
     * thread either sees `making` and waits for the probe's removal, or was seen here first
     * (handling), and then no probe is made: the same handshake as make_tmpdir's. */
    sigset_t old;
    block(&old);
    begin_making();
    STORE(pending_probe, probe);
    int err = 0;
    const int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) err = errno;
    else {
        close(fd);
        unlink(probe);
    }
    STORE(pending_probe, NULL);
    end_making();
    unblock(&old); /* a signal that came meanwhile is delivered now, with nothing to leave behind */
    free(probe);
    return err;
}
