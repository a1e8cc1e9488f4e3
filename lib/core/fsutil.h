/* Small file-system helpers. Every failure records a message naming the path (ax_errorf). */
#pragma once
#include <stddef.h>
#include <stdio.h>
#include "lib/core/status.h"

/* Creates path and its missing parents (like mkdir -p). */
ax_status ax_mkdir_p(const char *path);
/* Reads a whole regular file into a malloc'd buffer with a NUL appended (not counted in *len);
 * the text may hold NUL bytes of its own: use *len, not strlen. */
ax_status ax_read_file(const char *path, char **data, size_t *len);
/* Creates/truncates path, writes len bytes and fsyncs it before returning. */
ax_status ax_write_file(const char *path, const void *data, size_t len);
/* Writes all of buf to fd (retrying short writes); `path` names the file in errors. */
ax_status ax_write_all(int fd, const void *buf, size_t len, const char *path);
/* fsyncs a directory so renames and new entries in it are durable. */
ax_status ax_fsync_dir(const char *path);
/* Removes a file or a directory tree; a missing path is not an error. */
ax_status ax_rm_rf(const char *path);
/* rename(from, to), then fsync the directory holding `to`. */
ax_status ax_rename_durable(const char *from, const char *to);
/* 1 if path exists (any type), else 0. */
int ax_path_exists(const char *path);

/* ---- private and temporary files ----
 * Files that hold training text or secrets are created mode 0600 (owner only), whatever the
 * umask; an existing file is narrowed to 0600 too, since O_CREAT keeps an old file's mode. */
/* Opens path for writing (created or truncated) with mode 0600; *fd is the descriptor. */
ax_status ax_open_private(const char *path, int *fd);
/* The same, open for reading too (scratch files read back, like a dataset's token spill). */
ax_status ax_open_private_rw(const char *path, int *fd);
/* ax_write_file with mode 0600 (see ax_open_private). */
ax_status ax_write_file_private(const char *path, const void *data, size_t len);
/* fopen(path, "w") with mode 0600; NULL on failure, with a message naming the path. */
FILE *ax_fopen_private(const char *path);
/* Creates a new temporary file beside path, "DIR/.NAME.tmp-PID-N" (O_EXCL, so concurrent
 * writers never share one), mode 0600 when private, else 0666 less the umask. The name goes
 * to tmp[n], the descriptor to *fd. Rename it over path to publish it. */
ax_status ax_create_temp(const char *path, int private_mode, char *tmp, size_t n, int *fd);
/* Publishes `text` and a newline at path atomically: a temporary beside it (ax_create_temp),
 * fsynced, renamed over path (ax_rename_durable); on failure the temporary is removed and path
 * is as it was. */
ax_status ax_write_text_atomic(const char *path, const char *text, int private_mode);
/* The folder part of path into dir[n]: "." when path has no '/', "/" for "/x". */
void ax_dirname(const char *path, char *dir, size_t n);

/* ---- reading inputs: regular files only ----
 * A FIFO, device, socket or directory given as an input would block open/read forever or read
 * garbage, so every reader opens its inputs through these. The open uses O_NONBLOCK (a FIFO
 * cannot block it), checks fstat, then clears O_NONBLOCK. Errors name the path and its kind;
 * `hint` (may be NULL) is what to do when the file cannot be opened ("check the path"). */
ax_status ax_open_regular(const char *path, const char *hint, int *fd);
/* The same as a stdio stream opened "rb". */
ax_status ax_fopen_regular(const char *path, const char *hint, FILE **f);
/* stat()-based check for a path opened later by other code: exists and is a regular file. */
ax_status ax_check_regular(const char *path, const char *hint);
/* ax_read_file, but a file bigger than max_bytes is an error naming it (nothing allocated):
 * readers of small files (configs, manifests) bound what a hostile file can make them hold. */
ax_status ax_read_file_max(const char *path, size_t max_bytes, char **data, size_t *len);
