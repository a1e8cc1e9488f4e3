/* Every command's entry point, and the folder whose cmd_X.c holds it. argv[0] is the command's
 * (or subcommand's) name. Return the process exit code: 0 ok, 1 failure (message already
 * printed), 2 bad usage. */
#pragma once

int ax_cmd_data(int argc, char **argv); /* data/cmd_data.c */
/* `data dedup` stands on the corpus index, above data: the dispatcher hands its entry point to
 * `axmem data` before running a command */
int ax_cmd_data_dedup(int argc, char **argv);                    /* index/cmd_dedup.c */
void ax_cmd_data_set_dedup(int (*entry)(int argc, char **argv)); /* data/cmd_data.c */
int ax_cmd_train(int argc, char **argv);                         /* train/cmd_train.c */
int ax_cmd_goldfish(int argc, char **argv);                      /* goldfish/cmd_goldfish.c */
int ax_cmd_dp(int argc, char **argv);                            /* train/cmd_dp.c */
int ax_cmd_memscan(int argc, char **argv); /* memscan/cmd_memscan.c: the scans */
/* memscan's corpus-index subcommands */
int ax_cmd_memscan_index(int argc, char **argv);  /* index/cmd_index.c */
int ax_cmd_memscan_info(int argc, char **argv);   /* index/cmd_index.c */
int ax_cmd_memscan_lookup(int argc, char **argv); /* index/cmd_lookup.c */
int ax_cmd_report(int argc, char **argv);         /* reports/cmd_report.c */
int ax_cmd_model(int argc, char **argv);          /* interop/cmd_model.c */
int ax_cmd_plan(int argc, char **argv);           /* plan/cmd_plan.c */
int ax_cmd_study(int argc, char **argv);          /* study/cmd_study.c */
int ax_cmd_demo(int argc, char **argv);           /* cli/demo.c */
int ax_cmd_version(int argc, char **argv);        /* cli/version.c */
