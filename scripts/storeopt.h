/*
 * The options by which a tool finds a node's store (ft-status, ft-hold):
 * --job NAME, --store DIR, --vnode N, over the FT_* configuration.
 */
#ifndef FT_SCRIPTS_STOREOPT_H
#define FT_SCRIPTS_STOREOPT_H

#include <getopt.h>

#include "runtime/config.h"
#include "snapshot/store.h"

/* Entries for getopt_long, to put first in a tool's table. */
#define FT_STOREOPT_OPTIONS                                                    \
  {"job", required_argument, 0, 'j'}, {"store", required_argument, 0, 's'},    \
      {"vnode", required_argument, 0, 'v'}

/* Apply option o (from FT_STOREOPT_OPTIONS) with arg to cfg and *vnode.
 * 0 done, 1 not one of these options, 2 a bad value (one line on stderr,
 * prefixed by prog). */
int ft__storeopt(int o, const char *arg, const char *prog, ft__config_t *cfg,
                 int *vnode);

/* Open the store of cfg's job on this node (virtual node vnode, -1 for
 * none) into d, checked as every process of the job checks it
 * (ft__store_open_dir; nothing is made): FT_OK, FT_ENOENT when there is
 * none, FT_ECONFIG when it is refused (a symbolic link on the way, or a
 * directory from the root down that is not this user's or is writable by
 * group or others: msg says which and how to fix it), or another status
 * with msg.  The tool reads nothing of a store refused. */
int ft__storeopt_open(const ft__config_t *cfg, int vnode, ft__dir_t *d,
                      char *msg, size_t msglen);

#endif
