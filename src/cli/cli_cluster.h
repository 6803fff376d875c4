/*
 * cli_cluster.h - the `ringkv` verbs that show the cluster as one node
 * sees it, over that node's client port: status (the members and whether
 * the ring has converged), members (the failure detector's view) and ring
 * (the arcs and their preference lists); and those that change it: remove,
 * leave, and transfers, which shows a change under way.  The views themselves are in
 * cli_view.h.
 */
#ifndef RINGKV_CLI_CLUSTER_H
#define RINGKV_CLI_CLUSTER_H

/*
 * The verbs; argv[0] is the verb.  status exits 0 when the ring has
 * converged and every member in it is up, 3 when not, 1 when the node
 * cannot be reached; with --wait converged, 0 once converged, 3 when the
 * time ran out first.
 */
int cli_cluster_status(int argc, char **argv);
int cli_cluster_members(int argc, char **argv);
int cli_cluster_ring(int argc, char **argv);
/* remove ID: exits 0 once the node has written the removal, 1 when it refuses (why on stderr). */
int cli_cluster_remove(int argc, char **argv);
/*
 * leave [NODE]: RINGKV LEAVE at the node asked, or at NODE's client
 * address as the node asked announces it.  Exits 0 once the node has
 * started leaving, 1 when NODE is unknown, left, removed, down or
 * unreachable, or the node refuses (why on stderr).
 */
int cli_cluster_leave(int argc, char **argv);
int cli_cluster_tokens(int argc, char **argv);
/*
 * transfers: the node's ownership handoff (RINGKV TRANSFERS), exit 0.
 * With --watch [SECONDS], a frame a second until no change is under way
 * (0), or SECONDS have passed first (3); 1 when the node cannot be asked.
 */
int cli_cluster_transfers(int argc, char **argv);

#endif
