/* Small file-system helpers. Every failure records a message naming the path (ax_errorf). */
#pragma once
#include <stddef.h>
#include "lib/status.h"

/* Creates path and its missing parents (like mkdir -p). */
ax_status ax_mkdir_p(const char *path);
/* Reads a whole file into a malloc'd buffer with a NUL appended (not counted in *len). */
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
