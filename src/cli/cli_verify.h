/*
 * cli_verify.h - `ringkv verify`: check a workload history against what the
 * cluster holds (cli_verify.c).
 */
#ifndef RINGKV_CLI_VERIFY_H
#define RINGKV_CLI_VERIFY_H

/* The verb; argv[0] is "verify".  Exit 0 clean, 1 violations or a node error, 2 usage. */
int cli_verify(int argc, char **argv);

#endif
