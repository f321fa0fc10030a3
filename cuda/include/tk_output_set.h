/** The outputs of one tool call, written so that a user can trust them (not installed:
 * the tools' and the model writers' own module).
 *
 *   - Every output is checked before any work against every input and every other output
 *     of the call, by path (folders resolved, so "./x", "x" and a symlinked folder agree)
 *     and by device and inode (so hard links and symlinks to an input are caught).
 *   - Each output is written into a private temporary folder beside its destination
 *     (".tk-tmp-PID-XXXXXX/new/"), under its final name (so a detached header such as .nhdr
 *     or .mhd names its data file by the final name), together with its companion files.
 *   - Nothing is in place until tk_outset_commit, and the commit is all or nothing: every
 *     file is checked (present, at least its expected size, fsync succeeds); then each
 *     temporary gets a journal (what goes where, and the new files' inodes), and the files
 *     are put in place one by one, each exchanged with its previous file (renameat2
 *     RENAME_EXCHANGE; where the file system has none, the previous file is moved aside
 *     first), so that the previous file stays in the temporary.  If any step fails, every
 *     output already in place is put back (its previous file returned, a new one removed, a
 *     replaced folder swapped back) and the message names the file and what to do; only
 *     when all are in place are the journals and the previous files removed.  A folder in
 *     the way of a file is never swapped out; links are replaced, never followed.
 *   - SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE and SIGXFSZ remove the temporaries (async-signal-safe
 *     unlink/rmdir of paths fixed in advance) and then end the process by the signal; during
 *     the commit they wait until it is done or undone.  A process-directed signal may be
 *     handled on any thread that does not block it (a BLAS or OpenMP thread): a temporary
 *     folder is named to the handler before it is made, and a handler that finds a commit in
 *     progress on another thread defers the signal to that commit's end.  (Not covered: a set
 *     freed on one thread while a handler runs on another.)
 *   - A temporary folder whose PID no longer runs was left by a killed run (kill -9, a crash,
 *     power loss) and is removed by the next run that writes to the same folder; one that
 *     holds a journal was killed in the middle of its commit, and its outputs are put back
 *     first from the journal.  An output that changed since (it holds neither the killed
 *     run's new file nor its previous one) is left alone, and so is the temporary with the
 *     previous file in it, with a warning saying where it is.  A kill -9 in the instant
 *     between the removal of one output's journal and the next one's (every output already in
 *     place) can leave those outputs new and the others put back.
 * The handlers are installed with the first set, only for signals whose disposition is
 * still the default (an ignored SIGHUP under nohup, or a host program's own handler, is left
 * alone); a forked child never removes its parent's temporaries.  Sets may be made on
 * several threads; one set belongs to one thread.
 * Messages: "PROG: error: FLAG PATH: what is wrong; what to do". \file
 * \ingroup tk_group_common */
#ifndef TK_OUTPUT_SET_H
#define TK_OUTPUT_SET_H

#include "tk_export.h"

#include <stddef.h>

TK_API_BEGIN

typedef struct tk_outset tk_outset;

/** An empty set; messages start with prog.  NULL when out of memory. */
tk_outset *tk_outset_new(const char *prog);
/** Removes whatever was not committed, then frees the set. */
void tk_outset_free(tk_outset *s);

/** An input file (flag such as "--input", or NULL for a positional argument).  Returns 0,
 * or the exit code 1 after a message when out of memory. */
int tk_outset_input(tk_outset *s, const char *flag, const char *path);
/** An input folder (a model directory): no output may go inside it. */
int tk_outset_input_dir(tk_outset *s, const char *flag, const char *path);

/** An output file path written by this call, with its companions (files the same writer
 * puts beside it, such as a detached header's data file; final paths, NULL-terminated,
 * may be NULL).  Checks the path (not empty, not a directory, its folder exists and takes
 * a new file), that it is no input and no other output, removes stale temporaries of
 * killed runs from its folder and creates its temporary folder.  Returns the output's
 * index (>= 0), or minus the exit code (-2 for an output that is an input or another
 * output, -1 otherwise) after a message naming flag and path. */
