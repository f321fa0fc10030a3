/* The outputs of one call: aliasing checks, temporaries, checked writes, one commit, and
 * cleanup on signals, on exit and after killed runs (tk_output_set.h says why each). */
#define _GNU_SOURCE
#include "tk_output_set.h"

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
#include <unistd.h>

#include "tk_status.h"

#define TMP_PREFIX ".tk-tmp-"
#define TK_OUTSET_MAX_FILES 20

typedef struct {
    char *final;      /* the path as the user gave it (or folder/name) */
    char *resolved;   /* folder resolved by realpath, then the name: for comparisons */
    char *temp;       /* tmpdir/name; NULL for a removal */
    unsigned long long min_size;
    int have_stat; /* the final path exists now: its identity, for outputs that are one file */
    dev_t dev;
    ino_t ino;
} file_t;

typedef struct {
    char *flag;
    char *tmpdir;        /* NULL for a removal */
    char *create_folder; /* a folder output that does not exist yet: made on commit */
    int removal;
    char *swap_folder;              /* a folder output replaced whole: its real path */
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
    entry_t *entries;
    int nentries, cap;
    input_t *inputs;
    int ninputs, icap;
    int committed;
};

/* ---- the registry the signal handler and atexit read ---------------------------------- */

#define MAX_SETS 32
static tk_outset *volatile active[MAX_SETS];
static volatile sig_atomic_t handling;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER; /* sets made on several threads at once */
/* Those that end a program by default and come from outside (or, SIGPIPE and SIGXFSZ, from a
 * closed pipe or a file-size limit): each removes the temporaries first. */
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};

/* The handler only reads entries fully built under blocked signals (see block()), and only
 * calls unlink, rmdir, signal and raise, which are async-signal-safe. */
static void remove_temporaries_unsafe(tk_outset *s)
{
    for (int i = 0; i < s->nentries; ++i) {
        entry_t *e = &s->entries[i];
        if (!e->tmpdir) continue;
        for (int f = 0; f < e->nfiles; ++f)
            if (e->files[f].temp) unlink(e->files[f].temp);
        rmdir(e->tmpdir);
    }
}

