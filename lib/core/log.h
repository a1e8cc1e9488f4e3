/* Rank-prefixed logging. Level from AXMEM_LOG=error|warn|info|debug (default info). */
#pragma once

typedef enum { AX_LOG_ERROR = 0, AX_LOG_WARN = 1, AX_LOG_INFO = 2, AX_LOG_DEBUG = 3 } ax_log_level;

void ax_log_init(void);         /* reads AXMEM_LOG; safe to call again */
void ax_log_set_rank(int rank); /* lines are prefixed "[rN]" once set; -1 = no prefix */
void ax_log_set_level(ax_log_level level);
ax_log_level ax_log_get_level(void);
void ax_log(ax_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define AX_INFO(...) ax_log(AX_LOG_INFO, __VA_ARGS__)
#define AX_WARN(...) ax_log(AX_LOG_WARN, __VA_ARGS__)
#define AX_DEBUG(...) ax_log(AX_LOG_DEBUG, __VA_ARGS__)
