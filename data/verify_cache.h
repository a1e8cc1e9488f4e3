/* A cache of files whose payload has been verified, so that a big dataset is hashed once per
 * version of the file instead of once per command.
 *
 * An entry is an empty-ish file named by a 64-bit key under the cache directory
 * ($AXMEM_CACHE_DIR, else $XDG_CACHE_HOME/axmem/verified, else ~/.cache/axmem/verified;
 * AXMEM_CACHE_DIR=off turns the cache off: every open hashes); its existence is the record. The key
 * hashes the file's identity and version as the kernel reports them (device, inode, size, mtime and
 * ctime to the nanosecond) together with the caller's digest of what it verified against (e.g. the
 * header holding the stored checksum). Any write, truncation, rename, chmod, copy or replacement
 * changes ctime or the inode, so the next open hashes again; ctime cannot be set back from user
 * space (unlike mtime with touch). File times tick coarsely (a jiffy, 1-10 ms), so a write right
 * after another can keep them: a file changed within the last second is not recorded (git's "racily
 * clean" rule), its next open hashes again. What it does not catch: media corruption under
 * unchanged metadata; `axmem data info` always rehashes for that. Failures to read or write the
 * cache are never errors: the caller just hashes. Only files of at least 64 MiB (a few tens of
 * milliseconds to hash even from disk) are recorded: small files are simply hashed, so toy datasets
 * leave nothing behind. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* The size from which files are recorded (64 MiB; tests lower it to record small files). */
void ax_verify_cache_set_min_bytes(uint64_t n);
/* The key for (the file described by sb, digest); 0 when the cache is off or the file is
 * smaller than the size above. */
uint64_t ax_verify_cache_key(const struct stat *sb, uint64_t digest);
/* 1 if key was recorded as verified. */
int ax_verify_cache_has(uint64_t key);
/* Records key (best effort; `path` only goes into the entry for people reading the cache). */
void ax_verify_cache_put(uint64_t key, const char *path);
/* 1 when sb's file last changed long enough ago for its times to identify this version. */
int ax_verify_cache_settled(const struct stat *sb);