static void on_signal(int sig)
{
    if (!handling) {
        handling = 1;
        const pid_t me = getpid();
        for (int k = 0; k < MAX_SETS; ++k)
            if (active[k] && !active[k]->committed && active[k]->owner == me) remove_temporaries_unsafe(active[k]);
    }
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns: the process ends by the signal, as before */
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

static const char *space_hint(int err)
{
    return err == ENOSPC || err == EFBIG || err == EDQUOT ? " (free space, or write elsewhere, and run again)" : "";
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
    for (int f = 0; f < e->nfiles; ++f) {
        free(e->files[f].final);
        free(e->files[f].resolved);
        free(e->files[f].temp);
    }
    free(e->flag);
    free(e->tmpdir);
    free(e->create_folder);
    free(e->swap_folder);
    memset(e, 0, sizeof *e);
}

void tk_outset_free(tk_outset *s)
{
    if (!s) return;
    tk_outset_abort(s);
    forget(s);
    for (int i = 0; i < s->nentries; ++i) drop_entry(&s->entries[i]);
    for (int i = 0; i < s->ninputs; ++i) {
        free(s->inputs[i].flag);
        free(s->inputs[i].path);
        free(s->inputs[i].resolved);
    }
    free(s->entries);
    free(s->inputs);
    free(s->prog);
    free(s);
}

static int add_input(tk_outset *s, const char *flag, const char *path, int is_dir)
{
    if (!path || !*path) return 0;
    if (s->ninputs == s->icap) {
        int cap = s->icap ? 2 * s->icap : 8;
        input_t *grown = realloc(s->inputs, (size_t)cap * sizeof *grown);
        if (!grown) return fail(s, 1, "out of memory");
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
        return fail(s, 1, "out of memory");
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
            if (!in->resolved) return fail(s, 1, "out of memory");
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
    if (s->nentries == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        sigset_t old;
        block(&old);
        entry_t *grown = realloc(s->entries, (size_t)cap * sizeof *grown);
        if (grown) {
            s->entries = grown;
            s->cap = cap;
        }
        unblock(&old);
        if (!grown) return NULL;
    }
    entry_t *e = &s->entries[s->nentries];
    memset(e, 0, sizeof *e);
    return e;
}


/* The folder a file goes to must exist (or, for a new folder output, its parent) and take
 * a new folder now: the temporary folder is made there at once (so /proc, a read-only
 * mount or a full inode table is reported before any work). */
static int make_tmpdir(tk_outset *s, const char *flag, const char *path, const char *where, char **tmpdir)
{
    char a[1024];
    struct stat st;
    if (stat(where, &st) != 0)
        return fail(s, 1, "%s: cannot write: the folder %s %s; create it first", label(flag, path, a, sizeof a),
                    where, errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return fail(s, 1, "%s: cannot write: %s is not a directory", label(flag, path, a, sizeof a), where);
    tk_outset_remove_stale(where);
    char pid[32];
    snprintf(pid, sizeof pid, "%s%ld-XXXXXX", TMP_PREFIX, (long)getpid());
    char *t = cat3(where, strcmp(where, "/") ? "/" : "", pid);
    if (!t) return fail(s, 1, "out of memory");
    if (!mkdtemp(t)) {
        int err = errno;
        free(t);
        return fail(s, 1, "%s: cannot create a file in the folder %s: %s%s", label(flag, path, a, sizeof a), where,
                    strerror(err), err == EACCES || err == EROFS || err == EPERM ? " (choose a writable folder)" : "");
    }
    *tmpdir = t;
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
        return fail(s, 1, "out of memory");
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
        if (!finals[k] || !*finals[k]) return -fail(s, 2, "%s: an output path is empty", flag ? flag : "output");
        struct stat st;
        if (stat(finals[k], &st) == 0 && S_ISDIR(st.st_mode))
            return -fail(s, 1, "%s: cannot write: it is a directory; give a file name",
                         label(flag, finals[k], a, sizeof a));
    }
    entry_t *e = new_entry(s);
    if (!e) return -fail(s, 1, "out of memory");
    e->removal = removal;
    e->flag = flag ? strdup(flag) : NULL;
    if (flag && !e->flag) return -fail(s, 1, "out of memory");
    int code = 0;
    for (int k = 0; k < nfinals && !code; ++k) code = set_file(s, e, finals[k], NULL);
    for (int k = 0; k < e->nfiles && !code; ++k) code = check_alias(s, flag, &e->files[k]);
    char *tmpdir = NULL;
    /* From the folder's making to the entry's publishing the cleanup signals wait: one that
     * came between would end the process with a folder the handler cannot see yet (the
     * matrix's SIGTERM row caught it, sent the moment the folder appeared). */
    sigset_t old;
    block(&old);
    if (!code && !removal) code = make_tmpdir(s, flag, shown ? shown : finals[0], tmp_where, &tmpdir);
    if (!code && tmpdir)
        for (int k = 0; k < e->nfiles && !code; ++k) {
            char *name = last_name(e->files[k].final);
            e->files[k].temp = name ? cat3(tmpdir, "/", name) : NULL;
            free(name);
            if (!e->files[k].temp) code = fail(s, 1, "out of memory");
        }
    if (!code && create_folder && !(e->create_folder = strdup(create_folder))) code = fail(s, 1, "out of memory");
    if (code) {
        if (tmpdir) rmdir(tmpdir);
        unblock(&old);
        free(tmpdir);
        drop_entry(e);
        return -code;
    }
    e->tmpdir = tmpdir;
    ++s->nentries; /* now the handler sees it, whole */
    unblock(&old);
    return s->nentries - 1;
}

int tk_outset_add(tk_outset *s, const char *flag, const char *path, const char *const *companions)
{
    const char *finals[TK_OUTSET_MAX_FILES] = {path};
    int n = 1;
    for (const char *const *c = companions; c && *c; ++c) {
        if (n == TK_OUTSET_MAX_FILES) return -fail(s, 1, "%s: too many companion files", path);
        finals[n++] = *c;
    }
    if (!path || !*path) return -fail(s, 2, "%s: an output path is empty", flag ? flag : "output");
    char *folder = folder_of(path, NULL);
    if (!folder) return -fail(s, 1, "out of memory");
    int r = add_entry(s, flag, finals, n, folder, NULL, 0, NULL);
    free(folder);
    return r;
}

int tk_outset_add_in_folder(tk_outset *s, const char *flag, const char *folder, const char *name)
{
    char a[1024];
    if (!folder || !*folder) return -fail(s, 2, "%s: an output folder is empty", flag ? flag : "output");
    struct stat st;
    char *final = cat3(folder, "/", name);
    if (!final) return -fail(s, 1, "out of memory");
    int r;
    if (stat(folder, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            r = -fail(s, 1, "%s: exists and is not a directory; give a directory name", label(flag, folder, a, sizeof a));
        else /* an existing folder (a link to one included: the files go to the folder it names) */
            r = add_entry(s, flag, (const char *const *)&final, 1, folder, NULL, 0, folder);
    } else if (errno == ENOENT) {
        char *parent = folder_of(folder, NULL);
        r = parent ? add_entry(s, flag, (const char *const *)&final, 1, parent, folder, 0, folder)
                   : -fail(s, 1, "out of memory");
        free(parent);
    } else {
        r = -fail(s, 1, "%s: cannot write: %s", label(flag, folder, a, sizeof a), strerror(errno));
    }
    free(final);
    return r;
}

int tk_outset_add_folder(tk_outset *s, const char *flag, const char *folder, const char *const *names,
                         int (*ours)(const char *name))
{
    char a[1024];
    if (!folder || !*folder) return -fail(s, 2, "%s: an output folder is empty", flag ? flag : "output");
    char *finals[TK_OUTSET_MAX_FILES];
    int n = 0, r;
    for (const char *const *c = names; c && *c; ++c) {
        if (n == TK_OUTSET_MAX_FILES) {
            for (int k = 0; k < n; ++k) free(finals[k]);
            return -fail(s, 1, "%s: too many files", folder);
        }
        if (!(finals[n++] = cat3(folder, "/", *c))) {
            for (int k = 0; k < n - 1; ++k) free(finals[k]);
            return -fail(s, 1, "out of memory");
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
            r = -fail(s, 1, "out of memory");
        else
            r = add_entry(s, flag, (const char *const *)finals, n, parent, NULL, 0, folder);
    } else if (errno == ENOENT) {
        snprintf(real, sizeof real, "%s", folder);
        parent = folder_of(folder, NULL);
        r = parent ? add_entry(s, flag, (const char *const *)finals, n, parent, NULL, 0, folder)
                   : -fail(s, 1, "out of memory");
    } else {
        r = -fail(s, 1, "%s: cannot write: %s", label(flag, folder, a, sizeof a), strerror(errno));
    }
    free(parent);
    for (int k = 0; k < n; ++k) free(finals[k]);
    if (r >= 0) {
        entry_t *e = &s->entries[r];
        e->ours = ours;
        if (!(e->swap_folder = strdup(real))) return -fail(s, 1, "out of memory");
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
    if (!t) return fail(s, 1, "output %d: no such output", idx), -1;
    int fd = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        fail(s, 1, "%s: cannot create: %s", label(s->entries[idx].flag, s->entries[idx].files[companion].final, a,
                                                 sizeof a), strerror(errno));
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

int tk_fsync_close(int fd)
{
    int err = 0;
    if (fsync(fd) != 0 && errno != EINVAL) err = errno ? errno : EIO; /* EINVAL: a pipe or special file */
    if (close(fd) != 0 && !err && errno != EINTR) err = errno ? errno : EIO;
    return err;
}

/* Every file in a temporary folder of ours (a writer may add files we did not name), not
 * following links, then the folder. */
static void remove_tmpdir(int parent_fd, const char *name)
{
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) unlinkat(fd, de->d_name, 0);
    closedir(d);
    unlinkat(parent_fd, name, AT_REMOVEDIR);
}

/* ---- commit and abort ----------------------------------------------------------------- */

static int check_file(tk_outset *s, const entry_t *e, const file_t *f)
{
    char a[1024];
    struct stat st;
    if (lstat(f->temp, &st) != 0 || !S_ISREG(st.st_mode))
        return fail(s, 1, "%s: cannot write: the writer made no such file%s", label(e->flag, f->final, a, sizeof a),
                    e->nfiles > 1 ? " (a data file of a two-file format)" : "");
    if ((unsigned long long)st.st_size < f->min_size)
        return fail(s, 1, "%s: cannot write: only %lld of %llu bytes were written (the disk may be full); free "
                          "space, or write elsewhere, and run again", label(e->flag, f->final, a, sizeof a),
                    (long long)st.st_size, f->min_size);
    int fd = open(f->temp, O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : tk_fsync_close(fd);
    if (err)
        return fail(s, 1, "%s: cannot write: %s%s", label(e->flag, f->final, a, sizeof a), strerror(err),
                    space_hint(err));
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

/* A folder output replaced whole, so that a reader (or a run killed now) sees the old
 * folder or the new one, never a mix: files in the folder that are not ours (a user's
 * notes) are hard-linked into the new folder first (folders of theirs moved), then one
 * atomic exchange swaps the new folder in, and the old one, left with our old files and
 * second names of the user's, is removed.  Nothing is followed through a link. */
static int swap_in_folder(tk_outset *s, entry_t *e)
{
    char a[1024];
    struct stat st;
    /* mkdtemp made the folder 0700: give it the old folder's mode, or the usual one */
    mode_t mask = umask(0);
    umask(mask);
    chmod(e->tmpdir, stat(e->swap_folder, &st) == 0 ? (st.st_mode & 07777) : (0777 & ~mask));
    if (lstat(e->swap_folder, &st) != 0) {
        if (errno == ENOENT && rename(e->tmpdir, e->swap_folder) == 0) {
            free(e->tmpdir); /* it is the output now */
            e->tmpdir = NULL;
            return 0;
        }
        return fail(s, 1, "%s: cannot move the new folder into place: %s", label(e->flag, e->swap_folder, a, sizeof a),
                    strerror(errno));
    }
    int old_fd = open(e->swap_folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int new_fd = open(e->tmpdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = old_fd >= 0 ? fdopendir(dup(old_fd)) : NULL;
    int code = 0;
    if (!d || new_fd < 0)
        code = fail(s, 1, "%s: cannot open the folder: %s", label(e->flag, e->swap_folder, a, sizeof a), strerror(errno));
    struct dirent *de;
    while (!code && (de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || (e->ours && e->ours(n))) continue;
        int mine = 0;
        for (int k = 0; k < e->nfiles && !mine; ++k) mine = !strcmp(strrchr(e->files[k].temp, '/') + 1, n);
        if (mine) continue;
        struct stat fst;
        if (fstatat(old_fd, n, &fst, AT_SYMLINK_NOFOLLOW) != 0) continue;
        int ok = S_ISDIR(fst.st_mode) ? renameat(old_fd, n, new_fd, n) == 0 : linkat(old_fd, n, new_fd, n, 0) == 0;
        if (!ok && !S_ISDIR(fst.st_mode) && (errno == EPERM || errno == EXDEV || errno == EMLINK))
            ok = renameat(old_fd, n, new_fd, n) == 0; /* no hard links here: moved instead */
        if (!ok)
            code = fail(s, 1, "%s/%s: cannot keep this file of yours in the new folder: %s; nothing was replaced",
                        e->swap_folder, n, strerror(errno));
    }
    if (d) closedir(d);
    if (!code && renameat2(AT_FDCWD, e->tmpdir, AT_FDCWD, e->swap_folder, RENAME_EXCHANGE) != 0)
        code = fail(s, 1, "%s: cannot swap in the new folder: %s", label(e->flag, e->swap_folder, a, sizeof a),
                    strerror(errno));
    if (code && new_fd >= 0) { /* put back what was moved; links need nothing */
        DIR *back = fdopendir(dup(new_fd));
        while (back && (de = readdir(back))) {
            struct stat fst;
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
                fstatat(new_fd, de->d_name, &fst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(fst.st_mode))
                renameat(new_fd, de->d_name, old_fd, de->d_name);
        }
        if (back) closedir(back);
    }
    if (old_fd >= 0) close(old_fd);
    if (new_fd >= 0) close(new_fd);
    /* On success the temporary's path holds the old folder: the abort after commit removes it. */
    return code;
}

int tk_outset_commit(tk_outset *s)
{
    char a[1024];
    if (s->committed) return 0;
    for (int i = 0; i < s->nentries; ++i)
        for (int k = 0; k < s->entries[i].nfiles; ++k)
            if (!s->entries[i].removal && check_file(s, &s->entries[i], &s->entries[i].files[k])) {
                tk_outset_abort(s);
                return 1;
            }
    for (int i = 0; i < s->nentries; ++i) {
        const entry_t *e = &s->entries[i];
        struct stat st;
        if (e->create_folder && mkdir(e->create_folder, 0777) != 0 &&
            !(errno == EEXIST && stat(e->create_folder, &st) == 0 && S_ISDIR(st.st_mode))) {
            fail(s, 1, "%s: cannot create the folder: %s", label(e->flag, e->create_folder, a, sizeof a),
                 strerror(errno));
            tk_outset_abort(s);
            return 1;
        }
    }
    int renamed = 0;
    for (int i = 0; i < s->nentries; ++i) {
        entry_t *e = &s->entries[i];
        if (e->removal) continue;
        if (e->swap_folder) {
            if (swap_in_folder(s, e) != 0) {
                tk_outset_abort(s);
                return 1;
            }
            ++renamed;
            continue;
        }
        for (int j = 1; j <= e->nfiles; ++j) {
            const int k = j % e->nfiles; /* companions (a header's data file) first, the output itself last */
            if (rename(e->files[k].temp, e->files[k].final) != 0) {
                int err = errno;
                fail(s, 1, "%s: cannot move the new file into place: %s%s", label(e->flag, e->files[k].final, a, sizeof a),
                     strerror(err), renamed ? " (the outputs before it in this call are in place)" : "");
                tk_outset_abort(s);
                return 1;
            }
            ++renamed;
        }
    }
    for (int i = 0; i < s->nentries; ++i)
        if (s->entries[i].removal && unlink(s->entries[i].files[0].final) != 0 && errno != ENOENT && s->prog)
            fprintf(stderr, "%s: warning: %s: cannot remove the old file: %s\n", s->prog, s->entries[i].files[0].final,
                    strerror(errno));
    for (int i = 0; i < s->nentries; ++i)
        for (int k = 0; k < s->entries[i].nfiles; ++k) sync_folder(s->entries[i].files[k].final);
    sigset_t old;
    block(&old);
    for (int i = 0; i < s->nentries; ++i)
        if (s->entries[i].swap_folder && s->entries[i].tmpdir) remove_tmpdir(AT_FDCWD, s->entries[i].tmpdir);
        else if (s->entries[i].tmpdir) rmdir(s->entries[i].tmpdir);
    s->committed = 1;
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

int tk_outset_remove_stale(const char *folder)
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
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
        remove_tmpdir(dfd, de->d_name);
        ++removed;
    }
    closedir(d);
    return removed;
}
