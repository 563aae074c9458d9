/*
 * The options by which a tool finds a node's store (ft-status, ft-hold):
 * --job NAME, --store DIR, --vnode N, over the FT_* configuration.
 */
#ifndef FT_SCRIPTS_STOREOPT_H
#define FT_SCRIPTS_STOREOPT_H

#include <getopt.h>

#include "runtime/config.h"

/* Entries for getopt_long, to put first in a tool's table. */
#define FT_STOREOPT_OPTIONS                                                    \
  {"job", required_argument, 0, 'j'}, {"store", required_argument, 0, 's'},    \
      {"vnode", required_argument, 0, 'v'}

/* Apply option o (from FT_STOREOPT_OPTIONS) with arg to cfg and *vnode.
 * 0 done, 1 not one of these options, 2 a bad value (one line on stderr,
 * prefixed by prog). */
int ft__storeopt(int o, const char *arg, const char *prog, ft__config_t *cfg,
                 int *vnode);

#endif