int tk_outset_add(tk_outset *s, const char *flag, const char *path, const char *const *companions);
/** The same for a file inside a folder output (folder/name) whose folder may not exist
 * yet: the folder is created on commit (its parent must exist now).  A folder that exists
 * must be a real folder, not a symbolic link (the link's target is used instead). */
int tk_outset_add_in_folder(tk_outset *s, const char *flag, const char *folder, const char *name);
/** A folder output replaced whole (a model directory): the files names (NULL-terminated, at
 * most 20) are written into a temporary folder beside it and, on commit, that folder is
 * swapped in by one atomic exchange, so that a reader or a killed run sees the old folder
 * or the new one, never a mix.  Files in the old folder that are neither in names nor
 * ours(name) (a user's notes) are kept: hard-linked into the new folder before the swap (the
 * old folder waits in the temporary until every output of the call is in place).
 * A symbolic link to a folder stays, and the folder it names is replaced.  tk_outset_temp
 * (idx, k) is where names[k] goes. */
int tk_outset_add_folder(tk_outset *s, const char *flag, const char *folder, const char *const *names,
                         int (*ours)(const char *name));
/** A file to remove from place on commit (after the renames): an old output of ours the new
 * set no longer has (a model's A4.npy when the new model has order 3).  Path checks as
 * above; a missing file is no error. */
int tk_outset_remove_on_commit(tk_outset *s, const char *path);

/** Where to write output idx (companion c: 0 the output itself, 1.. its companions): the
 * temporary, under the final name.  NULL for a bad index. */
const char *tk_outset_temp(const tk_outset *s, int idx, int companion);
/** The output's final path, for messages. */
const char *tk_outset_path(const tk_outset *s, int idx);
/** The least size (bytes) the file must have on commit; a writer that does not report a
 * failed write (a full disk) is caught by it.  companion as in tk_outset_temp. */
void tk_outset_expect_size(tk_outset *s, int idx, int companion, unsigned long long bytes);
/** open(2) the temporary for writing (created; it must not exist): the fd, or -1 after a
 * message naming the output. */
int tk_outset_open(tk_outset *s, int idx, int companion);

/** Checked writes for fds: every byte written (EINTR and short writes retried), fsync and
 * close checked.  0 on success, else the errno of the failure (EIO where none was set). */
int tk_write_all(int fd, const void *data, size_t bytes);
int tk_fsync_close(int fd);
/** What to do after a failed write with errno err, for the end of a message: "free disk space,
 * or write elsewhere, and run again" for a full disk (ENOSPC, EFBIG, EDQUOT), else "check the
 * disk, or write elsewhere, and run again". */
const char *tk_write_advice(int err);

/** The commit: every file of every output present, as large as expected and synced; then
 * all put in place (folders created, outputs in the order added, a header's data file
 * before the header), the removals done and the folders synced.  Returns 0, or the exit code
 * 1 after a message naming the file and what to do; then every output is as it was before
 * the call (or, where putting one back failed too, the message says where its previous
 * version is kept, and the next run that writes there puts it back). */
int tk_outset_commit(tk_outset *s);
/** Remove every temporary (an error path); the set stays usable only for free. */
void tk_outset_abort(tk_outset *s);

/** A message in the set's way (printed as "PROG: error: ..." where the set has a program
 * name; always tk_last_error()); returns code. */
int tk_outset_fail(const tk_outset *s, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** Remove the temporaries of runs that no longer run from folder (".tk-tmp-PID-*" folders
 * whose PID is gone; their files, not following links), first putting back the outputs of a
 * commit one of them was killed in the middle of.  Returns how many were removed. */
int tk_outset_remove_stale(const char *folder);

/** Whether a new file can be made beside path now (a check before any work, before a set
 * exists: /proc and some mounts pass access(2) and refuse the file): makes and removes an
 * empty ".tk-tmp-PID-probe-NAME" there.  A cleanup signal meanwhile waits until the probe is
 * gone, and a handler on another thread removes it, so no signal leaves the probe behind.
 * Returns 0, or the errno of the failure. */
int tk_outset_probe(const char *path);

TK_API_END
#endif
